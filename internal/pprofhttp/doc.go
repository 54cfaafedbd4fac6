// Package pprofhttp serves the runtime's profiles over HTTP in the format
// of net/http/pprof, which go tool pprof reads, on a mux of the caller's.
// net/http/pprof itself is not imported: its init registers the handlers
// on http.DefaultServeMux, which would expose them on any application
// that imports gocomms and serves the default mux, and make its own
// registration of those paths panic.
package pprofhttp
