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
	// verbsDevice, verbsPort and verbsGIDIndex choose what the verbs
	// provider uses: the device by name ("" the first listed), its port
	// (default 1), and the GID table entry that addresses it (negative:
	// the first non-empty entry on RoCE, none on InfiniBand).
	verbsDevice   string
	verbsPort     uint8
	verbsGIDIndex int
}

func defaultConfig() config {
	c := config{
		provider:         "tcp",
		handshakeTimeout: 10 * time.Second,
		log:              slog.New(slog.DiscardHandler),
		verbsPort:        1,
		verbsGIDIndex:    -1,
	}
	if testDefaults != nil {
		testDefaults(&c)
	}
	return c
}

// testDefaults, set only by this package's tests, adjusts the defaults
// of every New before its options apply, so that the tests that do not
// depend on a provider run over each of them (verbs_test.go).
var testDefaults func(*config)

// WithProvider selects the provider by name; see Providers. Default
// "tcp", the software provider that works everywhere; "verbs" carries
// operations on an RDMA device through libibverbs, where Supported says
// it can.
func WithProvider(name string) Option { return func(c *config) { c.provider = name } }

// WithVerbsDevice chooses what the verbs provider uses: the RDMA device
// called name ("" for the first one libibverbs lists), its port (0 for
// port 1), and the entry of the port's GID table that addresses it
// (negative for the first non-empty entry on RoCE, and none on
// InfiniBand, which routes by LID). On RoCE, `ibv_devinfo -v` or
// `show_gids` list the table: pick a RoCE v2 entry of the interface the
// peer reaches. Other providers ignore it.
func WithVerbsDevice(name string, port uint8, gidIndex int) Option {
	return func(c *config) {
		c.verbsDevice, c.verbsPort, c.verbsGIDIndex = name, max(port, 1), gidIndex
		if gidIndex < 0 {
			c.verbsGIDIndex = -1
		}
	}
}

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
	if c.verbsGIDIndex > 255 || len(c.verbsDevice) > 64 {
		return fmt.Errorf("rdma: verbs device %q, GID index %d: names have at most 64 bytes, indexes at most 255: %w",
			c.verbsDevice, c.verbsGIDIndex, ErrInvalid)
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
