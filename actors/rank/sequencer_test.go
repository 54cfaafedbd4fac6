package rank

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt to what the sequencer does")

// TestSequencer replays the transcripts in testdata. Each is a list of
// blocks, each a command, or several, one a line, then "----" and the
// actions the sequencer takes, one a line, ended by a blank line; lines
// starting with # are comments. A transcript starts with a sequencer of
// rank 0, which "reset" renews. The commands:
//
//	submit seq=N [op=NAME] [p2p]       evSubmit (a collective unless p2p)
//	end seq=N                          evEnded
//	unreachable seq=N rank=R [err=E]   evUnreachable
//	cancel seq=N [err=E]               evCancel
//	abort [err=E]                      evAbort (ErrAborted by default)
//	finalize                           evFinalize
//	closed                             evClosed
//	peer-failed rank=R [err=E]         evPeerFailed
//	bye rank=R                         evBye
//	peer-reported rank=R accuser=A teller=T
//	                                   evPeerReported
//	revoke [rank=R teller=T]           evRevoke (by this rank by default)
//	coll-failed coll=C rank=R reason=E evCollFailed
//	peer-lost seq=N rank=R [err=E]     evPeerLost
//	connected rank=R                   evConnected
//	agree                              evAgree
//	state                              prints what the sequencer holds
//
// Values with spaces are quoted, as Go strings. With -rewrite, the test
// writes what the sequencer does as the expected output instead.
func TestSequencer(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runTranscript(t, file)
		})
	}
}

