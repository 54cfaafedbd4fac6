package gocomms

import (
	"runtime"
	"sync"
	"weak"
)

// membership is what every survivor of one shrink derives alike from
// the ranks that failed: the survivors, in the old communicator's ranks
// (group, ascending) and in the global ones (ranks), and the exchange's
// answer (the new communicator's id at each survivor's index). Survivors
// that one process runs share one: a simulation runs them all, and would
// otherwise build copies the size of the communicator for every rank.
type membership struct {
	group, ranks []int
	all          [][]byte
}

// membershipKey names a shrink: the new communicator's membership name,
// the old one's size and global ranks (the first's address: survivors of
// one communicator share them, and a world has none), and the ranks that
// failed. Equal keys give equal memberships, even from unrelated
// communicators (a sweep runs simulations side by side).
type membershipKey struct {
	name   string
	size   int
	parent *int
	failed string
}

// memberships holds the membership of each shrink under way, weakly:
// the survivors that shrink between two collections share one, and the
// new communicators keep only its global ranks.
var memberships = struct {
	sync.Mutex
	m map[membershipKey]weak.Pointer[membership]
}{m: map[membershipKey]weak.Pointer[membership]{}}

// membershipOf returns the membership of the shrink key names, made by
// build if no survivor in this process holds it.
func membershipOf(key membershipKey, build func() *membership) *membership {
	memberships.Lock()
	defer memberships.Unlock()
	if m := memberships.m[key].Value(); m != nil {
		return m
	}
	m := build()
	memberships.m[key] = weak.Make(m)
	runtime.AddCleanup(m, forgetMembership, key)
	return m
}

// forgetMembership drops key's entry once its membership is gone, unless
// a later one took its place.
func forgetMembership(key membershipKey) {
	memberships.Lock()
	defer memberships.Unlock()
	if wp, ok := memberships.m[key]; ok && wp.Value() == nil {
		delete(memberships.m, key)
	}
}
