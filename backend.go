package gocomms

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/gocomms/gocomms/backend"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/engine"
)

// The contract between a communicator and the backend that runs it,
// defined in package backend: what a backend implements, and what the
// front hands it.
type (
	// Backend runs a communicator's operations.
	Backend = backend.Backend
	// Op is one validated operation, as hooks see it and a backend runs it.
	Op = backend.Op
	// OpName names an operation as torchcomms does.
	OpName = backend.OpName
	// P2P is one message of a point-to-point operation.
	P2P = backend.P2P
	// Completion is how a backend reports an operation's progress.
	Completion = backend.Completion
	// FaultTolerant is a Backend that Agree, Shrink and Revoke can use.
	FaultTolerant = backend.FaultTolerant
	// Reconfigurable is a Backend that InitHandle and Reconfigure can use.
	Reconfigurable = backend.Reconfigurable
	// Exchange all-gathers one byte string per rank over a communicator.
	Exchange = backend.Exchange
)

// The operations a communicator issues.
const (
	OpAllReduce           = backend.OpAllReduce
	OpReduce              = backend.OpReduce
	OpBroadcast           = backend.OpBroadcast
	OpAllGather           = backend.OpAllGather
	OpAllGatherSingle     = backend.OpAllGatherSingle
	OpAllGatherV          = backend.OpAllGatherV
	OpReduceScatter       = backend.OpReduceScatter
	OpReduceScatterSingle = backend.OpReduceScatterSingle
	OpReduceScatterV      = backend.OpReduceScatterV
	OpAllToAll            = backend.OpAllToAll
	OpAllToAllSingle      = backend.OpAllToAllSingle
	OpAllToAllV           = backend.OpAllToAllV
	OpGather              = backend.OpGather
	OpGatherSingle        = backend.OpGatherSingle
	OpScatter             = backend.OpScatter
	OpBarrier             = backend.OpBarrier
	OpSend                = backend.OpSend
	OpRecv                = backend.OpRecv
	OpBatch               = backend.OpBatch
	OpSplit               = backend.OpSplit
	OpAgree               = backend.OpAgree
	OpShrink              = backend.OpShrink
	OpRevoke              = backend.OpRevoke
	OpReconfigure         = backend.OpReconfigure
)

// NativeBackend is the name the built-in engine (package engine)
// registers under.
const NativeBackend = engine.Name

// Hints the native backend reads, per communicator or per operation.
const (
	// HintAlgorithm picks an algorithm by name, one of the communicator's
	// registry's (Algorithms lists the process's).
	HintAlgorithm = engine.HintAlgorithm
	// HintChunkBytes bounds the message size a large tensor is pipelined in.
	HintChunkBytes = engine.HintChunkBytes
)

func init() {
	if err := RegisterBackend(NativeBackend, engine.New); err != nil {
		panic(err) // only a second registration of the built-in name can fail
	}
}

// BackendFactory creates a backend for a resolved configuration. It returns
// when every resource is ready.
type BackendFactory func(ctx context.Context, cfg *Config) (Backend, error)

var registry = struct {
	sync.RWMutex
	factories map[string]BackendFactory
}{factories: map[string]BackendFactory{}}

// RegisterBackend makes a backend available to NewComm under name. A second
// registration of a name is an error.
func RegisterBackend(name string, f BackendFactory) error {
	if name == "" || f == nil {
		return commerr.Invalid("backend name and factory are required")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.factories[name]; ok {
		return commerr.Invalid("backend %q is already registered", name)
	}
	registry.factories[name] = f
	return nil
}

// Backends lists the registered backend names, sorted.
func Backends() []string {
	registry.RLock()
	defer registry.RUnlock()
	names := make([]string, 0, len(registry.factories))
	for n := range registry.factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookupBackend(name string) (BackendFactory, error) {
	registry.RLock()
	f := registry.factories[name]
	registry.RUnlock()
	if f == nil {
		return nil, commerr.Invalid("unknown backend %q (registered: %s)", name, strings.Join(Backends(), ", "))
	}
	return f, nil
}
