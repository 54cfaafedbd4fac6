package pprofhttp

import (
	"fmt"
	"html"
	"net/http"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"time"
)

// Register mounts the profiles on mux under /debug/pprof/: an index, each
// named profile (?debug=N for text), profile (CPU, ?seconds=N, 30 by
// default) and trace (?seconds=N, 1 by default).
func Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/{$}", index)
	mux.HandleFunc("GET /debug/pprof/profile", cpu)
	mux.HandleFunc("GET /debug/pprof/trace", execTrace)
	mux.HandleFunc("GET /debug/pprof/{name}", named)
}

func index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintln(w, "<html><body><h1>/debug/pprof/</h1><ul>")
	for _, p := range pprof.Profiles() {
		n := html.EscapeString(p.Name())
		fmt.Fprintf(w, "<li><a href=\"%s?debug=1\">%s</a> (%d)</li>\n", n, n, p.Count())
	}
	fmt.Fprintln(w, `<li><a href="profile">profile</a> (CPU, ?seconds=30)</li><li><a href="trace">trace</a> (?seconds=1)</li></ul></body></html>`)
}

func named(w http.ResponseWriter, r *http.Request) {
	p := pprof.Lookup(r.PathValue("name"))
	if p == nil {
		http.Error(w, "unknown profile", http.StatusNotFound)
		return
	}
	debug, _ := strconv.Atoi(r.FormValue("debug"))
	if p.Name() == "heap" && r.FormValue("gc") != "" {
		runtime.GC()
	}
	if debug != 0 {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", p.Name()))
	}
	p.WriteTo(w, debug)
}

// seconds is the request's ?seconds, or def.
func seconds(r *http.Request, def time.Duration) (time.Duration, error) {
	v := r.FormValue("seconds")
	if v == "" {
		return def, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s <= 0 {
		return 0, fmt.Errorf("seconds=%q is not a positive number", v)
	}
	return time.Duration(s * float64(time.Second)), nil
}

func cpu(w http.ResponseWriter, r *http.Request) {
	d, err := seconds(r, 30*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := pprof.StartCPUProfile(w); err != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		http.Error(w, "cpu profile: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sleep(r, d)
	pprof.StopCPUProfile()
}

func execTrace(w http.ResponseWriter, r *http.Request) {
	d, err := seconds(r, time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := trace.Start(w); err != nil {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		http.Error(w, "trace: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sleep(r, d)
	trace.Stop()
}

// sleep waits d, or less if the client goes away.
func sleep(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}
