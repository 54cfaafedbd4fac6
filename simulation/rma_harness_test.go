package simulation

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors/rank"
	"github.com/gocomms/gocomms/actors/window"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
)

// rmaJob is a simulated job whose ranks each open one RMA window and use
// it through the window actors' own messages (backend.WindowOp, Wait, Read),
// sent from the loop, as Window's methods send them from user
// goroutines. Everything below the window is the run's: the loop, the
// network and its fault plan, the rank and link actors, the trace.
type rmaJob struct {
	r      *run
	mem    [][]byte     // each rank's window memory
	ranks  []*actor.PID // each rank's actor
	wins   []*actor.PID // each rank's window actor, once open
	opened int
	waits  uint64 // numbers the waits, as Window does
	events uint64 // numbers what the harness records, in the loop's order
	bad    []string
	// Window frames by (sender, receiver, code, number): those handed to
	// a connection, and those a connection delivered. A frame sent again
	// after a reconnect shows in the first; one that reached the peer's
	// link twice in the second, which only the layers above keep from
	// being applied twice.
	sent, delivered map[frameKey]int
}

type frameKey struct {
	from, to int
	tag      uint32
	sig      uint64
}

// countedConn is a rank's end of a simulated connection that counts the
// window frames it carries each way.
type countedConn struct {
	*conn
	j *rmaJob
}

func (c countedConn) Send(f transport.Frame) error {
	if isWindowFrame(f.Header) {
		c.j.sent[frameKey{c.me(), c.peer(), f.Header.Tag, f.Header.Sig}]++
	}
	return c.conn.Send(f)
}

func (c countedConn) Start(h transport.Handler) {
	c.conn.Start(countedHandler{h, c.j, c.peer(), c.me()})
}

type countedHandler struct {
	transport.Handler
	j        *rmaJob
	from, to int
}

func (h countedHandler) HandleFrame(f transport.Frame) {
	if isWindowFrame(f.Header) {
		h.j.delivered[frameKey{h.from, h.to, f.Header.Tag, f.Header.Sig}]++
	}
	h.Handler.HandleFrame(f)
}

// isWindowFrame reports whether h is a window's frame; the link may mark
// one in the kind's top bit for an acknowledgement at once.
func isWindowFrame(h transport.Header) bool { return h.Kind&0x7f == transport.Window }

// again counts the frames of counts seen more than once, over the first.
func again(counts map[frameKey]int) (n int) {
	for _, c := range counts {
		n += c - 1
	}
	return n
}

// rmaSetup is what an rmaJob depends on besides its workload.
type rmaSetup struct {
	ranks  int
	topo   Topology
	seed   uint64
	plan   Plan
	jitter time.Duration
	bytes  int // each rank's window
	slots  int
	limit  time.Duration // the liveness bound past the plan's last heal
}

// newRMAJob spawns the ranks, opens a window on each, and calls ready on
// the loop once every window is open; run does the rest.
func newRMAJob(s rmaSetup, ready func(*rmaJob)) (*rmaJob, error) {
	cfg := &Config{
		Ranks: s.ranks, Topology: s.topo, DType: tensor.Int64, Timeout: time.Minute,
		Limit: s.limit, Seed: s.seed, Faults: s.plan, Jitter: s.jitter,
	}
	if err := cfg.Topology.validate(cfg.Ranks); err != nil {
		return nil, err
	}
	if err := cfg.Faults.validate(cfg.Ranks); err != nil {
		return nil, err
	}
	r := newRun(cfg, slog.New(slog.DiscardHandler))
	j := &rmaJob{
		r: r, mem: make([][]byte, s.ranks), ranks: make([]*actor.PID, s.ranks), wins: make([]*actor.PID, s.ranks),
		sent: map[frameKey]int{}, delivered: map[frameKey]int{},
	}
	for i := range s.ranks {
		var connect func(int) (transport.Conn, error)
		j.ranks[i] = rank.Spawn(r.runtimeFor(i), rank.Config{
			Comm: "sim", CommID: 1, Rank: i, Size: s.ranks,
			Connect: func(peer int) (transport.Conn, error) {
				c, err := connect(peer)
				if err != nil {
					return nil, err
				}
				return countedConn{c.(*conn), j}, nil
			},
		})
		connect = r.net.Join("sim", nil, i, func(peer int) { r.rt.System().Root.Send(j.ranks[i], &rank.Connected{Peer: peer}) })
	}
	for i := range s.ranks {
		j.mem[i] = make([]byte, s.bytes)
		r.rt.System().Root.Send(j.ranks[i], &rank.OpenWindow{
			Config: window.Config{ID: 0, Memory: j.mem[i], Slots: s.slots},
			Done: func(pid *actor.PID, err error) {
				if err != nil {
					j.bad = append(j.bad, fmt.Sprintf("rank %d: opening the window: %v", i, err))
					return
				}
				j.wins[i] = pid
				if j.opened++; j.opened == s.ranks {
					ready(j)
				}
			},
		})
	}
	cfg.Faults.arm(r)
	return j, nil
}

