package tcpstore_test

import (
	"testing"

	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/storetest"
	"github.com/gocomms/gocomms/store/tcpstore"
)

// TestConformance runs the store suite on a Client of a Server, in each
// dialect; the 1.x run covers the client's emulation of APPEND, MULTI_GET
// and MULTI_SET, and the server's 1.x numbering.
func TestConformance(t *testing.T) {
	for _, v := range []tcpstore.Version{tcpstore.Version1, tcpstore.Version2} {
		t.Run(v.String(), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				srv := startServer(t)
				c := dial(t, srv.Addr().String(), tcpstore.WithVersion(v))
				if c.Version() != v {
					t.Fatalf("Version() = %v, want %v", c.Version(), v)
				}
				return c
			})
		})
	}
}
