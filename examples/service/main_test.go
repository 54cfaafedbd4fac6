package main

import (
	"context"
	"testing"
	"time"
)

// TestStatsCountEveryRequest runs the example: every replica's /stats
// answers the number of requests sent, over all replicas, and the
// replicas' own counts add up to it.
func TestStatsCountEveryRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := defaults
	o.requests = 50
	seen, err := serve(ctx, t.Output(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != o.replicas {
		t.Fatalf("stats of %d replicas, want %d", len(seen), o.replicas)
	}
	var served int64
	for r, st := range seen {
		if st.Replica != r || st.Total != int64(o.requests) {
			t.Errorf("replica %d's /stats: %+v, want replica %d and total %d", r, st, r, o.requests)
		}
		served += st.Served
	}
	if served != int64(o.requests) {
		t.Errorf("the replicas served %d requests between them, want %d", served, o.requests)
	}
}
