package pprofhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProfiles(t *testing.T) {
	mux := http.NewServeMux()
	Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for path, want := range map[string]string{
		"/debug/pprof/":                    "goroutine",
		"/debug/pprof/goroutine?debug=1":   "goroutine profile:",
		"/debug/pprof/profile?seconds=0.1": "",
		"/debug/pprof/trace?seconds=0.1":   "go 1.",
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, %d bytes, want %q in them", path, resp.Status, len(body), want)
		}
	}
	resp, err := http.Get(srv.URL + "/debug/pprof/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET an unknown profile: %s, want 404", resp.Status)
	}
	if _, pattern := http.DefaultServeMux.Handler(httptest.NewRequest("GET", "/debug/pprof/", nil)); pattern != "" {
		t.Errorf("the default mux serves %s", pattern)
	}
}
