package launch

import (
	"bufio"
	"io"
	"sync"
)

// A lineWriter writes the ranks' output a whole line per Write, under one
// lock for stdout and stderr alike, so that lines from different ranks
// never interleave even when both streams go to the same writer.
type lineWriter struct {
	mu sync.Mutex
}

// copy relays r to w line by line, each line prefixed, until reading r
// fails: at end of file, or when its deadline passes. A last line without
// a newline is given one. Lines of any length pass whole.
func (l *lineWriter) copy(w io.Writer, r io.Reader, prefix string) {
	br := bufio.NewReader(r)
	line := []byte(prefix)
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(line) > len(prefix) {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			// A write error is ignored and reading goes on, so that the
			// rank never blocks on a full pipe.
			l.mu.Lock()
			w.Write(line)
			l.mu.Unlock()
		}
		if err != nil {
			return
		}
		line = line[:len(prefix)]
	}
}
