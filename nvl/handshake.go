//go:build linux

package nvl

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gocomms/gocomms/transport"
)

// The handshake runs over the connection's socket (SOCK_SEQPACKET, so
// that each message arrives whole) before any record flows. All integers
// are little-endian.
//
// The dialer opens with its preface, the segment's descriptor attached
// (SCM_RIGHTS):
//
//	0   8  magic "GOCMNVL\x00"
//	8   2  version, 1
//	10  2  flags, 0
//	12  4  hello length n, at most transport.MaxHello
//	16  8  probe address: 16 bytes of the dialer's memory
//	24  16 the bytes that lie there
//	40  n  hello
//
// The acceptor answers:
//
//	0   8  magic
//	8   2  the acceptor's version
//	10  2  status: 0 accepted, 1 unsupported version
//	12  1  1 if the acceptor could read the dialer's probe across processes
//	13  3  reserved, 0
//	16  8  the acceptor's probe address
//	24  16 the bytes that lie there
//
// and the dialer ends it:
//
//	0   8  magic
//	8   1  1 if the dialer could read the acceptor's probe
//
// Each side reads the other's probe with process_vm_readv: a side that
// can is told so, and sends its large payloads by address. The peer's
// process id comes from the socket (SO_PEERCRED), which also tells its
// user: a peer of another user is refused.
const (
	handshakeMagic = "GOCMNVL\x00"
	version        = 1
	prefaceLen     = 40
	answerLen      = 40
	finalLen       = 9

	statusAccepted           = 0
	statusUnsupportedVersion = 1
)

// probe is memory a peer reads to find out whether it can read this
// process's memory.
type probe struct {
	bytes [16]byte
}

func newProbe() *probe {
	p := new(probe)
	rand.Read(p.bytes[:])
	return p
}

func (p *probe) address() uint64 { return uint64(uintptr(unsafe.Pointer(&p.bytes))) }

// readable reports whether this process can read the peer's probe at
// address, expecting want there.
func readable(pid int, address uint64, want []byte) bool {
	var got [16]byte
	var r crossReader
	return r.read(pid, got[:], address) == nil && string(got[:]) == string(want)
}

func appendPreface(b []byte, p *probe, hello []byte) []byte {
	b = append(b, handshakeMagic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hello)))
	b = binary.LittleEndian.AppendUint64(b, p.address())
	b = append(b, p.bytes[:]...)
	return append(b, hello...)
}

// errVersion is a preface of another version: the acceptor says so
// before it hangs up.
var errVersion = errors.New("unsupported version")

type preface struct {
	probeAddress uint64
	probeBytes   []byte
	hello        []byte
}

func parsePreface(b []byte) (preface, error) {
	if len(b) < prefaceLen || string(b[:8]) != handshakeMagic {
		return preface{}, fmt.Errorf("%w: not an nvl preface", ErrProtocol)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != version {
		return preface{}, fmt.Errorf("%w: version %d, want %d", errVersion, v, version)
	}
	n := binary.LittleEndian.Uint32(b[12:])
	if binary.LittleEndian.Uint16(b[10:]) != 0 || n > transport.MaxHello || int(n) != len(b)-prefaceLen {
		return preface{}, fmt.Errorf("%w: malformed preface", ErrProtocol)
	}
	return preface{
		probeAddress: binary.LittleEndian.Uint64(b[16:]),
		probeBytes:   b[24:40],
		hello:        b[prefaceLen:],
	}, nil
}

func appendAnswer(b []byte, status uint16, readsDialer bool, p *probe) []byte {
	b = append(b, handshakeMagic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, status)
	b = append(b, flag(readsDialer), 0, 0, 0)
	b = binary.LittleEndian.AppendUint64(b, p.address())
	return append(b, p.bytes[:]...)
}

type answer struct {
	version      uint16
	status       uint16
	readsDialer  bool
	probeAddress uint64
	probeBytes   []byte
}

func parseAnswer(b []byte) (answer, error) {
	if len(b) != answerLen || string(b[:8]) != handshakeMagic || b[12] > 1 || b[13]|b[14]|b[15] != 0 {
		return answer{}, fmt.Errorf("%w: malformed answer", ErrProtocol)
	}
	return answer{
		version:      binary.LittleEndian.Uint16(b[8:]),
		status:       binary.LittleEndian.Uint16(b[10:]),
		readsDialer:  b[12] == 1,
		probeAddress: binary.LittleEndian.Uint64(b[16:]),
		probeBytes:   b[24:40],
	}, nil
}

func appendFinal(b []byte, readsAcceptor bool) []byte {
	return append(append(b, handshakeMagic...), flag(readsAcceptor))
}

func parseFinal(b []byte) (readsAcceptor bool, err error) {
	if len(b) != finalLen || string(b[:8]) != handshakeMagic || b[8] > 1 {
		return false, fmt.Errorf("%w: malformed final handshake message", ErrProtocol)
	}
	return b[8] == 1, nil
}

func flag(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// peerPID returns the process id of the socket's peer, after checking it
// runs as this process's user.
func peerPID(sock *net.UnixConn) (int, error) {
	raw, err := sock.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("peer credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return 0, fmt.Errorf("peer process %d runs as user %d, not %d", cred.Pid, cred.Uid, os.Getuid())
	}
	return int(cred.Pid), nil
}
