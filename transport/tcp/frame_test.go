package tcp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/transport"
)

// checkEnd checks that a connection ended with an error that wraps
// transport.ErrClosed and want, names the peer at peerAddr, and mentions
// each of words; and that the frames before it are frames 0..n-1.
func checkEnd(t *testing.T, frames []transport.Frame, err error, n int, want error, peerAddr string, words ...string) {
	t.Helper()
	t.Log(err)
	if !errors.Is(err, transport.ErrClosed) {
		t.Errorf("HandleError got %v, want an error wrapping ErrClosed", err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Errorf("HandleError got %v, want an error wrapping %v", err, want)
	}
	for _, w := range append(words, peerAddr) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("HandleError got %q, want it to mention %q", err, w)
		}
	}
	if len(frames) != n {
		t.Fatalf("%d frames before HandleError, want %d", len(frames), n)
	}
	for i, f := range frames {
		if f.Header != testHeader(i) || !bytes.Equal(f.Payload, payloadOf(i)) {
			t.Errorf("frame %d arrived as %+v with %d bytes", i, f.Header, len(f.Payload))
		}
	}
}

func payloadOf(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 100+i) }

// goodFrames encodes frames 0..n-1.
func goodFrames(n int) []byte {
	var b []byte
	for i := range n {
		b = appendFrame(b, testHeader(i), payloadOf(i))
	}
	return b
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func TestCorruptPayload(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	bad := appendFrame(nil, testHeader(2), payloadOf(2))
	bad[headerLen+10] ^= 0x04 // one bit of the payload, in flight
	if _, err := raw.Write(append(goodFrames(2), bad...)); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 2, ErrChecksum, raw.LocalAddr().String(), "frame 2", "payload CRC32C")
}

func TestCorruptHeader(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	bad := appendFrame(nil, testHeader(1), payloadOf(1))
	bad[33] ^= 0x80 // the length's second byte: believed, it would misframe the stream
	if _, err := raw.Write(append(goodFrames(1), bad...)); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 1, ErrChecksum, raw.LocalAddr().String(), "frame 1", "header CRC32C")
}

func TestReservedBits(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	var hdr [headerLen]byte
	putHeader(hdr[:], testHeader(0), 0, 0, true)
	hdr[2] = 1
	binary.LittleEndian.PutUint32(hdr[40:], crcOf(hdr[:40]))
	if _, err := raw.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 0, ErrProtocol, raw.LocalAddr().String(), "reserved")
}

// TestOversizedFrame: a length over the limit fails the connection before
// anything is allocated for it.
func TestOversizedFrame(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	var hdr [headerLen]byte
	putHeader(hdr[:], testHeader(1), 0, 0, true)
	binary.LittleEndian.PutUint32(hdr[32:], 0xFFFF_FFF0) // 4 GiB announced, 1 GiB allowed
	binary.LittleEndian.PutUint32(hdr[40:], crcOf(hdr[:40]))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := raw.Write(append(goodFrames(1), hdr[:]...)); err != nil {
		t.Fatal(err)
	}
	frames, err := r.waitError(t)
	runtime.ReadMemStats(&after)
	checkEnd(t, frames, err, 1, ErrTooLarge, raw.LocalAddr().String(), "4294967280 bytes")
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("the process allocated %d bytes while refusing the frame", grew)
	}
}

// TestPeerHangsUpMidFrame: a peer that stops inside a frame is reported
// after the frames it completed, and the partial frame is never delivered.
func TestPeerHangsUpMidFrame(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	partial := appendFrame(nil, testHeader(3), payloadOf(3))
	if _, err := raw.Write(append(goodFrames(3), partial[:headerLen+5]...)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 3, io.ErrUnexpectedEOF, raw.LocalAddr().String(), "cut short")
}

func TestPeerCloses(t *testing.T) {
	_, l := listen(t)
	raw, c, r := rawPeer(t, l)
	if _, err := raw.Write(goodFrames(5)); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 5, nil, raw.LocalAddr().String(), "closed by the peer")
	if err := c.Send(transport.Frame{}); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after the peer closed: %v, want ErrClosed", err)
	}
}

// TestPeerResets: a connection reset (what a peer's kernel sends when the
// peer dies with unread data) is reported after the frames before it.
func TestPeerResets(t *testing.T) {
	_, l := listen(t)
	raw, _, r := rawPeer(t, l)
	if _, err := raw.Write(goodFrames(4)); err != nil {
		t.Fatal(err)
	}
	r.waitFrames(t, 4)
	raw.(*net.TCPConn).SetLinger(0) // Close now sends RST, not FIN
	raw.Close()
	frames, err := r.waitError(t)
	checkEnd(t, frames, err, 4, nil, raw.LocalAddr().String())
}

// trickle hands out its bytes in drawn pieces, each read failing first
// with errWouldBlock as often as drawn: a socket read without blocking.
type trickle struct {
	t    *rapid.T
	data []byte
}

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if rapid.Bool().Draw(r.t, "nothing yet") {
		return 0, errWouldBlock
	}
	n := min(len(p), len(r.data), rapid.IntRange(1, 64).Draw(r.t, "piece"))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// TestFrameReaderResumes: a stream read in pieces, with reads that find
// nothing between them, decodes to the same frames as one read whole, each
// frame's progress kept across the reads that found nothing.
func TestFrameReaderResumes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var stream []byte
		var want []transport.Frame
		for i := range rapid.IntRange(0, 8).Draw(t, "frames") {
			h := testHeader(i)
			p := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "payload")
			checked := rapid.Bool().Draw(t, "checked")
			stream = appendFrameAs(stream, h, p, checked)
			want = append(want, transport.Frame{Header: h, Payload: p})
		}
		r := &trickle{t: t, data: stream}
		fr := frameReader{r: bufio.NewReaderSize(r, 16), max: 1 << 20, again: func(err error) bool { return errors.Is(err, errWouldBlock) }}
		var got []transport.Frame
		for {
			f, err := fr.next()
			if errors.Is(err, errWouldBlock) {
				continue
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("after %d frames: %v", len(got), err)
			}
			got = append(got, f)
		}
		if len(got) != len(want) {
			t.Fatalf("%d frames decoded, %d sent", len(got), len(want))
		}
		for i := range want {
			if got[i].Header != want[i].Header || !bytes.Equal(got[i].Payload, want[i].Payload) {
				t.Fatalf("frame %d: got %+v %x, want %+v %x", i, got[i].Header, got[i].Payload, want[i].Header, want[i].Payload)
			}
		}
	})
}
