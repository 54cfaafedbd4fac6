//go:build !unix

package main

import (
	"io"
	"os"
)

// relayedSignals is empty where there is no SIGUSR1.
func relayedSignals() []os.Signal { return nil }

// dumpFlightRecordsOnSignal does nothing where there is no SIGUSR1.
func dumpFlightRecordsOnSignal(io.Writer) (stop func()) { return func() {} }
