package rdma

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// provider makes the endpoints of one kind of transport. Transport does
// what every provider shares (checking arguments, contexts, the broken
// and closed states, counting notifications); an endpoint only moves
// operations. There are two: the software provider over TCP (tcp.go),
// and the provider over libibverbs (verbs.go), whose endpoint owns a
// queue pair that a side channel over TCP connects, posts each op as
// work requests, and has a completion poller send each result to the
// op's done channel.
type provider interface {
	// available returns nil if endpoints can be made on this machine, or
	// why not, wrapping ErrUnsupported.
	available() error
	// describe renders the provider's part of an Address for people.
	describe(part []byte) string
	// newEndpoint makes the machinery of transport t.
	newEndpoint(cfg *config, t events) (endpoint, error)
}

// events is how an endpoint reports to its Transport, from any goroutine.
type events interface {
	// notified counts a notifying write from the peer whose payload has
	// landed in this process's memory.
	notified()
	// fail breaks the transport with cause, unless it is broken or closed
	// already, has the endpoint shut down, and returns the error every
	// call now fails with.
	fail(cause error) error
}

// endpoint is one Transport's machinery.
type endpoint interface {
	// bind makes the endpoint reachable and returns the provider's part of
	// its Address. It is called once.
	bind() ([]byte, error)
	// connect reaches the peer whose Address carries part and returns a
	// name for it in errors (host:port). It is called until it succeeds.
	connect(ctx context.Context, part []byte) (string, error)
	// do sends o to the peer and returns its result, once the endpoint
	// has let go of o's memory. If ctx ends before o is sent, do returns an
	// error wrapping ctx.Err() and the transport stays as it was; if ctx
	// ends after, do breaks the transport through events.fail and returns
	// an error wrapping ctx.Err() and the transport's error, unless o
	// completed all the same.
	do(ctx context.Context, o *op) error
	// shutdown stops all I/O without waiting: every op in flight
	// completes with the transport's error.
	shutdown()
	// wait returns once the endpoint's goroutines have ended, after
	// shutdown.
	wait()
}

// providers are the providers in this build, by name. It is written only
// here.
var providers = map[string]provider{
	"tcp":   tcpProvider{},
	"verbs": verbsProvider{},
}

// Providers returns the names of the providers in this build, sorted,
// whether or not they are usable on this machine (see Supported).
func Providers() []string {
	return slices.Sorted(maps.Keys(providers))
}

// Supported returns nil if the named provider can carry transports on this
// machine, or an error wrapping ErrUnsupported that says why not.
func Supported(name string) error {
	p, ok := providers[name]
	if !ok {
		return fmt.Errorf("rdma: provider %q: %w: this build has %v", name, ErrUnsupported, Providers())
	}
	return p.available()
}
