package tcpstore

import (
	"fmt"
	"log/slog"
	"time"
)

// Version is the protocol dialect a Client speaks.
type Version int

const (
	// VersionAuto probes the server when dialing; see Dial.
	VersionAuto Version = iota
	// Version1 is the protocol of PyTorch 1.x up to 2.1: no handshake,
	// the 1.13 numbering of queries.
	Version1
	// Version2 is the protocol of PyTorch 2.2 and later: a VALIDATE
	// handshake, then the 2.2 numbering. Forced, it also expects the server
	// to echo PING, as PyTorch 2.5 and later and Server do.
	Version2
)

func (v Version) String() string {
	switch v {
	case VersionAuto:
		return "auto"
	case Version1:
		return "1.x"
	case Version2:
		return "2.x"
	}
	return fmt.Sprintf("Version(%d)", int(v))
}

// Limits bounds what a Server accepts in one request. A request over a
// limit closes its connection before anything is allocated for it. Zero
// fields take the defaults.
type Limits struct {
	// MaxKeyLen is the longest key in bytes; default 64 KiB (PyTorch's
	// libuv server allows 8 KiB, its keys are paths).
	MaxKeyLen int
	// MaxValueLen is the longest value in bytes; default 1 GiB. A request
	// carries at most MaxKeyLen+MaxValueLen bytes of keys and values in all,
	// so one MULTI_SET cannot sidestep it.
	MaxValueLen int
	// MaxKeys is the most keys in one CHECK, WAIT, MULTI_GET or MULTI_SET;
	// default 128 Ki, as in the libuv server.
	MaxKeys int
}

// withDefaults fills the zero fields of l.
func (l Limits) withDefaults() Limits {
	if l.MaxKeyLen <= 0 {
		l.MaxKeyLen = 64 << 10
	}
	if l.MaxValueLen <= 0 {
		l.MaxValueLen = 1 << 30
	}
	if l.MaxKeys <= 0 {
		l.MaxKeys = 128 << 10
	}
	return l
}

// requestBudget is the most bytes of keys and values in one request.
func (l Limits) requestBudget() int { return l.MaxKeyLen + l.MaxValueLen }

// ServerOption configures Listen.
type ServerOption func(*serverConfig)

type serverConfig struct {
	limits Limits       // filled with defaults
	logger *slog.Logger // never nil; discards unless set
}

// WithLimits bounds the size of requests; see Limits.
func WithLimits(l Limits) ServerOption {
	return func(c *serverConfig) { c.limits = l }
}

// WithLogger makes the server log rejected connections at debug level and
// accept failures at warning level; without it the server logs nothing.
func WithLogger(l *slog.Logger) ServerOption {
	return func(c *serverConfig) { c.logger = l }
}

func newServerConfig(opts []ServerOption) serverConfig {
	var c serverConfig
	for _, opt := range opts {
		opt(&c)
	}
	c.limits = c.limits.withDefaults()
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// DefaultTimeout is PyTorch's default store timeout.
const DefaultTimeout = 300 * time.Second

// DialOption configures Dial.
type DialOption func(*dialConfig)

type dialConfig struct {
	version Version
	timeout time.Duration // > 0
}

// WithVersion sets the dialect to speak instead of probing for it.
func WithVersion(v Version) DialOption {
	return func(c *dialConfig) { c.version = v }
}

// WithTimeout bounds how long the client keeps trying to connect, at Dial
// and when it opens another connection later, and how long a request that
// does not wait for keys may take. Waits for keys are bounded by their
// context only. The default is DefaultTimeout.
func WithTimeout(d time.Duration) DialOption {
	return func(c *dialConfig) { c.timeout = d }
}

func newDialConfig(opts []DialOption) (dialConfig, error) {
	c := dialConfig{timeout: DefaultTimeout}
	for _, opt := range opts {
		opt(&c)
	}
	if c.version < VersionAuto || c.version > Version2 {
		return c, fmt.Errorf("tcpstore: unknown protocol %v", c.version)
	}
	if c.timeout <= 0 {
		return c, fmt.Errorf("tcpstore: timeout %v is not positive", c.timeout)
	}
	return c, nil
}
