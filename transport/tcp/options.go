package tcp

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Option configures a Network.
type Option func(*config)

// config is a Network's validated settings.
type config struct {
	// listenHost is the host Listen binds when the address names none;
	// "" binds every interface.
	listenHost string
	// listenInterface, if set, names the network interface whose first
	// address Listen binds instead of listenHost.
	listenInterface string
	// interfaces, if set, lists the interfaces Listen may bind the first
	// address of, in NCCL_SOCKET_IFNAME's syntax (see Ifnames).
	interfaces string
	// advertiseHost replaces an unspecified bind address (0.0.0.0, ::) in
	// Listener.Addr; "" takes Choose's default choice.
	advertiseHost string
	// portLo..portHi (inclusive) are the ports tried in order when Listen
	// asks for port 0; 0..0 leaves the choice to the kernel.
	portLo, portHi int
	// dialTimeout bounds a Dial (connect and preface) when ctx allows
	// longer. Default 10 s; > 0.
	dialTimeout time.Duration
	// handshakeTimeout bounds how long an acceptor waits for a dialer's
	// preface. Default 10 s; > 0.
	handshakeTimeout time.Duration
	// closeTimeout bounds how long a closed connection keeps writing what
	// was queued before Close, and waits for the peer's end. Default 5 s;
	// > 0.
	closeTimeout time.Duration
	// readBuffer and writeBuffer are SO_RCVBUF and SO_SNDBUF in bytes; 0
	// keeps the kernel's default and, on Linux, its autotuning. Default 0:
	// see WithSocketBuffers.
	readBuffer, writeBuffer int
	// keepAlive configures TCP keepalive probes on every connection.
	keepAlive net.KeepAliveConfig
	// maxPayload is the largest payload sent or accepted, in bytes.
	// Default 1 GiB; 0 < maxPayload <= 4 GiB - 1.
	maxPayload int
	// receiveWindow bounds, in bytes, the frames received that wait for
	// the handler; over it the reader stops reading the socket. Default
	// 64 MiB; > 0.
	receiveWindow int
	// checksums says which connections checksum their payloads.
	checksums Checksums
}

// Checksums says which connections carry a CRC32C of each payload, which
// the receiver checks (every header is checksummed regardless).
type Checksums int

const (
	// ChecksumsBetweenHosts checksums payloads on connections between two
	// hosts, where a NIC, a cable or a switch can corrupt what TCP's own
	// 16-bit checksum lets through, and not on connections within one
	// host, which are memory copies by the kernel: there the checksum was
	// a third of the time of a 64 MiB all-reduce. The default.
	ChecksumsBetweenHosts Checksums = iota
	// ChecksumsAlways checksums every payload.
	ChecksumsAlways
	// ChecksumsNever checksums no payload.
	ChecksumsNever
)

// ParseChecksums reads "hosts", "always" or "never", as
// GOCOMMS_TCP_CHECKSUMS gives them.
func ParseChecksums(s string) (Checksums, error) {
	switch s {
	case "hosts":
		return ChecksumsBetweenHosts, nil
	case "always":
		return ChecksumsAlways, nil
	case "never":
		return ChecksumsNever, nil
	}
	return 0, fmt.Errorf("payload checksums %q: want hosts, always or never", s)
}

// WithPayloadChecksums sets which connections checksum their payloads:
// ChecksumsBetweenHosts by default.
func WithPayloadChecksums(c Checksums) Option { return func(cfg *config) { cfg.checksums = c } }

// checkPayloads reports whether a connection from local to remote
// checksums its payloads.
func (c *config) checkPayloads(local, remote net.Addr) bool {
	switch c.checksums {
	case ChecksumsAlways:
		return true
	case ChecksumsNever:
		return false
	}
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	return !lok || !rok || !r.IP.IsLoopback() && !r.IP.Equal(l.IP)
}

func defaultConfig() config {
	return config{
		dialTimeout:      10 * time.Second,
		handshakeTimeout: 10 * time.Second,
		closeTimeout:     5 * time.Second,
		// A peer that vanished without a FIN or RST (power loss, cable
		// pulled) is noticed after about Idle + Count*Interval = 30 s when
		// the connection is idle; heartbeats in the link actor notice it
		// sooner.
		keepAlive:     net.KeepAliveConfig{Enable: true, Idle: 15 * time.Second, Interval: 5 * time.Second, Count: 3},
		maxPayload:    1 << 30,
		receiveWindow: 64 << 20,
	}
}

func (c *config) validate() error {
	var errs []error
	if len(slices.DeleteFunc([]string{c.listenHost, c.listenInterface, c.interfaces}, func(v string) bool { return v == "" })) > 1 {
		errs = append(errs, fmt.Errorf("listen host %q, interface %q and interfaces %q: set one", c.listenHost, c.listenInterface, c.interfaces))
	}
	if c.portLo != 0 || c.portHi != 0 {
		if err := checkPortRange(c.portLo, c.portHi); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"dial timeout", c.dialTimeout}, {"handshake timeout", c.handshakeTimeout}, {"close timeout", c.closeTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %v: must be positive", d.name, d.v))
		}
	}
	if c.readBuffer < 0 || c.writeBuffer < 0 {
		errs = append(errs, fmt.Errorf("socket buffers %d/%d bytes: must not be negative", c.readBuffer, c.writeBuffer))
	}
	if c.maxPayload <= 0 || uint64(c.maxPayload) > math.MaxUint32 {
		errs = append(errs, fmt.Errorf("max payload %d bytes: must be in 1..%d", c.maxPayload, uint32(math.MaxUint32)))
	}
	if c.receiveWindow <= 0 {
		errs = append(errs, fmt.Errorf("receive window %d bytes: must be positive", c.receiveWindow))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("transport/tcp: invalid options: %w", err)
	}
	return nil
}

