package health

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/flight"
)

// comm is a communicator in whatever state a test sets.
type comm struct {
	initialized, aborted, finalized bool
	entries                         []flight.Entry
}

func (c *comm) Name() string                 { return "c" }
func (c *comm) Rank() int                    { return 1 }
func (c *comm) IsInitialized() bool          { return c.initialized }
func (c *comm) IsAborted() bool              { return c.aborted }
func (c *comm) Finalized() bool              { return c.finalized }
func (c *comm) FlightRecord() []flight.Entry { return c.entries }
func (c *comm) DumpFlightRecord(w io.Writer) error {
	return flight.WriteDump(w, flight.Dump{Comm: "c", Entries: c.entries})
}

func get(h http.Handler, path string) (int, string, http.Header) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String(), rec.Header()
}

// TestReadiness says why a communicator is unready, the oldest stuck
// operation named first.
func TestReadiness(t *testing.T) {
	long := time.Now().Add(-time.Hour)
	for _, c := range []struct {
		comm comm
		want []string // what the 503's body says, in order; none: ready
	}{
		{comm{}, []string{"not initialized"}},
		{comm{initialized: true, aborted: true}, []string{"aborted"}},
		{comm{initialized: true, finalized: true}, []string{"finalized"}},
		{comm{initialized: true, entries: []flight.Entry{{Op: "barrier", State: flight.Completed, Issued: long}}}, nil},
		{comm{initialized: true, entries: []flight.Entry{
			{Op: "barrier", State: flight.Completed, Issued: long},
			{Op: "all_reduce", Seq: 4, ID: 9, State: flight.Started, Issued: long},
			{Op: "send", State: flight.Issued, Issued: long},
			{Op: "recv", State: flight.Issued, Issued: time.Now()},
		}}, []string{`comm "c" rank 1: all_reduce #4 (op_id 9, started) in flight for 1h`, "; 1 more operations in flight behind it\n"}},
	} {
		h := Handler(&c.comm, Config{StuckAfter: time.Minute})
		code, body, _ := get(h, "/readyz")
		switch {
		case c.want == nil && (code != http.StatusOK || body != "ready\n"):
			t.Errorf("%+v: %d %q, want ready", c.comm, code, body)
		case c.want != nil && (code != http.StatusServiceUnavailable || !says(body, c.want)):
			t.Errorf("%+v: %d %q, want 503 %q", c.comm, code, body, c.want)
		}
	}
}

// says reports whether body is parts, in order, with anything between.
func says(body string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(body, p)
		if i < 0 {
			return false
		}
		body = body[i+len(p):]
	}
	return true
}

func TestRoutes(t *testing.T) {
	h := Handler(&comm{initialized: true}, Config{})
	if code, body, _ := get(h, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body, hdr := get(h, "/debug/flight"); code != http.StatusOK || hdr.Get("Content-Type") != "application/json" || !bytes.Contains([]byte(body), []byte(`"comm":"c"`)) {
		t.Errorf("/debug/flight: %d %s %q", code, hdr.Get("Content-Type"), body)
	}
	if code, _, _ := get(h, "/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics with no gatherer: %d, want 404", code)
	}
}
