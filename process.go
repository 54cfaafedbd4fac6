package gocomms

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/bootstrap"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
)

// What a communicator uses when its options name no store or network: the
// process's connection to the job's store and its TCP network, shared by
// every communicator of the process.

// envStore connects to the store the launcher's environment names, rank 0
// hosting it unless the launcher does.
func envStore(ctx context.Context, rank int, timeout time.Duration) (store.Store, error) {
	addr, agent, err := bootstrap.StoreFromEnv(os.LookupEnv)
	if err != nil {
		return nil, commerr.Invalid("%v", err)
	}
	st, err := bootstrap.Shared(ctx, addr, rank == 0 && !agent, timeout)
	if err != nil && rank != 0 && !agent {
		return nil, fmt.Errorf("%w (rank 0 serves the store: has it started?)", err)
	}
	return st, err
}

var processNetwork = sync.OnceValues(func() (transport.Network, error) {
	var opts []tcp.Option
	if v, ok := os.LookupEnv("GOCOMMS_PORT_RANGE"); ok {
		lo, hi, err := tcp.ParsePortRange(v)
		if err != nil {
			return nil, commerr.Invalid("GOCOMMS_PORT_RANGE=%q: %v", v, err)
		}
		opts = append(opts, tcp.WithPortRange(lo, hi))
	}
	return tcp.New(opts...), nil
})
