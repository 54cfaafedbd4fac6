// Package sweep holds what commnode bench and commnode rma share about a
// sweep of sizes: the sizes themselves and the checks of the flags that
// set them (-b, -e, -f, -n, -w).
package sweep
