package bench

import (
	"runtime/debug"
	"testing"
)

// TestMainVersion: a build in a checkout names its commit, and whether
// the tree had changes; one without version control, only its version.
func TestMainVersion(t *testing.T) {
	for _, c := range []struct {
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"", nil, "(devel)"},
		{"v1.2.3", nil, "v1.2.3"},
		{"v1.2.3", []debug.BuildSetting{{Key: "vcs.revision", Value: "3f2a"}, {Key: "vcs.modified", Value: "false"}}, "v1.2.3 (revision 3f2a)"},
		{"", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "3f2a"}}, "(devel) (revision 3f2a, modified)"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Path: module, Version: c.version}, Settings: c.settings}
		if got := mainVersion(bi); got != c.want {
			t.Errorf("%q with %v: %q, want %q", c.version, c.settings, got, c.want)
		}
	}
}
