package simulation

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"
	"time"
)

// chromeTrace writes a run's timeline in the Chrome trace event format,
// which Perfetto and chrome://tracing open: one process per rank, with a
// track of its operations and a track of the frames it sends (each from
// the moment it is sent to the moment its last byte lands), and the
// faults as instants across the whole job. Times are virtual microseconds.
type chromeTrace struct {
	w      *bufio.Writer
	events int
	err    error
	starts [][]time.Duration // by rank, by iteration: when the operation started
}

// The tracks of a rank's process.
const (
	opsTrack    = 1
	framesTrack = 2
)

func newChromeTrace(w io.Writer, ranks, iterations int) *chromeTrace {
	c := &chromeTrace{w: bufio.NewWriterSize(w, 1<<16), starts: make([][]time.Duration, ranks)}
	for r := range c.starts {
		c.starts[r] = make([]time.Duration, iterations)
	}
	c.write(`{"displayTimeUnit":"ns","traceEvents":[`)
	for r := range ranks {
		c.event(chromeEvent{Name: "process_name", Ph: "M", Pid: r, Args: map[string]any{"name": "rank " + strconv.Itoa(r)}})
		c.event(chromeEvent{Name: "thread_name", Ph: "M", Pid: r, Tid: opsTrack, Args: map[string]any{"name": "operations"}})
		c.event(chromeEvent{Name: "thread_name", Ph: "M", Pid: r, Tid: framesTrack, Args: map[string]any{"name": "frames sent"}})
	}
	return c
}

// chromeEvent is one event of the format; Ts and Dur are microseconds.
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func (c *chromeTrace) write(s string) {
	if c.err == nil {
		_, c.err = c.w.WriteString(s)
	}
}

func (c *chromeTrace) event(e chromeEvent) {
	b, err := json.Marshal(e)
	if err != nil {
		c.err = err
		return
	}
	if c.events > 0 {
		c.write(",\n")
	}
	c.events++
	c.write(string(b))
}

// frame records a frame of size bytes from rank a to b, sent at sent and
// landing at arrival.
func (c *chromeTrace) frame(a, b, size int, sent, arrival time.Duration) {
	c.event(chromeEvent{
		Name: "to " + strconv.Itoa(b), Cat: "frame", Ph: "X", Ts: micros(sent), Dur: micros(arrival - sent),
		Pid: a, Tid: framesTrack, Args: map[string]any{"bytes": size},
	})
}

func (c *chromeTrace) started(rank, it int, at time.Duration) { c.starts[rank][it] = at }

// ended records rank's operation it, from its start to at.
func (c *chromeTrace) ended(rank, it int, op string, at time.Duration, err error) {
	e := chromeEvent{Name: op + " #" + strconv.Itoa(it), Cat: "op", Ph: "X", Pid: rank, Tid: opsTrack}
	e.Ts = micros(c.starts[rank][it])
	e.Dur = micros(at - c.starts[rank][it])
	if err != nil {
		e.Args = map[string]any{"error": err.Error()}
	}
	c.event(e)
}

// fault records a fault striking at at.
func (c *chromeTrace) fault(f Fault, at time.Duration) {
	c.event(chromeEvent{Name: f.String(), Cat: "fault", Ph: "i", S: "g", Ts: micros(at)})
}

// close ends the document and reports the first write error.
func (c *chromeTrace) close() error {
	c.write("]}\n")
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.err
}
