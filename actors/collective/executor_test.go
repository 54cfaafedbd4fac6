package collective

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/algorithms"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/transcript"
	"github.com/gocomms/gocomms/reduce"
	"github.com/gocomms/gocomms/tensor"
	"github.com/gocomms/gocomms/transport"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/executor/*.txt to what the executor does")

// TestExecutor replays the transcripts in testdata/executor (see package
// transcript): one executor, fed events as a driver feeds them, whose
// outbox records the frames it sends. The commands:
//
//	begin rank=R size=N count=C [algo=A] [op=sum|avg] [lend] [maps] [coll=S] [timeout=D]
//	                 an all-reduce of C float32s, rank R's input r*10+j+1
//	p2p rank=R msgs=send:P[:BYTES],recv:P[:BYTES],...
//	                 a batch of messages, of 8 bytes unless said, rank R's
//	                 float32s r*10+j+1; every message carries user tag 7
//	take from=P tag=T [data=X,Y|fill=V n=N|bytes=N] [registered|read|announce=N] [seq=S] [sig=bad]
//	                 a frame held before the start (a message's: ordinal=O
//	                 instead of tag); announce=N announces a message of N
//	                 bytes
//	start            the start
//	frame ...        a frame, as take describes it
//	sent step=I      the transport gave back step I's lent region (after
//	                 close: prints whether any is still lent)
//	gone peer=P      P's connection ended
//	fails peer=P     sends to P fail from now on
//	timeout          the operation timed out
//	close            the operation is let go of
//	state            what the executor holds
//
// A registered frame carries a descriptor of a peer's memory that holds
// its data, which the executor maps (a fake Memory); a read frame is the
// peer's word that it read a registered send. With maps, the executor's
// own sends of 64 KiB and more go as descriptors.
func TestExecutor(t *testing.T) {
	for _, file := range transcript.Files(t, filepath.Join("testdata", "executor")) {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			h := &executorHarness{}
			transcript.Run(t, file, *rewrite, h.do)
		})
	}
}

type executorHarness struct {
	x     executor
	req   *Request
	fails map[int]bool // by peer: its sends fail
	mem   fakeMemory
	w     *strings.Builder
}

func (h *executorHarness) do(line string, w *strings.Builder) error {
	cmd, args, err := transcript.Parse(line)
	if err != nil {
		return err
	}
	h.w = w
	before := w.Len()
	var ended bool
	var fail *Fail
	switch cmd {
	case "begin":
		err = h.begin(args)
	case "p2p":
		err = h.p2p(args)
	case "take", "frame":
		var f transport.Frame
		if f, err = h.frame(args); err != nil {
			break
		}
		if cmd == "take" {
			if fail = h.x.take(args.Int("from", -1), f); fail != nil {
				ended = true
			}
		} else {
			ended, fail = h.x.arrive(args.Int("from", -1), f)
		}
	case "start":
		ended, fail = h.x.start()
	case "sent":
		step := args.Int("step", -1)
		switch {
		case h.x.req != nil:
			ended, fail = h.x.sent(step)
		case h.x.drained():
			w.WriteString("drained\n")
		default:
			w.WriteString("still lent\n")
		}
	case "gone":
		peer := args.Int("peer", -1)
		if h.x.needs(peer) {
			ended, fail = true, h.x.lost(peer, errors.New("connection reset"))
		}
	case "fails":
		h.fails[args.Int("peer", -1)] = true
	case "timeout":
		if h.x.movable() {
			w.WriteString("hand-back\n")
		} else {
			ended, fail = true, h.x.stuck()
		}
	case "close":
		if h.x.close() {
			w.WriteString("close lending\n")
		} else {
			w.WriteString("close\n")
		}
	case "state":
		h.state()
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		return err
	}
	if err := args.Unused(); err != nil {
		return err
	}
	if ended {
		h.ended(fail)
	}
	if w.Len() == before {
		w.WriteString("(none)\n")
	}
	return nil
}

// begin sets up an all-reduce.
func (h *executorHarness) begin(args *transcript.Args) error {
	rank, size, count := args.Int("rank", 0), args.Int("size", 2), args.Int("count", 2)
	op := reduce.New(reduce.Sum)
	if args.Text("op", "sum") == "avg" {
		op = reduce.New(reduce.Avg)
	}
	req := &Request{
		Comm: "t", Rank: rank, Op: "all_reduce", Size: size, DType: tensor.Float32, Reduce: op,
		CollSeq: uint64(args.Int("coll", 0)), Timeout: timeoutArg(args),
		In: [][]byte{inputs(rank, count)}, Out: [][]byte{make([]byte, 4*count)},
	}
	spec := algorithms.Spec{
		Kind: algorithms.AllReduce, Rank: rank, Size: size, Counts: []int{count},
		ElemSize: 4, Algorithm: args.Text("algo", "ring"),
	}
	if err := req.Plan(spec); err != nil {
		return err
	}
	if args.Has("maps") {
		req.Memory = &h.mem
	}
	h.start(req, args.Has("lend"), args.Has("maps"))
	return nil
}

// p2p sets up a batch of messages.
func (h *executorHarness) p2p(args *transcript.Args) error {
	rank := args.Int("rank", 0)
	var msgs []Message
	for m := range strings.SplitSeq(args.Text("msgs", ""), ",") {
		dir, rest, _ := strings.Cut(m, ":")
		peer, size, sized := strings.Cut(rest, ":")
		p, n := 0, 8
		_, err := fmt.Sscan(peer, &p)
		if sized && err == nil {
			_, err = fmt.Sscan(size, &n)
		}
		if err != nil || (dir != "send" && dir != "recv") {
			return fmt.Errorf("message %q: want send:P[:BYTES] or recv:P[:BYTES]", m)
		}
		msgs = append(msgs, Message{Peer: p, Send: dir == "send", Bytes: n})
	}
	req := &Request{Comm: "t", Rank: rank, Op: "batch", Size: 4, DType: tensor.Uint8, Timeout: timeoutArg(args)}
	var plans Plans
	plans.PlanMessages(req, rank, req.Size, msgs)
	ordinals := map[[2]int]uint64{}
	for _, m := range msgs {
		dir := 0
		if m.Send {
			dir = 1
		}
		k := [2]int{m.Peer, dir}
		req.P2P = append(req.P2P, P2PMessage{Peer: m.Peer, Send: m.Send, Ordinal: ordinals[k], Tag: 7})
		ordinals[k]++
		if m.Send {
			req.In = append(req.In, inputs(rank, m.Bytes/4))
			req.Out = append(req.Out, nil)
		} else {
			req.In = append(req.In, nil)
			req.Out = append(req.Out, make([]byte, m.Bytes))
		}
	}
	h.start(req, false, false)
	return nil
}

func timeoutArg(args *transcript.Args) (d time.Duration) {
	d, _ = time.ParseDuration(args.Text("timeout", "1s"))
	return d
}

// inputs is rank's input of n float32s: rank*10+j+1.
func inputs(rank, n int) []byte {
	b := make([]byte, 4*n)
	for j := range n {
		binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(float32(rank*10+j+1)))
	}
	return b
}

func (h *executorHarness) start(req *Request, lend, maps bool) {
	h.req, h.fails = req, map[int]bool{}
	h.x.begin(req, h)
	for i := range h.x.borrow {
		h.x.borrow[i], h.x.maps[i] = lend, maps
	}
}

// frame makes the frame a take or frame command describes.
func (h *executorHarness) frame(args *transcript.Args) (transport.Frame, error) {
	hd := transport.Header{Kind: transport.Collective, Seq: h.req.CollSeq, Tag: uint32(args.Int("tag", 0)), Sig: h.req.Sig}
	if h.req.P2P != nil {
		hd.Kind, hd.Tag = transport.PointToPoint, 7
		hd.Seq = uint64(args.Int("ordinal", 0))
	}
	if args.Has("seq") {
		hd.Seq = args.Uint("seq")
	}
	if args.Text("sig", "") == "bad" {
		hd.Sig = Sig(algorithms.Broadcast, tensor.Float32, 0, 0, nil)
	}
	var data []byte
	switch {
	case args.Has("data"):
		for _, v := range args.Ints("data") {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(v)))
		}
	case args.Has("fill"):
		v := math.Float32bits(float32(args.Int("fill", 0)))
		for range args.Int("n", 0) {
			data = binary.LittleEndian.AppendUint32(data, v)
		}
	default:
		data = make([]byte, args.Int("bytes", 0))
	}
	switch {
	case args.Has("announce"):
		return link.Announcement(hd, args.Int("announce", 0)), nil
	case args.Has("read"):
		hd.Tag |= tagRead
		return transport.Frame{Header: hd}, nil
	case args.Has("registered"):
		hd.Tag |= tagRegistered
		return transport.Frame{Header: hd, Payload: h.mem.publish(data)}, nil
	}
	p := transport.GetBuffer(len(data))
	copy(p, data)
	return transport.Frame{Header: hd, Payload: p}, nil
}

// send records f, as the executor's outbox.
func (h *executorHarness) send(p int, f transport.Frame) error {
	peer := h.req.Peers()[p]
	if h.fails[peer] {
		transport.Release(f)
		return errors.New("connection reset")
	}
	tag := f.Header.Tag
	fmt.Fprintf(h.w, "send to=%d tag=%d", peer, tag&^tagMarks)
	switch {
	case f.Header.Kind == transport.PointToPoint && tag&link.TagAnnounce != 0:
		n, _ := link.AnnouncedLength(f.Payload)
		fmt.Fprintf(h.w, " announce bytes=%d", n)
	case f.Header.Kind == transport.PointToPoint && tag&link.TagClear != 0:
		h.w.WriteString(" clear")
	case tag&tagRead != 0:
		h.w.WriteString(" read")
	case tag&tagRegistered != 0:
		fmt.Fprintf(h.w, " registered %s", floats(h.mem.region(f.Payload)))
	case f.Sent != nil:
		fmt.Fprintf(h.w, " lent %s", floats(f.Payload))
	default:
		fmt.Fprintf(h.w, " %s", floats(f.Payload))
	}
	h.w.WriteString("\n")
	if f.Sent == nil {
		transport.PutBuffer(f.Payload)
	}
	return nil
}

// offer records the offer of a large message, as the executor's
// outbox; the peer's clearance, which the plane takes, is not the
// executor's.
func (h *executorHarness) offer(p int, hd transport.Header, data []byte) {
	fmt.Fprintf(h.w, "offer to=%d ordinal=%d tag=%d %s\n", h.req.Peers()[p], hd.Seq, hd.Tag, floats(data))
}

// sentFunc gives lent sends a Sent the test never calls: "sent" stands
// for it.
func (h *executorHarness) sentFunc(int) func() { return func() {} }

func (h *executorHarness) ended(f *Fail) {
	if f == nil {
		for i, out := range h.req.Out {
			if out != nil {
				fmt.Fprintf(h.w, "done out[%d]=%s\n", i, floats(out))
			}
		}
		return
	}
	fmt.Fprintf(h.w, "fail err=%q", f.Err)
	if len(f.Ranks) > 0 {
		fmt.Fprintf(h.w, " ranks=%v", f.Ranks)
	}
	if f.reportFor(h.req) != nil {
		h.w.WriteString(" tell")
	}
	h.w.WriteString("\n")
}

func (h *executorHarness) state() {
	x := &h.x
	fmt.Fprintf(h.w, "waiting for %v\n", x.prog.Waiting(nil))
	fmt.Fprintf(h.w, "steps left %d, lent %d, peers reading %d\n", x.prog.Remaining(), x.lent, x.reads)
	for _, hf := range x.held {
		fmt.Fprintf(h.w, "held step=%d mapped=%v\n", hf.step, x.mapped[hf.step])
	}
}

// floats shows a payload of float32s: their values, or their count and
// first value if there are many.
func floats(b []byte) string {
	n := len(b) / 4
	val := func(i int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])) }
	if n > 8 {
		return fmt.Sprintf("%d×%v…", n, val(0))
	}
	vs := make([]string, n)
	for i := range n {
		vs[i] = fmt.Sprint(val(i))
	}
	return "[" + strings.Join(vs, " ") + "]"
}

// fakeMemory is registered memory in one process: a descriptor is the
// index of a region it was given, its own rank's (Describe) or a peer's
// (publish).
type fakeMemory struct{ regions [][]byte }

func (m *fakeMemory) Describe(b, dst []byte) ([]byte, bool) {
	m.regions = append(m.regions, b)
	return binary.LittleEndian.AppendUint64(dst, uint64(len(m.regions)-1)), true
}

func (m *fakeMemory) Resolve(desc []byte, n int) ([]byte, error) {
	r := m.region(desc)
	if len(r) != n {
		return nil, fmt.Errorf("%w: a descriptor of %d bytes where %d are read", commerr.ErrInvalidArgument, len(r), n)
	}
	return r, nil
}

// publish returns the descriptor of a peer's region holding data.
func (m *fakeMemory) publish(data []byte) []byte {
	desc, _ := m.Describe(data, transport.GetBuffer(8)[:0])
	return desc
}

func (m *fakeMemory) region(desc []byte) []byte {
	return m.regions[binary.LittleEndian.Uint64(desc)]
}
