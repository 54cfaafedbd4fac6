package nccl

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/gocomms/gocomms/internal/errkind"
)

// libraryVars name the file to load instead of searching, in the order
// Locate reads them.
var libraryVars = []string{"GOCOMMS_NCCL_LIBRARY", "NCCL_LIBRARY"}

// loaderPath is how Found and errors call the dynamic loader's search
// (LD_LIBRARY_PATH, ld.so.cache, the system directories).
const loaderPath = "the loader's search path"

// wheelLib is where pip's nvidia-nccl-cu12 (or nvidia-nccl) wheel puts
// NCCL inside a site-packages directory.
const wheelLib = "nvidia/nccl/lib/" + LibraryName

// Found is the NCCL this process loaded.
type Found struct {
	Version string // as "2.21.5"
	Path    string // the file, as the loader opened it
	Via     string // what led to it: "$GOCOMMS_NCCL_LIBRARY", "the loader's search path", "$VIRTUAL_ENV", ...
}

// located loads NCCL once per process: a bound library is never unloaded,
// so a second search could only find a different one it would not use.
var located = sync.OnceValues(func() (Found, error) {
	cwd, _ := os.Getwd()
	return locate(places(os.Getenv, os.DirFS("/"), cwd))
})

// Locate loads NCCL, once per process, and says which it loaded. It
// looks, in order, at the file $GOCOMMS_NCCL_LIBRARY or else
// $NCCL_LIBRARY names, and only there if one is set; otherwise at the
// loader's search path (libnccl.so.2 by its soname), then at
// nvidia/nccl/lib/libnccl.so.2 in the site-packages of Python
// installations: those of $VIRTUAL_ENV and $CONDA_PREFIX, each entry of
// $PYTHONPATH, ~/.local, /usr/local, /usr and /opt/conda (python3* in
// each). Where none loads, the error matches ErrUnavailable and lists
// every place looked, with why each failed.
func Locate() (Found, error) { return located() }

// place is somewhere Locate looks for NCCL.
type place struct {
	via   string // what names it, as Found.Via
	where string // for the error: a directory, a glob of them, or the file
	file  string // what to load: a path, LibraryName alone for the loader's search, "" where nothing is there
	set   bool   // a variable names it: its failure to load is the answer
}

// places lists where to look for NCCL, in order, reading the environment
// through getenv and the filesystem as fsys, its root "/"; relative
// entries of $PYTHONPATH are taken from cwd.
func places(getenv func(string) string, fsys fs.FS, cwd string) []place {
	for _, v := range libraryVars {
		if f := getenv(v); f != "" {
			return []place{{via: "$" + v, where: f, file: f, set: true}}
		}
	}
	ps := []place{{via: loaderPath, where: loaderPath, file: LibraryName}}
	seen := map[string]bool{}
	for _, s := range pythonSites(getenv, cwd) {
		found := false
		matches, _ := fs.Glob(fsys, strings.TrimPrefix(s.glob, "/")) // escaped, so well formed
		for _, m := range matches {
			file := "/" + m + "/" + wheelLib
			if _, err := fs.Stat(fsys, m+"/"+wheelLib); err == nil && !seen[file] {
				seen[file], found = true, true
				ps = append(ps, place{via: s.via, where: file, file: file})
			}
		}
		if !found {
			ps = append(ps, place{via: s.via, where: s.glob + "/" + path.Dir(wheelLib)})
		}
	}
	return ps
}

// site is a glob of site-packages directories, and what names it.
type site struct{ via, glob string }

// pythonSites returns the site-packages directories pip installs into,
// as absolute globs, for every Python installation Locate knows of.
func pythonSites(getenv func(string) string, cwd string) []site {
	var sites []site
	add := func(via, dir, under string) {
		if dir == "" {
			return
		}
		if !path.IsAbs(dir) {
			dir = path.Join(cwd, dir)
		}
		sites = append(sites, site{via, escapeGlob(path.Clean(dir)) + under})
	}
	const venv = "/lib/python3*/site-packages"
	add("$VIRTUAL_ENV", getenv("VIRTUAL_ENV"), venv)
	add("$CONDA_PREFIX", getenv("CONDA_PREFIX"), venv)
	for _, dir := range strings.Split(getenv("PYTHONPATH"), ":") {
		add("$PYTHONPATH", dir, "")
	}
	add("~/.local", path.Join(getenv("HOME"), ".local"), venv)
	for _, prefix := range []string{"/usr/local", "/usr"} {
		add(prefix, prefix, venv)
		add(prefix, prefix, "/lib/python3*/dist-packages") // Debian's and Ubuntu's
	}
	add("/opt/conda", "/opt/conda", venv)
	return sites
}

// escapeGlob quotes the characters of a directory name that fs.Glob
// would read as a pattern.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// locate loads the first of ps that loads.
func locate(ps []place) (Found, error) {
	if !haveLoader {
		return Found{}, sysLoad(LibraryName) // which says why this build cannot
	}
	looked := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.file == "" {
			looked = append(looked, lookedIn(p))
			continue
		}
		err := load(p.file)
		if err == nil {
			return Found{Version: version(), Path: loadedPath(p.file), Via: p.via}, nil
		}
		if p.set {
			return Found{}, errkind.Of(fmt.Sprintf("nccl: %s=%s does not load: %v", strings.TrimPrefix(p.via, "$"), p.file, err), ErrUnavailable, nil)
		}
		looked = append(looked, fmt.Sprintf("%s (%v)", p.where, err))
	}
	return Found{}, errkind.Of(fmt.Sprintf("nccl: NCCL not found; looked in: %s. pip's nvidia-nccl-cu12 or the "+
		"libnccl2 package provide it; %s may name the file", strings.Join(looked, ", "), libraryVars[0]), ErrUnavailable, nil)
}

// lookedIn names a place where nothing was found, with the variable
// that named it where its path does not say.
func lookedIn(p place) string {
	if strings.HasPrefix(p.where, p.via) {
		return p.where
	}
	return fmt.Sprintf("%s (%s)", p.where, p.via)
}

// version returns the loaded NCCL's version, as "2.21.5".
func version() string {
	v := sysVersion()
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// loadedPath is the file the loader opened for name, or name where it
// cannot say.
func loadedPath(name string) string {
	if p := sysPath(); p != "" {
		return p
	}
	return name
}
