package nccl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestPlaces checks where Locate looks, and in which order, for
// environments and filesystems made up for it.
func TestPlaces(t *testing.T) {
	lib := &fstest.MapFile{Data: []byte("elf")}
	dir := &fstest.MapFile{Mode: os.ModeDir | 0o755}
	fsys := fstest.MapFS{
		"venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2":          lib,
		"conda/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2":         lib,
		"home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2": lib,
		"usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2":     lib,
		"usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2":              lib,
		"usr/lib/python3.9/site-packages/numpy/__init__.py":                       lib,
		"opt/conda/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2":     lib,
		"opt/conda/lib/python3.13/site-packages/nvidia/nccl/lib/libnccl.so.2":     lib,
		"src/py/nvidia/nccl/lib/libnccl.so.2":                                     lib,
		"work/rel/nvidia/nccl/lib/libnccl.so.2":                                   lib,
		"odd[1]/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2":        lib,
		"odd1/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2":          lib,
		"empty/lib/python3.12/site-packages":                                      dir,
	}
	sys := []string{
		"/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2 (/usr/local)",
		"/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2 (/usr)",
		"/opt/conda/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 (/opt/conda)",
		"/opt/conda/lib/python3.13/site-packages/nvidia/nccl/lib/libnccl.so.2 (/opt/conda)",
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string // the files tried, each with what named it
	}{
		{"nothing set", nil, append([]string{"libnccl.so.2 (" + loaderPath + ")"}, sys...)},
		{"GOCOMMS_NCCL_LIBRARY, and nothing else", map[string]string{
			"GOCOMMS_NCCL_LIBRARY": "/x/libnccl.so.2", "NCCL_LIBRARY": "/y/libnccl.so.2", "VIRTUAL_ENV": "/venv",
		}, []string{"/x/libnccl.so.2 ($GOCOMMS_NCCL_LIBRARY)"}},
		{"NCCL_LIBRARY", map[string]string{"GOCOMMS_NCCL_LIBRARY": "", "NCCL_LIBRARY": "/y/libnccl.so.2"},
			[]string{"/y/libnccl.so.2 ($NCCL_LIBRARY)"}},
		{"every variable, in order", map[string]string{
			"VIRTUAL_ENV": "/venv", "CONDA_PREFIX": "/conda/", "PYTHONPATH": "/src/py::rel:/nowhere", "HOME": "/home/u",
		}, append([]string{
			"libnccl.so.2 (" + loaderPath + ")",
			"/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 ($VIRTUAL_ENV)",
			"/conda/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2 ($CONDA_PREFIX)",
			"/src/py/nvidia/nccl/lib/libnccl.so.2 ($PYTHONPATH)",
			"/work/rel/nvidia/nccl/lib/libnccl.so.2 ($PYTHONPATH)",
			"/home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2 (~/.local)",
		}, sys...)},
		{"a file named twice is tried once", map[string]string{"VIRTUAL_ENV": "/opt/conda", "CONDA_PREFIX": "/opt/conda"},
			[]string{
				"libnccl.so.2 (" + loaderPath + ")",
				"/opt/conda/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 ($VIRTUAL_ENV)",
				"/opt/conda/lib/python3.13/site-packages/nvidia/nccl/lib/libnccl.so.2 ($VIRTUAL_ENV)",
				sys[0], sys[1],
			}},
		{"a directory name is not a pattern", map[string]string{"VIRTUAL_ENV": "/odd[1]"}, append([]string{
			"libnccl.so.2 (" + loaderPath + ")",
			"/odd[1]/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 ($VIRTUAL_ENV)",
		}, sys...)},
		{"a site-packages without NCCL", map[string]string{"VIRTUAL_ENV": "/empty"},
			append([]string{"libnccl.so.2 (" + loaderPath + ")"}, sys...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := places(func(k string) string { return tc.env[k] }, fsys, "/work")
			var got []string
			for _, p := range ps {
				if p.file != "" {
					got = append(got, fmt.Sprintf("%s (%s)", p.file, p.via))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("tried\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

// TestPlacesLooked checks that every place looked at is listed, found or
// not, as the error of a failed search names them.
func TestPlacesLooked(t *testing.T) {
	ps := places(func(k string) string { return map[string]string{"VIRTUAL_ENV": "/venv", "HOME": "/root"}[k] }, fstest.MapFS{}, "/")
	var got []string
	for _, p := range ps {
		got = append(got, p.where)
	}
	want := []string{
		loaderPath,
		"/venv/lib/python3*/site-packages/nvidia/nccl/lib",
		"/root/.local/lib/python3*/site-packages/nvidia/nccl/lib",
		"/usr/local/lib/python3*/site-packages/nvidia/nccl/lib",
		"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib",
		"/usr/lib/python3*/site-packages/nvidia/nccl/lib",
		"/usr/lib/python3*/dist-packages/nvidia/nccl/lib",
		"/opt/conda/lib/python3*/site-packages/nvidia/nccl/lib",
	}
	if !slices.Equal(got, want) {
		t.Errorf("looked in\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestLocateFails checks the errors of a search that loads nothing: every
// place looked, or the variable that named a file that does not load.
func TestLocateFails(t *testing.T) {
	if !haveLoader {
		_, err := locate(nil)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("locate without a loader: %v; want ErrUnavailable", err)
		}
		t.Skip("skip: this build cannot load NCCL at all (no cgo, or not Linux)")
	}
	_, err := locate([]place{
		{via: "$VIRTUAL_ENV", where: "/venv/lib/python3*/site-packages/nvidia/nccl/lib"},
		{via: "~/.local", where: "/absent/libnccl.so.2", file: "/absent/libnccl.so.2"},
	})
	want := "nccl: NCCL not found; looked in: /venv/lib/python3*/site-packages/nvidia/nccl/lib ($VIRTUAL_ENV), " +
		"/absent/libnccl.so.2 (/absent/libnccl.so.2 not found). pip's nvidia-nccl-cu12"
	if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("locate of nothing: %v; want ErrUnavailable starting %q", err, want)
	}
	_, err = locate(places(func(k string) string {
		return map[string]string{"NCCL_LIBRARY": "/absent/libnccl.so.2"}[k]
	}, fstest.MapFS{}, "/"))
	want = "nccl: NCCL_LIBRARY=/absent/libnccl.so.2 does not load: /absent/libnccl.so.2 not found"
	if !errors.Is(err, ErrUnavailable) || err.Error() != want {
		t.Errorf("locate of a variable's missing file: %v; want ErrUnavailable %q", err, want)
	}
}

// locateEnv, set, makes TestLocateChild print what Locate finds, for
// TestLocateSitePackages, which runs it in a process of its own each
// time, as a process loads NCCL once.
const locateEnv = "GOCOMMS_NCCL_TEST_LOCATE"

func TestLocateChild(t *testing.T) {
	if os.Getenv(locateEnv) == "" {
		t.Skip("skip: TestLocateSitePackages runs it")
	}
	f, err := Locate()
	fmt.Printf("located: version=%s path=%s via=%s err=%v\n", f.Version, f.Path, f.Via, err)
}

// TestLocateSitePackages builds the fake libnccl into a virtual
// environment's site-packages, as pip's nvidia-nccl-cu12 lays it out,
// and checks that a process finds it there through $VIRTUAL_ENV and
// through $PYTHONPATH, and through the variables that name the file.
func TestLocateSitePackages(t *testing.T) {
	if !haveLoader {
		t.Skip("skip: this build cannot load NCCL at all (no cgo, or not Linux)")
	}
	venv := t.TempDir()
	site := filepath.Join(venv, "lib", "python3.12", "site-packages")
	libDir := filepath.Join(site, "nvidia", "nccl", "lib")
	if err := os.MkdirAll(libDir, 0o755); err != nil {
		t.Fatal(err)
	}
	buildFake(t, libDir)
	lib := filepath.Join(libDir, LibraryName)
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"VIRTUAL_ENV=" + venv}, "version=2.21.5 path=" + lib + " via=$VIRTUAL_ENV err=<nil>"},
		{[]string{"PYTHONPATH=/nowhere:" + site}, "version=2.21.5 path=" + lib + " via=$PYTHONPATH err=<nil>"},
		{[]string{"GOCOMMS_NCCL_LIBRARY=" + lib}, "version=2.21.5 path=" + lib + " via=$GOCOMMS_NCCL_LIBRARY err=<nil>"},
		{[]string{"NCCL_LIBRARY=" + venv + "/absent.so", "VIRTUAL_ENV=" + venv},
			"err=nccl: NCCL_LIBRARY=" + venv + "/absent.so does not load: " + venv + "/absent.so not found"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLocateChild$", "-test.count=1")
		cmd.Env = append(withoutPython(os.Environ()), append(tc.env, locateEnv+"=1", "HOME="+t.TempDir())...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: child: %v\n%s", tc.env, err, out)
		}
		if strings.Contains(string(out), "via="+loaderPath) {
			t.Skipf("skip: NCCL is on the loader's search path here:\n%s", out)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: the child printed\n%s\nwant %q", tc.env, out, tc.want)
		}
	}
}

// withoutPython drops from env the variables that point Locate somewhere.
func withoutPython(env []string) []string {
	drop := append([]string{"VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "HOME"}, libraryVars...)
	return slices.DeleteFunc(env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(drop, k)
	})
}
