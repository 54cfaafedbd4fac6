package gocomms

import (
	"runtime"
	"testing"
	"time"
)

// TestMembershipIsSharedAndForgotten: survivors of one shrink in one
// process get one membership; another failed set, size or parent gets
// its own; and once no survivor holds it, its entry goes.
func TestMembershipIsSharedAndForgotten(t *testing.T) {
	made := 0
	build := func() *membership { made++; return &membership{group: []int{0, 2}} }
	key := membershipKey{name: "job.shrink0", size: 3, failed: "[1]"}
	a := membershipOf(key, build)
	if b := membershipOf(key, build); b != a || made != 1 {
		t.Fatalf("the same shrink made %d memberships", made)
	}
	parent := []int{4, 5, 6}
	for _, other := range []membershipKey{
		{name: key.name, size: 3, failed: "[2]"},
		{name: key.name, size: 4, failed: "[1]"},
		{name: key.name, size: 3, failed: "[1]", parent: &parent[0]},
	} {
		if membershipOf(other, build) == a {
			t.Errorf("%+v shares %+v's membership", other, key)
		}
	}
	runtime.KeepAlive(a) // the last survivor lets go here
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		memberships.Lock()
		_, held := memberships.m[key]
		memberships.Unlock()
		if !held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the membership's entry outlived every survivor")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
