//go:build !unix

package main

import "io"

// dumpFlightRecordsOnSignal does nothing where there is no SIGUSR1.
func dumpFlightRecordsOnSignal(io.Writer) (stop func()) { return func() {} }
