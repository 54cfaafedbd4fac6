package rdma

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports guards this package's place in the layers: it sits beside
// transport and under the engine, so it imports the standard library
// and its own bindings to libibverbs only, and least of all transport,
// actors or the root package.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") && p != "github.com/gocomms/gocomms/rdma/verbs" {
				t.Errorf("%s imports %s: only the standard library and rdma/verbs are allowed here", f, p)
			}
		}
	}
}
