package simulation

import (
	"hash/fnv"
	"testing"
)

func TestNameHashIsFNV1a(t *testing.T) {
	for _, name := range []string{"", "a", "sim/r17/c0/link3"} {
		h := fnv.New64a()
		h.Write([]byte(name))
		if got, want := nameHash(name), h.Sum64(); got != want {
			t.Errorf("nameHash(%q) = %x, want FNV-1a %x", name, got, want)
		}
	}
}
