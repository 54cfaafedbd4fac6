// Package calls writes a collective call the way errors name it, so that
// the engine's mismatch reports and the front's collective checks read
// alike: "broadcast(root 0, 4 float32)", "all_reduce(sum, 8 float64)".
package calls
