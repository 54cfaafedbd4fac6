// Package metrics owns the Prometheus collectors of gocomms: operations,
// bytes, latency, errors by kind and peer failures per communicator, RMA
// window operations, and round trips to the rendezvous store.
//
// Metrics are off unless asked for: New registers one set of vectors on a
// registry (once: a second New on the same registry reuses what is
// there), Metrics.Comm hands a communicator its series, labelled by
// communicator name and rank, and Metrics.Store wraps a store.Store. The
// root package's WithMetrics does all three for a communicator; without
// it nothing here runs.
//
// Prometheus' client_golang, not OpenTelemetry: its text format is what
// operators already scrape, it is one small dependency (already in the
// module graph), and it needs no SDK pipeline of providers and exporters.
// Labels are bounded: an operation's name, one of five size classes, one
// of six error kinds.
package metrics
