package tcp

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/gocomms/gocomms/transport"
)

// FuzzDecode feeds arbitrary bytes to the decoders a listener and a
// connection run on what peers send: the preface, then frames. They must
// never panic, and whatever they accept must be exactly what the encoder
// writes for it, so that no two byte strings decode to the same frames.
//
//	go test -run XXX -fuzz FuzzDecode ./transport/tcp
func FuzzDecode(f *testing.F) {
	valid := appendPreface(nil, []byte("rank 3"))
	valid = appendFrame(valid, testHeader(1), []byte("payload"))
	valid = appendFrame(valid, transport.Header{}, nil)
	valid = appendFrameAs(valid, testHeader(2), []byte("unchecked"), false)
	f.Add(valid)
	f.Add(appendPreface(nil, nil))
	f.Add(valid[:len(valid)-3])
	corrupt := bytes.Clone(valid)
	corrupt[len(corrupt)-headerLen-1] ^= 1
	f.Add(corrupt)
	f.Add(appendAnswer(nil, statusAccepted))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) >= answerLen {
			parseAnswer((*[answerLen]byte)(data))
		}
		r := bytes.NewReader(data)
		hello, err := readPreface(r)
		if err != nil {
			return
		}
		if want := appendPreface(nil, hello); !bytes.HasPrefix(data, want) {
			t.Fatalf("preface %x accepted, but it encodes as %x", data[:len(want)], want)
		}
		rest := data[len(data)-r.Len():]
		fr := frameReader{r: bufio.NewReaderSize(r, 16), max: 1 << 20}
		var got []byte
		for {
			fm, err := fr.next()
			if err != nil {
				break
			}
			checked := rest[len(got)+1] == 0 // the flags of the header just decoded
			got = appendFrameAs(got, fm.Header, fm.Payload, checked)
			transport.PutBuffer(fm.Payload)
		}
		if !bytes.HasPrefix(rest, got) {
			t.Fatalf("frames accepted from %x encode as %x", rest[:min(len(rest), len(got))], got)
		}
	})
}
