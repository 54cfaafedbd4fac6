package gocomms_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gocomms/gocomms"

// namesPkg is the leaf every package may import.
const namesPkg = module + "/internal/names"

// TestLayers guards the layers. algorithms imports neither time, sync
// (but for sync/atomic, whose pointer swap publishes a registry's table),
// net, randomness nor protoactor; nothing under actors imports net; only
// actors/real.go may import math/rand. rdma sits beside transport, under
// the engine: it imports none of the project but its own verbs layer,
// and no module outside the standard library. backend owns the
// contract's vocabulary, the window operations' included, which the
// window actor speaks: it imports no actor (but for the runtime the
// native engine is handed). metrics reads the links' counters through a
// function, and imports no actor; flight, the flight recorder's storage,
// imports nothing of the project but the contract and its errors, and
// health, the HTTP view, nothing but flight and the profiles: each reads
// the communicator through an interface of its own. nvl,
// the host's shared memory, imports nothing of the GPUs (its device half
// is devcomm's). No two top-level folders import each other, directly or
// through others. Any package may import internal/names, the enums'
// String methods, which imports nothing of the project.
//
// The root package is the API alone: it reaches the engine only to
// register it and to apply a window's operations on mapped memory
// (engine.ApplyDirect), and imports no actor, no transport or store
// implementation, and not protoactor, whose types it never names; the
// seams' interface packages (actors, transport, store) it may. protoactor
// is the actors', the engine's and the simulator's. The simulator builds
// its ranks through the root package, and never an actor's request by
// hand.
func TestLayers(t *testing.T) {
	rules := []struct {
		dir       string
		forbidden []string
		allowed   []string
	}{
		{"algorithms", []string{"time", "sync", "net", "math/rand", "math/rand/v2", "github.com/asynkron/protoactor-go"}, []string{"sync/atomic"}},
		{"actors", []string{"net", "math/rand"}, nil},
		{"tensor", []string{module}, nil},
		{"reduce", []string{module + "/actors", module + "/algorithms"}, nil},
		{"rdma", []string{"github.com", "golang.org", "pgregory.net"}, []string{module + "/rdma/verbs", module + "/internal/errkind"}},
		{".", []string{module + "/actors", module + "/transport", module + "/store/bootstrap", "github.com/asynkron/protoactor-go"},
			[]string{module + "/actors", module + "/transport", module + "/store"}},
		{"backend", []string{module + "/engine", module + "/actors/", module + "/transport/", module + "/store/", "github.com/asynkron/protoactor-go"}, nil},
		{"simulation", []string{module + "/actors/collective", module + "/actors/rank"}, nil},
		{"metrics", []string{module + "/actors"}, nil},
		{"nvl", []string{module + "/gpu"}, nil},
		{"flight", []string{module}, []string{module + "/backend", module + "/commerr"}},
		{"health", []string{module}, []string{module + "/flight", module + "/internal/pprofhttp"}},
		{"internal/names", []string{module}, nil},
	}
	for _, rule := range rules {
		for path, imps := range imports(t, rule.dir) {
			for _, imp := range imps {
				for _, bad := range rule.forbidden {
					if imp.path != bad && !strings.HasPrefix(imp.path, strings.TrimSuffix(bad, "/")+"/") || slices.Contains(rule.allowed, imp.path) || imp.path == namesPkg {
						continue
					}
					if imp.marked {
						continue // the real runtime, marked nondeterministic
					}
					t.Errorf("%s imports %s", path, imp.path)
				}
			}
		}
	}
	for path, imps := range imports(t, "") {
		owner := strings.SplitN(filepath.ToSlash(path), "/", 2)[0]
		for _, imp := range imps {
			if strings.HasPrefix(imp.path, "github.com/asynkron/protoactor-go") && owner != "actors" && owner != "engine" && owner != "simulation" {
				t.Errorf("%s imports %s: protoactor is the actors', the engine's and the simulator's", path, imp.path)
			}
		}
	}
	if !slices.ContainsFunc(imports(t, "simulation")["simulation/run.go"], func(i goImport) bool { return i.path == module }) {
		t.Error("simulation/run.go does not build its ranks through the root package")
	}
	if loop := folderLoop(t); loop != nil {
		t.Errorf("the top-level folders import each other in a loop: %s", strings.Join(loop, " -> "))
	}
}

// folderLoop returns a loop of imports among the module's top-level
// folders (the root package aside, which imports what it offers), or
// nil: each folder is a layer, above or below each other one.
func folderLoop(t *testing.T) []string {
	folder := func(p string) string { return strings.SplitN(filepath.ToSlash(p), "/", 2)[0] }
	edges := map[string][]string{}
	for path, imps := range imports(t, "") {
		from := folder(path)
		if !strings.Contains(filepath.ToSlash(path), "/") || from == "cmd" || from == "examples" {
			continue
		}
		for _, imp := range imps {
			rest, ok := strings.CutPrefix(imp.path, module+"/")
			if to := folder(rest); ok && to != from && !slices.Contains(edges[from], to) {
				edges[from] = append(edges[from], to)
			}
		}
	}
	state := map[string]int{} // 1: on the path walked, 2: done
	var path []string
	var walk func(string) []string
	walk = func(f string) []string {
		state[f] = 1
		path = append(path, f)
		for _, to := range edges[f] {
			switch state[to] {
			case 1:
				return append(slices.Clone(path[slices.Index(path, to):]), to)
			case 0:
				if loop := walk(to); loop != nil {
					return loop
				}
			}
		}
		path = path[:len(path)-1]
		state[f] = 2
		return nil
	}
	folders := slices.Sorted(maps.Keys(edges))
	for _, f := range folders {
		if state[f] == 0 {
			if loop := walk(f); loop != nil {
				return loop
			}
		}
	}
	return nil
}

type goImport struct {
	path   string
	marked bool // commented "nondeterministic:"
}

// imports returns the imports of every production file under dir ("":
// the whole module); "." is the root package alone.
func imports(t *testing.T, dir string) map[string][]goImport {
	t.Helper()
	all := map[string][]goImport{}
	root := dir
	if root == "" {
		root = "."
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if dir == "." && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, "test/") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			marked := imp.Comment != nil && strings.Contains(imp.Comment.Text(), "nondeterministic:")
			all[path] = append(all[path], goImport{p, marked})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}
