package rank

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocomms/gocomms/actors/collective"
	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/internal/transcript"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt to what the sequencer does")

// TestSequencer replays the transcripts in testdata (see package
// transcript). A transcript starts with a sequencer of rank 0, which
// "reset" renews. The commands:
//
//	submit seq=N [op=NAME] [p2p]       evSubmit (a collective unless p2p)
//	end seq=N [mismatch=E]             evEnded (failed for a mismatch with E)
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
	for _, file := range transcript.Files(t, "testdata") {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			var h sequencerHarness
			transcript.Run(t, file, *rewrite, h.do)
		})
	}
}

// sequencerHarness drives a sequencer from commands.
type sequencerHarness struct {
	s    sequencer
	acts []action
}

func (h *sequencerHarness) do(line string, w *strings.Builder) error {
	cmd, args, err := transcript.Parse(line)
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
		req := &collective.Request{Seq: args.Uint("seq"), Op: args.Text("op", "all_reduce")}
		if args.Has("p2p") {
			req.P2P = []collective.P2PMessage{{Peer: 1, Send: true}}
		}
		ev = event{kind: evSubmit, req: req}
	case "end":
		ev = event{kind: evEnded, seq: args.Uint("seq")}
		if args.Has("mismatch") {
			ev.err = commerr.Invalid("%s", args.Text("mismatch", ""))
		}
	case "unreachable":
		ev = event{kind: evUnreachable, seq: args.Uint("seq"), rank: args.Int("rank", -1), err: args.Cause("err", "connection refused")}
	case "cancel":
		ev = event{kind: evCancel, seq: args.Uint("seq"), err: args.Cause("err", "context canceled")}
	case "abort":
		ev = event{kind: evAbort, err: commerr.ErrAborted}
		if args.Has("err") {
			ev.err = fmt.Errorf("%w: %s", commerr.ErrAborted, args.Text("err", ""))
		}
	case "finalize":
		ev = event{kind: evFinalize}
	case "closed":
		ev = event{kind: evClosed}
	case "peer-failed":
		ev = event{kind: evPeerFailed, rank: args.Int("rank", -1), err: args.Cause("err", "connection reset")}
	case "bye":
		ev = event{kind: evBye, rank: args.Int("rank", -1)}
	case "peer-reported":
		ev = event{kind: evPeerReported, rank: args.Int("rank", -1), accuser: args.Int("accuser", -1), teller: args.Int("teller", -1)}
	case "revoke":
		ev = event{kind: evRevoke, rank: args.Int("rank", h.s.rank), teller: args.Int("teller", h.s.rank)}
	case "coll-failed":
		rank, reason := args.Int("rank", -1), args.Text("reason", "sizes differ")
		ev = event{kind: evCollFailed, seq: args.Uint("coll"), rank: rank, err: collective.ReportedFailure(rank, collective.FailedMismatch, reason), payload: []byte(reason)}
	case "peer-lost":
		ev = event{kind: evPeerLost, seq: args.Uint("seq"), rank: args.Int("rank", -1), err: args.Cause("err", "connection reset")}
		if args.Has("left-after") {
			ev.err = &link.PeerLeft{Collectives: args.Uint("left-after"), Err: ev.err}
		}
	case "connected":
		ev = event{kind: evConnected, rank: args.Int("rank", -1)}
	case "agree":
		ev = event{kind: evAgree, agree: &Agree{}}
	case "lend":
		ev = event{kind: evLend}
	case "reclaimed":
		ev = event{kind: evReclaimed, seq: args.Uint("coll")}
	case "adopt":
		seq, coll := args.Uint("seq"), args.Uint("coll")
		ev = event{kind: evAdopt, req: &collective.Request{Seq: seq, Op: args.Text("op", "all_reduce"), CollSeq: coll}, seq: coll + 1}
		for i := range uint64(args.Int("queued", 0)) {
			ev.queued = append(ev.queued, &collective.Request{Seq: seq + 1 + i, Op: "all_reduce", CollSeq: coll + 1 + i})
		}
	default:
		return fmt.Errorf("unknown command %q", cmd)
	}
	if err := args.Unused(); err != nil {
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

func (h *sequencerHarness) state(w *strings.Builder) {
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
