package rdma

import (
	"bytes"
	"errors"
	"testing"

	"github.com/gocomms/gocomms/rdma/verbs"
)

var wireQP = verbs.Endpoint{QPN: 0x12345, PSN: 0xabcdef, LID: 0, GID: verbs.GID{0xfe, 0x80, 15: 1},
	Port: 1, GIDIndex: 3, MTU: verbs.MTU4096, RdAtomic: 16}

// TestVerbsWire encodes every message of the verbs side channel, decodes
// it back, and checks that decoders refuse what breaks the format.
func TestVerbsWire(t *testing.T) {
	h := verbsHello{hello: hello{version: verbsProtocol.version, to: 1, from: 2}, qp: wireQP}
	for _, h := range []verbsHello{h, {hello: hello{version: 1, to: 3}, qp: wireQP, paired: wireQP}} {
		var b [verbsHelloLen]byte
		if err := putVerbsHello(&b, h); err != nil {
			t.Fatal(err)
		}
		if got, err := parseVerbsHello(&b); err != nil || got != h {
			t.Fatalf("hello %+v came back as %+v, %v", h, got, err)
		}
	}
	for _, a := range []verbsAnswer{
		{version: 1, verdict: answerAccepted, qp: wireQP, notify: notifyTarget{addr: 0x1000, rkey: 7}},
		{version: 1, verdict: answerBusy},
		{version: 9, verdict: answerVersion},
		{version: 1, verdict: answerQPFailed},
	} {
		var b [verbsAnswerLen]byte
		if err := putVerbsAnswer(&b, a); err != nil {
			t.Fatal(err)
		}
		if got, err := parseVerbsAnswer(&b); err != nil || got != a {
			t.Fatalf("answer %+v came back as %+v, %v", a, got, err)
		}
	}
	good := []struct {
		m        ctl
		toDialer bool
	}{
		{ctl{kind: ctlResolve, key: 5}, false},
		{ctl{kind: ctlReleased, key: 5}, false},
		{ctl{kind: ctlResolved, key: 5, rkey: 9, addr: 4096, n: 100}, true},
		{ctl{kind: ctlResolved, key: 5, status: resolvedUnregistered}, true},
		{ctl{kind: ctlResolved, key: 5, status: resolvedRefused}, true},
		{ctl{kind: ctlRevoke, key: 5}, true},
		{ctl{kind: ctlCredit, n: verbsRecvDepth}, true},
	}
	for _, c := range good {
		var b [ctlLen]byte
		putCtl(&b, c.m)
		if got, err := parseCtl(&b, c.toDialer); err != nil || got != c.m {
			t.Fatalf("message %+v came back as %+v, %v", c.m, got, err)
		}
		if _, err := parseCtl(&b, !c.toDialer); !errors.Is(err, errProtocol) {
			t.Errorf("message %+v accepted going the wrong way", c.m)
		}
	}
	for name, m := range map[string]ctl{
		"key 0":                    {kind: ctlResolve},
		"unknown kind":             {kind: 9, key: 5},
		"resolve with an rkey":     {kind: ctlResolve, key: 5, rkey: 1},
		"refusal with a range":     {kind: ctlResolved, key: 5, status: resolvedUnregistered, n: 8},
		"unknown status":           {kind: ctlResolved, key: 5, status: 7},
		"range that wraps":         {kind: ctlResolved, key: 5, addr: 1<<64 - 8, n: 16},
		"credit of nothing":        {kind: ctlCredit},
		"credit of too much":       {kind: ctlCredit, n: verbsRecvDepth + 1},
		"credit with a key":        {kind: ctlCredit, key: 5, n: 1},
		"revocation with a length": {kind: ctlRevoke, key: 5, n: 1},
	} {
		var b [ctlLen]byte
		putCtl(&b, m)
		_, err1 := parseCtl(&b, true)
		_, err2 := parseCtl(&b, false)
		if !errors.Is(err1, errProtocol) || !errors.Is(err2, errProtocol) {
			t.Errorf("%s: %+v accepted (%v, %v)", name, m, err1, err2)
		}
	}
	var b [verbsHelloLen]byte
	putVerbsHello(&b, h)
	for name, mutate := range map[string]func(*[verbsHelloLen]byte){
		"magic":            func(b *[verbsHelloLen]byte) { b[0] = 'X' },
		"reserved":         func(b *[verbsHelloLen]byte) { b[12] = 1 },
		"tail":             func(b *[verbsHelloLen]byte) { b[verbsHelloLen-1] = 1 },
		"no queue pair":    func(b *[verbsHelloLen]byte) { clear(b[32:64]) },
		"bad paired bytes": func(b *[verbsHelloLen]byte) { b[64] = 'V' },
	} {
		c := b
		mutate(&c)
		if _, err := parseVerbsHello(&c); !errors.Is(err, errProtocol) {
			t.Errorf("hello with a bad %s: %v", name, err)
		}
	}
	var ab [verbsAnswerLen]byte
	putVerbsAnswer(&ab, verbsAnswer{version: 1, verdict: answerBusy})
	ab[20] = 1 // a queue pair with a refusal
	if _, err := parseVerbsAnswer(&ab); !errors.Is(err, errProtocol) {
		t.Errorf("refusal carrying a queue pair: %v", err)
	}
}

// FuzzVerbsWire feeds arbitrary bytes to the verbs side channel's
// decoders: none panics, and what they accept encodes back to the same
// bytes.
func FuzzVerbsWire(f *testing.F) {
	var hb [verbsHelloLen]byte
	putVerbsHello(&hb, verbsHello{hello: hello{version: 1, to: 1}, qp: wireQP, paired: wireQP})
	f.Add(hb[:])
	var ab [verbsAnswerLen]byte
	putVerbsAnswer(&ab, verbsAnswer{version: 1, qp: wireQP, notify: notifyTarget{addr: 8, rkey: 1}})
	f.Add(ab[:])
	var cb [ctlLen]byte
	putCtl(&cb, ctl{kind: ctlResolved, key: 5, rkey: 9, addr: 4096, n: 100})
	f.Add(cb[:])
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= verbsHelloLen {
			b := [verbsHelloLen]byte(data)
			if h, err := parseVerbsHello(&b); err == nil && h.version == verbsProtocol.version {
				var again [verbsHelloLen]byte
				if err := putVerbsHello(&again, h); err != nil || again != b {
					t.Fatalf("hello %+v encodes to %x, %v; was %x", h, again, err, b)
				}
			}
		}
		if len(data) >= verbsAnswerLen {
			b := [verbsAnswerLen]byte(data)
			if a, err := parseVerbsAnswer(&b); err == nil {
				var again [verbsAnswerLen]byte
				if err := putVerbsAnswer(&again, a); err != nil || again != b {
					t.Fatalf("answer %+v encodes to %x, %v; was %x", a, again, err, b)
				}
			}
		}
		for off := 0; off+ctlLen <= len(data); off += ctlLen {
			b := [ctlLen]byte(data[off:])
			for _, toDialer := range []bool{false, true} {
				if m, err := parseCtl(&b, toDialer); err == nil {
					var again [ctlLen]byte
					putCtl(&again, m)
					if !bytes.Equal(again[:], b[:]) {
						t.Fatalf("message %+v encodes to %x; was %x", m, again, b)
					}
				}
			}
		}
	})
}
