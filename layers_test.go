package gocomms_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLayers guards the deterministic core: algorithms imports neither
// time, sync (but for sync/atomic, which publishes the table of schedules
// Register adds to), net, randomness nor protoactor; nothing under actors
// imports net; only actors/real.go may import math/rand. rdma sits beside
// transport, under the engine: it imports none of the project but its own
// verbs layer, and no module outside the standard library.
func TestLayers(t *testing.T) {
	rules := []struct {
		dir       string
		forbidden []string
		allowed   []string
	}{
		{"algorithms", []string{"time", "sync", "net", "math/rand", "math/rand/v2", "github.com/asynkron/protoactor-go"}, []string{"sync/atomic"}},
		{"actors", []string{"net", "math/rand"}, nil},
		{"tensor", []string{"github.com/gocomms/gocomms"}, nil},
		{"reduce", []string{"github.com/gocomms/gocomms/actors", "github.com/gocomms/gocomms/algorithms"}, nil},
		{"rdma", []string{"github.com", "golang.org", "pgregory.net"}, []string{"github.com/gocomms/gocomms/rdma/verbs"}},
	}
	for _, rule := range rules {
		err := filepath.WalkDir(rule.dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "test/") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range rule.forbidden {
					if p != bad && !strings.HasPrefix(p, bad+"/") || slices.Contains(rule.allowed, p) {
						continue
					}
					if imp.Comment != nil && strings.Contains(imp.Comment.Text(), "nondeterministic:") {
						continue // the real runtime, marked
					}
					t.Errorf("%s imports %s", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
