package algorithms

import "math/bits"

// Topology helpers: pure functions of (rank, size) that every rank evaluates
// identically, which is what lets the two ends of a link agree without
// talking.

// RingNext is the rank a ring algorithm sends to.
//
//	0 → 1 → 2 → … → size-1
//	↑                    │
//	└────────────────────┘
func RingNext(rank, size int) int { return (rank + 1) % size }

// RingPrev is the rank a ring algorithm receives from.
func RingPrev(rank, size int) int { return (rank + size - 1) % size }

// mod is the non-negative remainder, for ring arithmetic on rank - k.
func mod(a, n int) int {
	a %= n
	if a < 0 {
		a += n
	}
	return a
}

// Binomial trees are built over virtual ranks v = (rank - root) mod size, so
// that the root is always virtual rank 0. For size 8:
//
//	0 ─┬─ 1
//	   ├─ 2 ── 3
//	   └─ 4 ─┬─ 5
//	         └─ 6 ── 7
//
// The parent of v is v with its lowest set bit cleared; the children of v are
// v+1, v+2, v+4, … below lowbit(v) (below size for the root). The subtree of
// v is the contiguous range [v, v+lowbit(v)) clipped to size, which is what
// lets gather and scatter forward a subtree's blocks as one run.

func virtual(rank, root, size int) int { return mod(rank-root, size) }
func actual(v, root, size int) int     { return (v + root) % size }

// span is the number of virtual ranks in the subtree of v.
func span(v, size int) int {
	if v == 0 {
		return size
	}
	return min(v&-v, size-v)
}

// TreeParent is rank's parent in the binomial tree rooted at root, or -1 for
// the root.
func TreeParent(rank, root, size int) int {
	v := virtual(rank, root, size)
	if v == 0 {
		return -1
	}
	return actual(v&(v-1), root, size)
}

// TreeChildren appends rank's children in the binomial tree rooted at root,
// smallest subtree first (the order in which a reduction hears from them).
func TreeChildren(rank, root, size int, children []int) []int {
	v := virtual(rank, root, size)
	limit := span(v, size)
	for m := 1; m < limit; m <<= 1 {
		children = append(children, actual(v+m, root, size))
	}
	return children
}

// TreeSubtree is the number of ranks in rank's subtree, rank included. They
// are the ranks whose virtual ranks follow rank's consecutively.
func TreeSubtree(rank, root, size int) int {
	return span(virtual(rank, root, size), size)
}

// floorPow2 is the largest power of two not above n (n >= 1).
func floorPow2(n int) int { return 1 << (bits.Len(uint(n)) - 1) }

// Recursive doubling runs among the largest power of two p' <= size ranks,
// 0..p'-1; in round k rank r exchanges with r XOR 2^k. The size-p' extra
// ranks first fold into a partner and get the result back at the end. For
// size 6 (p' = 4):
//
//	fold     4 → 0   5 → 1
//	round 0  0 ↔ 1   2 ↔ 3
//	round 1  0 ↔ 2   1 ↔ 3
//	unfold   0 → 4   1 → 5

// DoublingRounds is the number of exchange rounds, log2 of p'.
func DoublingRounds(size int) int { return bits.Len(uint(size)) - 1 }

// DoublingPartner is rank's partner in round, or -1 for a folded extra rank.
func DoublingPartner(rank, size, round int) int {
	if rank >= floorPow2(size) {
		return -1
	}
	return rank ^ (1 << round)
}

// DoublingFold is the rank that rank folds with before the rounds and unfolds
// with after them, or -1 if it has none.
func DoublingFold(rank, size int) int {
	p := floorPow2(size)
	switch {
	case rank >= p:
		return rank - p
	case rank < size-p:
		return rank + p
	}
	return -1
}

// The dissemination barrier runs ceil(log2 size) rounds; in round k rank r
// notifies r+2^k and hears from r-2^k. After round k every rank has heard,
// transitively, from the 2^(k+1) ranks behind it. For size 5:
//
//	round 0 (+1)  0→1 1→2 2→3 3→4 4→0
//	round 1 (+2)  0→2 1→3 2→4 3→0 4→1
//	round 2 (+4)  0→4 1→0 2→1 3→2 4→3

// DisseminationRounds is ceil(log2 size).
func DisseminationRounds(size int) int { return bits.Len(uint(size - 1)) }

// DisseminationPartners returns whom rank notifies and whom it hears from in
// round.
func DisseminationPartners(rank, size, round int) (to, from int) {
	d := (1 << round) % size
	return (rank + d) % size, mod(rank-d, size)
}
