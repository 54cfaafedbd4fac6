package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/launcher"
)

// newRegistry is the registry --http serves: gocomms' collectors, which
// WithMetrics adds, and the Go runtime's and the process's.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// httpAddr is where this rank serves --http addr: its port plus the
// rank's local rank, so that the ranks of a host given one address do not
// collide; port 0 stays 0, a free port.
func httpAddr(addr string, localRank int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--http %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("--http %q: the port is no number of a port", addr)
	}
	if p != 0 {
		p += max(localRank, 0)
	}
	if p > 65535 {
		return "", fmt.Errorf("--http %q: port %d of local rank %d is out of range", addr, p, localRank)
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// serveHTTP serves gocomms.Handler of c at --http's address for the rest
// of the process's life, and says where on stderr.
func (j *jobFlags) serveHTTP(c *gocomms.Comm, reg *prometheus.Registry, stderr io.Writer) error {
	env, err := launcher.FromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	addr, err := httpAddr(j.http, env.LocalRank)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	fmt.Fprintf(stderr, "commnode: rank %d serves http://%s/ (metrics, healthz, readyz, debug/flight, debug/pprof)\n", c.Rank(), l.Addr())
	srv := &http.Server{Handler: gocomms.Handler(c, gocomms.StuckAfter(j.stuckAfter)), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "commnode: --http:", err)
		}
	}()
	return nil
}
