package engine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/launcher"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/store/bootstrap"
	"github.com/gocomms/gocomms/transport"
	"github.com/gocomms/gocomms/transport/tcp"
	"github.com/gocomms/gocomms/transport/topo"
)

// What a communicator uses when its options name no store or network: the
// process's connection to the job's store and its network, shared by
// every communicator of the process.

// envStore connects to the store the launcher's environment names, rank 0
// hosting it unless the launcher does.
func envStore(ctx context.Context, rank int, timeout time.Duration) (store.Store, error) {
	addr, agent, err := launcher.StoreFromEnv(os.LookupEnv)
	if err != nil {
		return nil, commerr.Invalid("%v", err)
	}
	st, err := bootstrap.Shared(ctx, addr, rank == 0 && !agent, timeout)
	if err != nil && rank != 0 && !agent {
		return nil, fmt.Errorf("%w (rank 0 serves the store: has it started?)", err)
	}
	return st, err
}

var processNetwork = sync.OnceValues(func() (transport.Network, error) { return envNetwork(os.LookupEnv) })

// envNetwork builds the network GOCOMMS_TRANSPORT names: "auto" (the
// default) reaches peers on this host through shared memory and the rest
// over TCP; "shm" uses shared memory only, "tcp" TCP only.
// GOCOMMS_PORT_RANGE bounds TCP's ports, GOCOMMS_SOCKET_IFNAME lists the
// interfaces TCP may listen on and advertise (NCCL_SOCKET_IFNAME's syntax,
// tcp.Ifnames) and GOCOMMS_TCP_CHECKSUMS says which connections checksum
// payloads; GOCOMMS_SHM_SPIN (a duration),
// GOCOMMS_SHM_SLOTS (a count), GOCOMMS_SHM_RING and
// GOCOMMS_SHM_BY_ADDRESS (bytes, 0 for never) tune shared memory.
func envNetwork(lookup func(string) (string, bool)) (transport.Network, error) {
	var tcpOpts []tcp.Option
	if v, ok := lookup("GOCOMMS_PORT_RANGE"); ok {
		lo, hi, err := tcp.ParsePortRange(v)
		if err != nil {
			return nil, commerr.Invalid("GOCOMMS_PORT_RANGE=%q: %v", v, err)
		}
		tcpOpts = append(tcpOpts, tcp.WithPortRange(lo, hi))
	}
	if v, ok := lookup("GOCOMMS_SOCKET_IFNAME"); ok {
		tcpOpts = append(tcpOpts, tcp.WithInterfaces(v))
	}
	if v, ok := lookup("GOCOMMS_TCP_CHECKSUMS"); ok {
		c, err := tcp.ParseChecksums(v)
		if err != nil {
			return nil, commerr.Invalid("GOCOMMS_TCP_CHECKSUMS=%q: %v", v, err)
		}
		tcpOpts = append(tcpOpts, tcp.WithPayloadChecksums(c))
	}
	var shmOpts []nvl.Option
	if v, ok := lookup("GOCOMMS_SHM_SPIN"); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, commerr.Invalid("GOCOMMS_SHM_SPIN=%q: want a duration such as 50us", v)
		}
		shmOpts = append(shmOpts, nvl.WithSpin(d))
	}
	if v, ok := lookup("GOCOMMS_SHM_BY_ADDRESS"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, commerr.Invalid("GOCOMMS_SHM_BY_ADDRESS=%q: want a size in bytes, 0 for never", v)
		}
		shmOpts = append(shmOpts, nvl.WithByAddress(n))
	}
	if v, ok := lookup("GOCOMMS_SHM_SLOTS"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, commerr.Invalid("GOCOMMS_SHM_SLOTS=%q: want a count of 512 KiB slots, 0 for none", v)
		}
		shmOpts = append(shmOpts, nvl.WithSlots(n, 512<<10))
	}
	if v, ok := lookup("GOCOMMS_SHM_RING"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, commerr.Invalid("GOCOMMS_SHM_RING=%q: want a size in bytes", v)
		}
		shmOpts = append(shmOpts, nvl.WithRingSize(n))
	}
	switch v, _ := lookup("GOCOMMS_TRANSPORT"); v {
	case "", "auto":
		if nvl.Host() == "" {
			return tcp.New(tcpOpts...), nil // no shared memory here
		}
		return topo.New(nvl.New(shmOpts...), tcp.New(tcpOpts...), nvl.Reachable)
	case "shm":
		return nvl.New(shmOpts...), nil
	case "tcp":
		return tcp.New(tcpOpts...), nil
	default:
		return nil, commerr.Invalid("GOCOMMS_TRANSPORT=%q: want auto, shm or tcp", v)
	}
}
