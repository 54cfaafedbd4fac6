package tcpstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/gocomms/gocomms/internal/names"
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
	return names.Of(v, "Version", []string{VersionAuto: "auto", Version1: "1.x", Version2: "2.x"})
}

// Limits bounds what a Server accepts: one request, what one connection
// may hold, and the store as a whole. A request over a limit closes its
// connection, the protocol having no error reply, before anything is
// allocated for it; the server logs which limit it was at warning level.
// Other connections carry on. Zero fields take the defaults.
type Limits struct {
	// MaxKeyLen is the longest key in bytes; default 64 KiB (PyTorch's
	// libuv server allows 8 KiB, its keys are paths).
	MaxKeyLen int
	// MaxValueLen is the longest value in bytes; default 64 MiB (the libuv
	// server allows 8 MiB). A request carries at most MaxKeyLen+MaxValueLen
	// bytes of keys and values in all, so one MULTI_SET cannot sidestep it.
	MaxValueLen int
	// MaxKeys is the most keys in one CHECK, WAIT, MULTI_GET or MULTI_SET;
	// default 128 Ki, as in the libuv server.
	MaxKeys int

	// MaxResponse is the largest reply in bytes; default MaxValueLen+16, so
	// that any one value can be read. A MULTI_GET or LIST_KEYS whose reply
	// would be larger is refused before the reply is built: without it, a
	// small request naming a large key many times would have the server
	// send that many copies (replies refer to stored values, so it would
	// not hold them in memory).
	MaxResponse int
	// MaxStoredBytes bounds the keys and values the store holds, queued
	// values and the keys of outstanding WAITs and BARRIERs included;
	// default 1 GiB.
	MaxStoredBytes int
	// MaxStoredKeys bounds the keys and queues the store holds; default
	// 1 Mi.
	MaxStoredKeys int
	// MaxConns is the most connections served at once; default 16 Ki. A
	// connection over it is closed as soon as it is accepted.
	MaxConns int
	// MaxWaits is the most WAITs and BARRIERs one connection may have
	// outstanding; default 64 (PyTorch's clients have one).
	MaxWaits int
	// ReadTimeout bounds how long a request may take to arrive once its
	// first byte has, and a reply to be taken; default 60 s. A peer that
	// stalls part-way is dropped then.
	ReadTimeout time.Duration
	// IdleTimeout, if positive, drops a connection that sends nothing for
	// that long while it waits for no key. The default is none: PyTorch
	// clients keep their store connection idle for a whole job.
	IdleTimeout time.Duration
}

// withDefaults fills the zero fields of l.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxKeyLen, 64<<10)
	def(&l.MaxValueLen, 64<<20)
	def(&l.MaxKeys, 128<<10)
	def(&l.MaxResponse, l.MaxValueLen+16)
	def(&l.MaxStoredBytes, 1<<30)
	def(&l.MaxStoredKeys, 1<<20)
	def(&l.MaxConns, 16<<10)
	def(&l.MaxWaits, 64)
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = 60 * time.Second
	}
	return l
}

// requestBudget is the most bytes of keys and values in one request.
func (l Limits) requestBudget() int { return l.MaxKeyLen + l.MaxValueLen }

// ServerOption configures Listen.
type ServerOption func(*serverConfig)

type serverConfig struct {
	limits Limits       // filled with defaults
	token  string       // required of every connection unless empty
	logger *slog.Logger // never nil; discards unless set
}

// WithLimits bounds requests, connections and the store; see Limits.
func WithLimits(l Limits) ServerOption {
	return func(c *serverConfig) { c.limits = l }
}

// TokenKey is the key of the SET that presents a token (RequireToken,
// WithToken). The token is compared, not stored.
const TokenKey = "gocomms/store/token"

// RequireToken makes the server drop every connection whose first request,
// after the 2.x VALIDATE, is not a SET of TokenKey to token: only clients
// given WithToken(token) can use it. PyTorch's clients cannot, so it is
// for stores that only gocomms processes use.
func RequireToken(token string) ServerOption {
	return func(c *serverConfig) { c.token = token }
}

// WithLogger makes the server log connections closed for bad requests at
// debug level, and limits reached and accept failures at warning level;
// without it the server logs nothing.
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
	token   string        // presented on every connection unless empty
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

// WithToken makes the client present token on every connection, as a
// server started with RequireToken(token) requires. A server that does not
// require it stores it as an ordinary key.
func WithToken(token string) DialOption {
	return func(c *dialConfig) { c.token = token }
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
