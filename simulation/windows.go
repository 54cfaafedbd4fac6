package simulation

import (
	"encoding/binary"
	"fmt"

	"github.com/gocomms/gocomms"
)

// The one-sided phase of a run (Config.Windows), through the public API:
// rank i opens a window of one int64 and one signal slot, puts
// windowValue(i) into the next rank's with a signal, and waits for the
// previous rank's signal, after which its window must hold the previous
// rank's value.

func windowValue(rank int) int64 { return int64(rank)*7 + 1 }

// openWindow runs rank i's one-sided phase.
func (r *run) openWindow(i int) {
	c := r.comms[i]
	c.NewWindowAsync(8, func(w *gocomms.Window, err error) {
		if err != nil {
			r.windowEnded(i, err)
			return
		}
		n := c.Size()
		next, prev := (i+1)%n, (i+n-1)%n
		put := w.PutSignalAsync(gocomms.FromSlice([]int64{windowValue(i)}), next, 0, 0, gocomms.SignalAdd, 1)
		w.WaitSignalAsync(0, gocomms.SignalGE, 1, func(_ uint64, err error) {
			if err == nil {
				if got := int64(binary.NativeEndian.Uint64(w.Tensor().Bytes())); got != windowValue(prev) {
					r.wrong = append(r.wrong, fmt.Sprintf("rank %d: its window holds %d after rank %d's signal, want %d", i, got, prev, windowValue(prev)))
				}
			}
			if err == nil && put.Status() == gocomms.Failed {
				err = put.Err()
			}
			r.windowEnded(i, err)
		})
	}, gocomms.WindowSignals(1))
}

// windowEnded records how rank i's one-sided phase ended, once.
func (r *run) windowEnded(i int, err error) {
	if r.net.crashed[i] || r.windowEnds[i].ended {
		return
	}
	r.windowEnds[i] = opEnd{ended: true, err: err}
	r.last = max(r.last, r.loop.Elapsed())
}
