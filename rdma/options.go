package rdma

import (
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Option configures a Transport.
type Option func(*config)

// config is a Transport's validated settings.
type config struct {
	// provider names the provider that carries operations. Default "tcp",
	// the software provider.
	provider string
	// listenHost is the host Bind listens on; "" listens on every
	// interface. The port is always one the kernel picks.
	listenHost string
	// advertiseHost is the host an Address names when listenHost is ""
	// or unspecified (0.0.0.0, ::); "" picks the first IPv4 address of an
	// up, non-loopback interface, else 127.0.0.1.
	advertiseHost string
	// handshakeTimeout bounds how long Bind's listener waits for a
	// connecting peer's hello, so that a stray connection cannot hold it.
	// Default 10 s; > 0.
	handshakeTimeout time.Duration
	// log receives what happens to the transport: bind, connect, accept,
	// refused connections, the cause of a break. Default: discarded.
	log *slog.Logger
}

func defaultConfig() config {
	return config{
		provider:         "tcp",
		handshakeTimeout: 10 * time.Second,
		log:              slog.New(slog.DiscardHandler),
	}
}

// WithProvider selects the provider by name; see Providers. Default "tcp".
func WithProvider(name string) Option { return func(c *config) { c.provider = name } }

// WithListenHost sets the host or IP address Bind listens on; by default
// every interface. The port is always one the kernel picks.
func WithListenHost(host string) Option { return func(c *config) { c.listenHost = host } }

// WithAdvertiseHost sets the host the bound Address names when Bind
// listens on every interface; by default the first IPv4 address of an up,
// non-loopback interface, else 127.0.0.1.
func WithAdvertiseHost(host string) Option { return func(c *config) { c.advertiseHost = host } }

// WithLogger sets the logger; by default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

func (c *config) validate() error {
	for _, h := range []struct{ what, host string }{{"listen", c.listenHost}, {"advertise", c.advertiseHost}} {
		if h.host != "" && (len(h.host) > 200 || net.ParseIP(h.host) == nil && !validHostname(h.host)) {
			return fmt.Errorf("rdma: %s host %q: not an IP address or host name: %w", h.what, h.host, ErrInvalid)
		}
	}
	if c.handshakeTimeout <= 0 {
		return fmt.Errorf("rdma: handshake timeout %v: must be positive: %w", c.handshakeTimeout, ErrInvalid)
	}
	return nil
}

// validHostname reports whether h is made of the characters of a DNS name.
func validHostname(h string) bool {
	for _, c := range []byte(h) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}
