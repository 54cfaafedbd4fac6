// Command service runs replicas of an HTTP service, each with its own
// server, that share a communicator: every replica counts the requests
// it serves, and GET /stats on any of them answers the total over all
// replicas, which every replica all-reduces in a background loop.
//
// It starts the replicas, prints their addresses, sends them requests
// itself, prints what each replica's /stats says, and stops them.
//
//	go run ./examples/service
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/gocomms/gocomms"
)

func main() {
	o := defaults
	flag.IntVar(&o.replicas, "replicas", o.replicas, "replicas of the service")
	flag.IntVar(&o.requests, "requests", o.requests, "requests to send them, round robin")
	flag.DurationVar(&o.every, "every", o.every, "how often the replicas all-reduce their counts")
	flag.Parse()
	if _, err := serve(context.Background(), os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type options struct {
	replicas int
	requests int
	every    time.Duration
}

var defaults = options{replicas: 3, requests: 20, every: 100 * time.Millisecond}

// stats is what GET /stats answers.
type stats struct {
	Replica int   `json:"replica"`
	Served  int64 `json:"served"` // requests this replica served
	Total   int64 `json:"total"`  // requests every replica served, as of the last all-reduce
}

// service is a run's replicas and what they tell the driver.
type service struct {
	o     options
	urls  chan replicaURL // each replica's, once it listens
	leave chan struct{}   // closed when the replicas are to stop
}

type replicaURL struct {
	rank int
	url  string
}

// serve runs o.replicas replicas, drives them, and returns what each
// replica's /stats said once every one counted every request.
func serve(ctx context.Context, w io.Writer, o options) ([]stats, error) {
	s := &service{o: o, urls: make(chan replicaURL, o.replicas), leave: make(chan struct{})}
	var runErr error
	ended := make(chan struct{})
	go func() {
		runErr = gocomms.RunLocal(ctx, o.replicas, s.replica)
		close(ended)
	}()
	seen, err := s.drive(ctx, w, ended)
	close(s.leave)
	<-ended
	return seen, errors.Join(err, runErr)
}

// replica serves HTTP on a port of its own and, every o.every, adds up
// the replicas' counts with the others.
func (s *service) replica(ctx context.Context, c *gocomms.Comm) error {
	var served, total atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		fmt.Fprintf(w, "hello from replica %d\n", c.Rank())
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(stats{Replica: c.Rank(), Served: served.Load(), Total: total.Load()})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Shutdown(context.WithoutCancel(ctx))
	s.urls <- replicaURL{c.Rank(), "http://" + ln.Addr().String()}

	tick := time.NewTicker(s.o.every)
	defer tick.Stop()
	for {
		// Collectives must be issued by every rank in the same order: each
		// replica all-reduces once a round, and whether to stop is voted
		// in the same all-reduce, so that all stop after the same round.
		v := []int64{served.Load(), 0}
		select {
		case <-tick.C:
		case <-s.leave:
			v[1] = 1
		}
		if err := c.AllReduce(ctx, gocomms.FromSlice(v), gocomms.Sum); err != nil {
			return err
		}
		total.Store(v[0])
		if v[1] > 0 {
			return nil
		}
	}
}

// drive waits for the replicas' addresses, sends them o.requests requests
// round robin, and asks each for /stats until it counts them all.
func (s *service) drive(ctx context.Context, w io.Writer, ended <-chan struct{}) ([]stats, error) {
	urls := make([]string, s.o.replicas)
	for range s.o.replicas {
		select {
		case u := <-s.urls:
			urls[u.rank] = u.url
		case <-ended:
			return nil, errors.New("the replicas ended before all were listening")
		}
	}
	for r, u := range urls {
		fmt.Fprintf(w, "replica %d listening on %s\n", r, u)
	}
	for i := range s.o.requests {
		if err := get(ctx, urls[i%len(urls)]+"/hello", nil); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(w, "sent %d requests\n", s.o.requests)
	seen := make([]stats, len(urls))
	deadline := time.Now().Add(5 * time.Second)
	for r, u := range urls {
		// The latest all-reduce may have been before the last requests:
		// the one after counts them.
		for {
			if err := get(ctx, u+"/stats", &seen[r]); err != nil {
				return nil, err
			}
			if seen[r].Total == int64(s.o.requests) {
				break
			}
			if time.Now().After(deadline) {
				return seen, fmt.Errorf("replica %d counts %d requests in all, want %d", r, seen[r].Total, s.o.requests)
			}
			time.Sleep(s.o.every / 4)
		}
		fmt.Fprintf(w, "GET %s/stats: served %d here, %d in all\n", u, seen[r].Served, seen[r].Total)
	}
	return seen, nil
}

// get gets url and decodes its JSON body into v, unless v is nil.
func get(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if v == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
