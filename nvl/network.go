//go:build linux

package nvl

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/transport"
)

// Network is a transport.Network over shared memory between processes of
// one host. Create it with New. It holds only configuration, so one
// Network may serve any number of listeners and connections.
//
// Addresses read "nvl:HOST/NAME": HOST names this host's kernel (its boot
// id) and network namespace, the scope of the abstract Unix socket NAME
// that a listener binds; a dial to another HOST fails with ErrOtherHost,
// so that a caller can go over TCP instead.
type Network struct {
	cfg config
	err error
}

var (
	_ transport.Network  = (*Network)(nil)
	_ transport.Borrower = (*Network)(nil)
)

// New returns a shared-memory network configured by opts. Invalid options
// do not stop New: every Listen and Dial then fails with the reason.
func New(opts ...Option) *Network {
	n := &Network{cfg: defaultConfig()}
	for _, o := range opts {
		o(&n.cfg)
	}
	n.err = n.cfg.validate()
	return n
}

// BorrowsPayloads marks the network as a transport.Borrower.
func (*Network) BorrowsPayloads() {}

// Host returns this host's part of addresses, "" if it cannot be known
// (no /proc): then nothing listens or dials.
var Host = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/net") // "net:[4026531833]"
	if err != nil {
		return ""
	}
	id := strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", "")
	if _, err := hex.DecodeString(id); err != nil || id == "" {
		return ""
	}
	return id + "." + strings.Trim(strings.TrimPrefix(ns, "net:"), "[]")
})

// Reachable reports whether addr is an nvl address of this host.
func Reachable(addr string) bool {
	host, _, err := splitAddr(addr)
	return err == nil && host != "" && host == Host()
}

func splitAddr(addr string) (host, name string, err error) {
	rest, ok := strings.CutPrefix(addr, "nvl:")
	if !ok {
		return "", "", fmt.Errorf("nvl: %q is not an nvl address", addr)
	}
	host, name, ok = strings.Cut(rest, "/")
	if !ok || host == "" || name == "" || strings.ContainsAny(name, "/\x00") {
		return "", "", fmt.Errorf("nvl: malformed address %q, want nvl:HOST/NAME", addr)
	}
	return host, name, nil
}

// socketName is the abstract Unix socket a listener named name binds.
func socketName(name string) string { return "@gocomms/nvl/" + name }

// Listen listens at addr, an address this host's Listen returned, or
// "" for a fresh one.
func (n *Network) Listen(addr string) (transport.Listener, error) {
	if n.err != nil {
		return nil, n.err
	}
	host := Host()
	if host == "" {
		return nil, errors.New("nvl: this host's boot id or network namespace is unknown (no /proc?)")
	}
	name := strings.ReplaceAll(uuid.NewString(), "-", "")
	if addr != "" {
		h, nm, err := splitAddr(addr)
		if err != nil {
			return nil, err
		}
		if h != host {
			return nil, fmt.Errorf("nvl: listen on %q: %w", addr, ErrOtherHost)
		}
		name = nm
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: socketName(name), Net: "unixpacket"})
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("nvl: %w: %w", err, transport.ErrAddrInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("nvl: %w", err)
	}
	return newListener(ln, "nvl:"+host+"/"+name, &n.cfg), nil
}

// Dial connects to the listener at addr, creates the connection's segment
// and hands it over with hello.
func (n *Network) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	if n.err != nil {
		return nil, n.err
	}
	if len(hello) > transport.MaxHello {
		return nil, fmt.Errorf("nvl: dial %s: hello of %d bytes exceeds %d", addr, len(hello), transport.MaxHello)
	}
	host, name, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	if host != Host() {
		return nil, fmt.Errorf("nvl: dial %s: %w: %w", addr, ErrOtherHost, transport.ErrRefused)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unixpacket", socketName(name))
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("nvl: dial %s: %w", addr, transport.ErrRefused)
	}
	if err != nil {
		return nil, fmt.Errorf("nvl: dial %s: %w", addr, err)
	}
	sock := nc.(*net.UnixConn)
	stop := context.AfterFunc(ctx, func() { sock.SetDeadline(time.Unix(1, 0)) })
	c, err := n.handshake(sock, addr, hello)
	if !stop() || err != nil {
		if c != nil {
			c.Close()
		} else {
			sock.Close()
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("nvl: dial %s: %w", addr, err)
	}
	return c, nil
}

// handshake is the dialer's side of the handshake: it returns the
// connection, serving.
func (n *Network) handshake(sock *net.UnixConn, addr string, hello []byte) (*conn, error) {
	sock.SetDeadline(time.Now().Add(n.cfg.handshakeTimeout))
	pid, err := peerPID(sock)
	if err != nil {
		return nil, err
	}
	seg, fd, err := createSegment(n.cfg.layout())
	if err != nil {
		return nil, err
	}
	readsDialer, err := n.exchange(sock, pid, fd, hello)
	if err != nil {
		seg.unmap()
		return nil, err
	}
	local := fmt.Sprintf("nvl:%s/pid%d", Host(), os.Getpid())
	return newConn(sock, seg, true, local, addr, pid, readsDialer, &n.cfg), nil
}

// exchange sends the preface with the segment's descriptor fd, which it
// closes, reads the answer and ends the handshake; it reports whether the
// acceptor may read this process's memory.
func (n *Network) exchange(sock *net.UnixConn, pid, fd int, hello []byte) (bool, error) {
	p := newProbe()
	_, _, err := sock.WriteMsgUnix(appendPreface(make([]byte, 0, prefaceLen+len(hello)), p, hello), unix.UnixRights(fd), nil)
	unix.Close(fd)
	if err != nil {
		return false, fmt.Errorf("send preface: %w", err)
	}
	b := make([]byte, answerLen+1)
	k, err := sock.Read(b)
	if err != nil {
		return false, fmt.Errorf("read the answer: %w", err)
	}
	runtime.KeepAlive(p) // the acceptor has read the probe, or given up
	a, err := parseAnswer(b[:k])
	if err == nil && a.status != statusAccepted {
		err = fmt.Errorf("%w: the listener (version %d) refused with status %d (version %d here)", ErrProtocol, a.version, a.status, version)
	}
	if err != nil {
		return false, err
	}
	if _, err := sock.Write(appendFinal(nil, readable(pid, a.probeAddress, a.probeBytes))); err != nil {
		return false, fmt.Errorf("send the final handshake message: %w", err)
	}
	return a.readsDialer, sock.SetDeadline(time.Time{})
}
