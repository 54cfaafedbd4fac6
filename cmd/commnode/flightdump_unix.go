//go:build unix

package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/gocomms/gocomms"
)

// relayedSignals are the signals commnode launch passes on to its ranks
// and keeps running: SIGUSR1, for their flight records.
func relayedSignals() []os.Signal { return []os.Signal{syscall.SIGUSR1} }

// dumpFlightRecordsOnSignal writes the flight record of every live
// communicator to w, as one line of JSON, each time the process gets
// SIGUSR1, until stop is called: an operator's view of what a stuck rank
// was doing, without ending it. With TORCHCOMM_FR_DUMP_TEMP_FILE set, the
// records also go to the file of each rank (gocomms.FlightRecordFile),
// where commnode fr-trace reads them.
func dumpFlightRecordsOnSignal(w io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-sigs:
				if err := gocomms.DumpFlightRecords(w); err != nil {
					fmt.Fprintln(w, "commnode:", err)
				}
				if err := gocomms.DumpFlightRecordFiles(); err != nil {
					fmt.Fprintln(w, "commnode:", err)
				}
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}
}
