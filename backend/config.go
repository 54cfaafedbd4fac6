package backend

import (
	"context"
	"log/slog"
	"time"

	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/store"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
)

// Config is a communicator's validated configuration, as a backend factory
// receives it.
type Config struct {
	Name    string            // identical on every rank; keys the rendezvous
	Device  tensor.Device     // where tensors live
	Rank    int               // this rank, in [0, Size)
	Size    int               // ranks in the communicator, >= 1
	Store   store.Store       // rendezvous store; nil when the backend needs none
	Network transport.Network // how ranks connect
	// Runtime is the process's actor runtime (an *actors.Runtime:
	// clock, dispatcher, logger), shared by its communicators. The
	// native engine runs on it; the contract does not name its type,
	// which lies above it, and other backends need not read it.
	Runtime any
	Timeout time.Duration     // default per-operation timeout, > 0
	Logger  *slog.Logger      // never nil; discards unless set
	Hints   map[string]string // free-form, backend-specific
	// LocalSize is the number of ranks on each host, ranks being numbered
	// host by host, as torchrun and mpirun number them; 0 when unknown.
	// Hierarchical schedules keep their heavy traffic inside a host.
	LocalSize int
	// Algorithms is the schedule of each collective that WithAlgorithm or
	// GOCOMMS_ALGO_<OP> chose; a collective not in it is the selector's.
	Algorithms map[algorithms.Kind]string
	// Registry holds the schedules the communicator may run:
	// WithAlgorithms's, else the process's (RegisterAlgorithm). Never nil.
	Registry *algorithms.Registry

	// AbortProcessOnError makes a timed-out or failed operation run the
	// abort hooks and exit the process, as torchcomms does by default.
	AbortProcessOnError bool

	// Heartbeat and Silence watch the peers a rank waits on: a peer
	// silent for Heartbeat is asked for a frame, and one silent for
	// Silence has failed. Zero takes the defaults (1 s and 5 s); a
	// negative Silence turns the watch off.
	Heartbeat, Silence time.Duration

	// ReleaseLinks links a collective's peers as it comes to them and
	// releases each link once no operation uses it: a rank holds links
	// only to the peers it still exchanges frames with, at the cost of a
	// connection made again for each collective (WithLinkRelease).
	ReleaseLinks bool

	// Dynamic is torchcomms' dynamic regime (WithReconfigure): the
	// communicator has no members until Reconfigure gives it some, so the
	// factory must connect nothing and return a Reconfigurable backend.
	// Rank is -1 and Size 0 until then.
	Dynamic bool
}

// Reconfigurable is a Backend whose processes can form new communicators
// from init handles, which Comm.InitHandle and Comm.Reconfigure need.
type Reconfigurable interface {
	// Endpoint returns the address at which this process is to be reached
	// in the communicator the next Reconfigure makes, opening it on the
	// first call after the last Reconfigure.
	Endpoint() (string, error)
	// Reconfigure creates the communicator whose members are reached at
	// addrs, in rank order (this process at cfg.Rank), over the endpoint.
	Reconfigure(ctx context.Context, cfg *Config, id uint64, addrs []string) (Backend, error)
}