func runTranscript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h transcript
	var out bytes.Buffer // the transcript as rewritten
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		return sc.Text(), true
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if l == "" || strings.HasPrefix(l, "#") {
			out.WriteString(l + "\n")
			continue
		}
		start := line
		var cmds, got strings.Builder
		for ; ok && l != "----"; l, ok = next() {
			out.WriteString(l + "\n")
			cmds.WriteString(l + "\n")
			if err := h.do(l, &got); err != nil {
				t.Fatalf("%s:%d: %v", file, line, err)
			}
		}
		if !ok {
			t.Fatalf("%s:%d: the block has no ----", file, start)
		}
		out.WriteString("----\n")
		var want strings.Builder
		for l, ok = next(); ok && l != ""; l, ok = next() {
			want.WriteString(l + "\n")
		}
		out.WriteString(got.String())
		if ok {
			out.WriteString("\n")
		}
		if !*rewrite && got.String() != want.String() {
			t.Errorf("%s:%d:\n%sgot:\n%swant:\n%s", file, start, cmds.String(), got.String(), want.String())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// transcript drives a sequencer from commands.
type transcript struct {
	s    sequencer
	acts []action
}

func (h *transcript) do(line string, w *strings.Builder) error {
	cmd, args, err := parseCommand(line)
	if err != nil {
		return err
	}
	ev := event{}
	switch cmd {
	case "reset":
		h.s = sequencer{}
		w.WriteString("(none)\n")
		return nil
	case "state":
		h.state(w)
		return nil
	case "submit":
		req := &collective.Request{Seq: args.seqNum("seq"), Op: args.text("op", "all_reduce")}
		if args.has("p2p") {
			req.P2P = []collective.P2PMessage{{Peer: 1, Send: true}}
		}
		ev = event{kind: evSubmit, req: req}
	case "end":
		ev = event{kind: evEnded, seq: args.seqNum("seq")}
	case "unreachable":
		ev = event{kind: evUnreachable, seq: args.seqNum("seq"), rank: args.number("rank", -1), err: args.cause("err", "connection refused")}
	case "cancel":
		ev = event{kind: evCancel, seq: args.seqNum("seq"), err: args.cause("err", "context canceled")}
	case "abort":
		ev = event{kind: evAbort, err: commerr.ErrAborted}
		if args.has("err") {
			ev.err = fmt.Errorf("%w: %s", commerr.ErrAborted, args.text("err", ""))
		}
	case "finalize":
		ev = event{kind: evFinalize}
	case "closed":
		ev = event{kind: evClosed}
	case "peer-failed":
		ev = event{kind: evPeerFailed, rank: args.number("rank", -1), err: args.cause("err", "connection reset")}
	case "bye":
		ev = event{kind: evBye, rank: args.number("rank", -1)}
	case "peer-reported":
		ev = event{kind: evPeerReported, rank: args.number("rank", -1), accuser: args.number("accuser", -1), teller: args.number("teller", -1)}
	case "revoke":
		ev = event{kind: evRevoke, rank: args.number("rank", h.s.rank), teller: args.number("teller", h.s.rank)}
	case "coll-failed":
		rank, reason := args.number("rank", -1), args.text("reason", "sizes differ")
		ev = event{kind: evCollFailed, seq: args.seqNum("coll"), rank: rank, err: collective.ReportedFailure(rank, collective.FailedMismatch, reason), payload: []byte(reason)}
	case "peer-lost":
		ev = event{kind: evPeerLost, seq: args.seqNum("seq"), rank: args.number("rank", -1), err: args.cause("err", "connection reset")}
		if args.has("left-after") {
			ev.err = &link.PeerLeft{Collectives: args.seqNum("left-after"), Err: ev.err}
		}
	case "connected":
		ev = event{kind: evConnected, rank: args.number("rank", -1)}
	case "agree":
		ev = event{kind: evAgree, agree: &Agree{}}
	case "lend":
		ev = event{kind: evLend}
	case "reclaimed":
		ev = event{kind: evReclaimed, seq: args.seqNum("coll")}
	case "adopt":
		seq, coll := args.seqNum("seq"), args.seqNum("coll")
		ev = event{kind: evAdopt, req: &collective.Request{Seq: seq, Op: args.text("op", "all_reduce"), CollSeq: coll}, seq: coll + 1}
		for i := range uint64(args.number("queued", 0)) {
			ev.queued = append(ev.queued, &collective.Request{Seq: seq + 1 + i, Op: "all_reduce", CollSeq: coll + 1 + i})
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	if err := args.unused(); err != nil {
		return err
	}
	h.acts = h.s.step(ev, h.acts[:0])
	if len(h.acts) == 0 {
		w.WriteString("(none)\n")
	}
	for _, a := range h.acts {
		w.WriteString(a.String())
		w.WriteByte('\n')
	}
	return nil
}

func (h *transcript) state(w *strings.Builder) {
	s := &h.s
	fmt.Fprintf(w, "collectives started: %d\n", s.collSeq)
	if s.running != nil {
		fmt.Fprintf(w, "running: %d\n", s.running.Seq)
	}
	if s.queue.Len() > 0 {
		w.WriteString("queued:")
		for i := range s.queue.Len() {
			fmt.Fprintf(w, " %d", s.queue.At(i).Seq)
		}
		w.WriteString("\n")
	}
	if err := s.usable(); err != nil {
		fmt.Fprintf(w, "refuses: %q\n", err)
	}
	for _, flag := range []struct {
		name string
		on   bool
	}{{"revoked", s.revoked}, {"closing", s.closing}, {"finalized", s.finalized}} {
		if flag.on {
			w.WriteString(flag.name + "\n")
		}
	}
}

// String writes a as a transcript line: its kind, then its fields that
// kind uses.
func (a action) String() string {
	var b strings.Builder
	seq := func() {
		fmt.Fprintf(&b, " seq=%d", a.req.Seq)
		if a.req.P2P == nil {
			fmt.Fprintf(&b, " coll=%d", a.req.CollSeq)
		} else {
			b.WriteString(" p2p")
		}
	}
	failure := func() {
		fmt.Fprintf(&b, " err=%q", a.err)
		if len(a.ranks) > 0 {
			fmt.Fprintf(&b, " ranks=%v", a.ranks)
		}
		if a.canceled {
			b.WriteString(" canceled")
		}
		if a.tell {
			b.WriteString(" tell")
		}
		if a.forward != nil {
			fmt.Fprintf(&b, " forward=%q", a.forward)
		}
	}
	switch a.kind {
	case actStart:
		b.WriteString("start")
		seq()
	case actRefuse:
		b.WriteString("refuse")
		seq()
		failure()
	case actFail:
		fmt.Fprintf(&b, "fail seq=%d", a.seq)
		failure()
	case actReject:
		fmt.Fprintf(&b, "reject seq=%d", a.req.Seq)
		failure()
	case actRelease:
		fmt.Fprintf(&b, "release seq=%d", a.req.Seq)
	case actRevokeWindows:
		fmt.Fprintf(&b, "revoke-windows err=%q", a.err)
	case actFailAgreement:
		fmt.Fprintf(&b, "fail-agreement err=%q", a.err)
	case actStartAgreement:
		b.WriteString("start-agreement")
	case actRefuseAgreement:
		fmt.Fprintf(&b, "refuse-agreement err=%q", a.err)
	case actSpreadFailure:
		fmt.Fprintf(&b, "spread-failure rank=%d accuser=%d skip=%d", a.rank, a.accuser, a.skip)
	case actSpreadRevoke:
		fmt.Fprintf(&b, "spread-revoke rank=%d skip=%d", a.rank, a.skip)
	case actConnect:
		fmt.Fprintf(&b, "connect rank=%d", a.rank)
	case actHangUp:
		fmt.Fprintf(&b, "hang-up rank=%d", a.rank)
	case actCloseLinks:
		fmt.Fprintf(&b, "close-links coll=%d", a.seq)
	case actStopLinks:
		b.WriteString("stop-links")
	case actFinalized:
		b.WriteString("finalized")
	case actLend:
		fmt.Fprintf(&b, "lend coll=%d", a.seq)
	case actAdopt:
		fmt.Fprintf(&b, "adopt seq=%d coll=%d", a.req.Seq, a.req.CollSeq)
	default:
		fmt.Fprintf(&b, "action(%d)", a.kind)
	}
	return b.String()
}

// commandArgs are a command's key=value arguments; a bare key has an
// empty value.
type commandArgs struct {
	vals map[string]string
	used map[string]bool
	err  error
}

// parseCommand splits a command line into its name and arguments.
func parseCommand(line string) (string, *commandArgs, error) {
	args := &commandArgs{vals: map[string]string{}, used: map[string]bool{}}
	var name string
	for rest := strings.TrimSpace(line); rest != ""; rest = strings.TrimLeft(rest, " ") {
		var tok string
		i := strings.IndexAny(rest, " \"")
		switch {
		case i < 0:
			tok, rest = rest, ""
		case rest[i] == '"':
			q, err := strconv.QuotedPrefix(rest[i:])
			if err != nil {
				return "", nil, fmt.Errorf("%q: %v", rest, err)
			}
			v, _ := strconv.Unquote(q)
			tok, rest = rest[:i]+v, rest[i+len(q):]
		default:
			tok, rest = rest[:i], rest[i:]
		}
		if name == "" {
			name = tok
			continue
		}
		k, v, _ := strings.Cut(tok, "=")
		args.vals[k] = v
	}
	return name, args, nil
}

func (a *commandArgs) has(key string) bool {
	a.used[key] = true
	_, ok := a.vals[key]
	return ok
}

func (a *commandArgs) text(key, def string) string {
	if a.has(key) {
		return a.vals[key]
	}
	return def
}

func (a *commandArgs) number(key string, def int) int {
	if !a.has(key) {
		return def
	}
	n, err := strconv.Atoi(a.vals[key])
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %v", key, err)
	}
	return n
}

func (a *commandArgs) seqNum(key string) uint64 {
	n, err := strconv.ParseUint(a.vals[key], 10, 64)
	a.used[key] = true
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s: %v", key, err)
	}
	return n
}

func (a *commandArgs) cause(key, def string) error { return errors.New(a.text(key, def)) }

// unused reports an argument the command did not take, or one it could
// not read.
func (a *commandArgs) unused() error {
	if a.err != nil {
		return a.err
	}
	for k := range a.vals {
		if !a.used[k] {
			return fmt.Errorf("unknown argument %q", k)
		}
	}
	return nil
}