// tune sets the socket options every connection gets.
func (c *config) tune(sock *net.TCPConn) error {
	if err := sock.SetNoDelay(true); err != nil { // frames are whole messages: send them now
		return err
	}
	if c.readBuffer > 0 {
		if err := sock.SetReadBuffer(c.readBuffer); err != nil {
			return err
		}
	}
	if c.writeBuffer > 0 {
		if err := sock.SetWriteBuffer(c.writeBuffer); err != nil {
			return err
		}
	}
	return nil
}

// WithListenHost sets the host or IP address that Listen("") binds, and
// that Listen binds for an address with an empty host (":7000"). The
// default binds every interface.
func WithListenHost(host string) Option {
	return func(c *config) { c.listenHost = host }
}

// WithListenInterface makes Listen bind the first address of the named
// network interface ("eth0", "ib0"), IPv4 before IPv6, where
// WithListenHost would bind its host: for machines whose ranks must talk
// over one network among several. It excludes WithListenHost.
func WithListenInterface(name string) Option {
	return func(c *config) { c.listenInterface = name }
}

// WithInterfaces makes Listen bind the address Choose picks among the
// interfaces spec allows, in NCCL_SOCKET_IFNAME's syntax ("eth,ib",
// "^docker,lo", "=eth0"), where WithListenHost would bind its host, and
// Listener.Addr report it: for machines whose ranks must talk over one
// network among several. An empty spec changes nothing. It excludes
// WithListenHost and WithListenInterface.
func WithInterfaces(spec string) Option {
	return func(c *config) { c.interfaces = strings.TrimSpace(spec) }
}

// WithAdvertiseHost sets the host Listener.Addr reports when the listener
// is bound to every interface, so that peers on other machines can dial
// it. The default is Choose's without a list: the first address of an up
// interface neither loopback nor docker, IPv4 first, else of a docker
// bridge, else of loopback.
func WithAdvertiseHost(host string) Option {
	return func(c *config) { c.advertiseHost = host }
}

// WithPortRange makes Listen pick the first free port in lo..hi
// (inclusive) when asked for port 0, instead of a kernel-chosen ephemeral
// port: for firewalls that open only a range. See ParsePortRange.
func WithPortRange(lo, hi int) Option {
	return func(c *config) { c.portLo, c.portHi = lo, hi }
}

// WithDialTimeout bounds each Dial, connect and preface exchange together,
// when its context allows longer. Default 10 s.
func WithDialTimeout(d time.Duration) Option {
	return func(c *config) { c.dialTimeout = d }
}

// WithHandshakeTimeout bounds how long a listener waits for the preface of
// a connection it accepted; a connection that sends none in time is
// dropped. Default 10 s.
func WithHandshakeTimeout(d time.Duration) Option {
	return func(c *config) { c.handshakeTimeout = d }
}

// WithCloseTimeout bounds how long a closed connection goes on writing the
// frames queued before Close, and waits for the peer to close its end,
// before the socket is released. Default 5 s.
func WithCloseTimeout(d time.Duration) Option {
	return func(c *config) { c.closeTimeout = d }
}

// WithSocketBuffers sets SO_RCVBUF and SO_SNDBUF, in bytes, on every
// connection; 0 leaves one as the kernel sets it. The default leaves both:
// on Linux, setting a size turns off the kernel's buffer autotuning and is
// capped by net.core.rmem_max and wmem_max (often a few MiB or less), and
// docs/transport-tcp.md measures autotuning at least as fast on loopback.
func WithSocketBuffers(read, write int) Option {
	return func(c *config) { c.readBuffer, c.writeBuffer = read, write }
}

// WithKeepAlive sets TCP keepalive on every connection; the zero value
// turns it off. The default probes after 15 s idle, every 5 s, and gives
// up after 3 unanswered probes.
func WithKeepAlive(ka net.KeepAliveConfig) Option {
	return func(c *config) { c.keepAlive = ka }
}

// WithMaxPayload sets the largest payload a connection sends or accepts,
// in bytes, at most 4 GiB - 1. A peer announcing a larger one fails the
// connection before anything is allocated for it. Default 1 GiB.
func WithMaxPayload(n int) Option {
	return func(c *config) { c.maxPayload = n }
}

// WithReceiveWindow bounds, in bytes, the received frames that wait for
// the handler: before Start, or while a handler call runs in another
// goroutine. Each counts its payload and transport.QueuedCost more. Past
// the bound the connection stops reading its socket until the handler
// catches up, and TCP's own flow control then holds the sender back: a
// slow receiver slows its sender instead of failing or growing without
// bound. What waits is at most the window plus one frame. Default 64 MiB.
func WithReceiveWindow(n int) Option {
	return func(c *config) { c.receiveWindow = n }
}

// ParsePortRange parses a port range written "lo-hi" (inclusive) or as a
// single port, as in GOCOMMS_PORT_RANGE=29500-29600.
func ParsePortRange(s string) (lo, hi int, err error) {
	los, his, isRange := strings.Cut(strings.TrimSpace(s), "-")
	if !isRange {
		his = los
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(los))
	hi, err2 := strconv.Atoi(strings.TrimSpace(his))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("transport/tcp: port range %q: want lo-hi or a port", s)
	}
	if err := checkPortRange(lo, hi); err != nil {
		return 0, 0, fmt.Errorf("transport/tcp: %w", err)
	}
	return lo, hi, nil
}

func checkPortRange(lo, hi int) error {
	if lo < 1 || hi > 65535 || lo > hi {
		return fmt.Errorf("port range %d-%d: want 1 <= lo <= hi <= 65535", lo, hi)
	}
	return nil
}
