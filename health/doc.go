// Package health serves an operator's view of one communicator over
// HTTP: liveness, readiness (judged from its flight record), its
// Prometheus metrics, its flight record and the runtime's profiles.
//
// It reads the communicator through Comm, which the root package's
// Comm satisfies, and never imports the root package: gocomms.Handler
// builds the Config from its options and hands both over.
package health
