package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// versionCommand prints the module's version, the VCS revision it was
// built from and the Go version that built it, as the binary records them.
func versionCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("version", "usage: commnode version", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(stderr, "commnode: the binary carries no build information")
		return 1
	}
	fmt.Fprint(stdout, versionText(info))
	return 0
}

// versionText is what version prints of info: the module version
// ("(devel)" for a build inside its own module), the revision and its
// time, a mark if the tree had changes, and the Go version.
func versionText(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev := settings["vcs.revision"]
	if rev == "" {
		rev = "unknown"
	}
	if settings["vcs.modified"] == "true" {
		rev += " (modified)"
	}
	if t := settings["vcs.time"]; t != "" {
		rev += " " + t
	}
	return fmt.Sprintf("module   %s %s\nrevision %s\ngo       %s\n", info.Main.Path, info.Main.Version, rev, info.GoVersion)
}