// run runs the loop until nothing is left to do or the liveness bound
// passes; it may be called again after more is sent.
func (j *rmaJob) run() {
	j.r.loop.Run(j.r.loop.Elapsed() + j.r.cfg.Faults.healed() + j.r.cfg.Limit)
}

// close ends the actor system.
func (j *rmaJob) close() { j.r.rt.System().Shutdown() }

// send hands msg to rank i's window actor.
func (j *rmaJob) send(i int, msg any) { j.r.rt.System().Root.Send(j.wins[i], msg) }

// now stamps an event: the virtual time, and its place in the loop's
// order, which breaks ties between events at one instant.
func (j *rmaJob) now() stamp {
	j.events++
	return stamp{at: j.r.loop.Elapsed(), seq: j.events}
}

// stamp is when something happened in a run.
type stamp struct {
	at  time.Duration
	seq uint64
}

func (s stamp) before(o stamp) bool { return s.seq < o.seq }

// The words of a window, as int64 in the machine's order (reduce.Combine
// adds them in place).
func word(mem []byte, i int) int64 { return int64(binary.NativeEndian.Uint64(mem[8*i:])) }

func wordsOf(b []byte) []int64 {
	ws := make([]int64, len(b)/8)
	for i := range ws {
		ws[i] = word(b, i)
	}
	return ws
}

// payload lays ws out as an operation's data, staged as window.Stage
// lays it out for the frames that carry it.
func payload(ws ...int64) []byte {
	b := make([]byte, 8*len(ws))
	for i, w := range ws {
		binary.NativeEndian.PutUint64(b[8*i:], uint64(w))
	}
	return window.Stage(b)
}

// namesRank reports whether err is a peer failure whose text names rank
// r ("rank 3", not "rank 31").
func namesRank(err error, r int) bool {
	if !errors.Is(err, commerr.ErrPeerFailed) {
		return false
	}
	s, name := err.Error(), "rank "+strconv.Itoa(r)
	for i := 0; ; {
		k := strings.Index(s[i:], name)
		if k < 0 {
			return false
		}
		end := i + k + len(name)
		if end == len(s) || s[end] < '0' || s[end] > '9' {
			return true
		}
		i = end
	}
}

// seedRange is the seeds a sweep runs: n by default, or what the
// variable env says: a count ("5000") or a span of seeds ("17-17", to
// replay one).
func seedRange(t *testing.T, env string, n uint64) (from, to uint64) {
	s := os.Getenv(env)
	if s == "" {
		return 0, n
	}
	lo, hi, span := strings.Cut(s, "-")
	a, err := strconv.ParseUint(lo, 10, 64)
	b := a
	if err == nil && span {
		b, err = strconv.ParseUint(hi, 10, 64)
	}
	if err != nil || b < a {
		t.Fatalf("%s=%q: want a count of seeds, or a span of seeds A-B", env, s)
	}
	if !span {
		return 0, a
	}
	return a, b + 1
}
