package flight

import (
	"encoding/json"
	"fmt"
	"io"
)

// Dump is one communicator's flight record, as a dump writes it.
type Dump struct {
	Comm     string  `json:"comm"`
	Rank     int     `json:"rank"`
	Size     int     `json:"size"`
	Ranks    []int   `json:"ranks"` // the global rank of each member, by rank
	Backend  string  `json:"backend"`
	Capacity int     `json:"capacity"`
	Dropped  uint64  `json:"dropped"` // entries overwritten so far
	Entries  []Entry `json:"entries"` // oldest first
}

// WriteDump writes d to w as one line of JSON.
func WriteDump(w io.Writer, d Dump) error { return writeJSONLine(w, d) }

// WriteDumps writes dumps to w as one line of JSON: an array.
func WriteDumps(w io.Writer, dumps []Dump) error { return writeJSONLine(w, dumps) }

// writeJSONLine writes v in one Write, so that a dump does not interleave
// with other output to the same stream.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("gocomms: flight record: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("gocomms: flight record: %w", err)
	}
	return nil
}
