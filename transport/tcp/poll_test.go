package tcp

import (
	"testing"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// TestPollersAndReaderShareTheSocket: frames reach the handler once each
// and in order whether a waiting goroutine polls for them, the reader
// goroutine reads them, or the reading passes from one to the other
// mid-stream, a poller taking it from a reader blocked in a read.
func TestPollersAndReaderShareTheSocket(t *testing.T) {
	_, l := listen(t)
	raw, c, r := rawPeer(t, l)
	p := c.(transport.Poller)
	const rounds = 200
	sent := 0
	send := func(k int) {
		var b []byte
		for range k {
			b = appendFrame(b, testHeader(sent), []byte{byte(sent)})
			sent++
		}
		if _, err := raw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rounds {
		switch i % 4 {
		case 0: // the reader goroutine reads
			send(3)
			r.waitFrames(t, sent)
		case 1, 2: // a poller waits for frames sent meanwhile
			p.Polling(true)
			p.Poll() // the reader goroutine may be blocked in a read: kicked
			want := sent + 2
			send(1)
			p.Poll()
			send(1)
			deadline := time.Now().Add(waitTimeout)
			for r.count() < want {
				p.Poll()
				if time.Now().After(deadline) {
					t.Fatalf("round %d: %d of %d frames after %v of polling", i, r.count(), want, waitTimeout)
				}
			}
			if i%4 == 1 {
				p.Paused()
			} else {
				p.Polling(false)
			}
		case 3: // frames come while nothing polls, in the linger or after
			send(2)
			r.waitFrames(t, sent)
		}
	}
	frames := r.snapshot()
	for i, f := range frames {
		if f.Header != testHeader(i) || len(f.Payload) != 1 || f.Payload[0] != byte(i) {
			t.Fatalf("frame %d is %+v %x", i, f.Header, f.Payload)
		}
	}
}
