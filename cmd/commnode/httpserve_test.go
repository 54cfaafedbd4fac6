package main

import "testing"

func TestHTTPAddr(t *testing.T) {
	for _, c := range []struct {
		addr  string
		local int
		want  string
	}{
		{"127.0.0.1:9100", 0, "127.0.0.1:9100"},
		{"127.0.0.1:9100", 3, "127.0.0.1:9103"},
		{":9100", -1, ":9100"}, // a launcher without local ranks
		{"[::1]:0", 5, "[::1]:0"},
	} {
		if got, err := httpAddr(c.addr, c.local); err != nil || got != c.want {
			t.Errorf("httpAddr(%q, %d) = %q, %v; want %q", c.addr, c.local, got, err, c.want)
		}
	}
	for _, bad := range []string{"9100", "host:port", "h:65535"} {
		if got, err := httpAddr(bad, 1); err == nil {
			t.Errorf("httpAddr(%q, 1) = %q, want an error", bad, got)
		}
	}
}
