// Package simulation runs the real engine on virtual time, from the public
// API down: every rank is an ordinary gocomms.Comm, made by NewComm and
// driven through its async methods, over the native engine's rank,
// collective, link and supervisor actors and the algorithms' schedules,
// unchanged, with only the runtime and the transport swapped. Many ranks
// share one actor system whose every task runs on one goroutine (Loop),
// time jumps to the next timer when nothing is ready, a seeded source
// picks which ready task runs next, and a simulated network (network.go)
// carries frames between ranks at the times a topology gives. A run is a
// function of its Config and seed: its trace hash (trace.go) is the same
// bit for bit on every replay.
//
// Start reading at Run in run.go. A run makes one communicator per rank
// over its network (a transport.Fabric: ranks join by index, with no
// store), issues the configured collective on every rank (AgreeAsync and
// ShrinkAsync for the agreement and the shrink), arms the fault plan
// (faults.go), runs the loop until the liveness bound past the last fault's
// heal, and checks the invariants: every operation of a rank that did not
// crash ended; it ended with the result a plain loop over every rank's
// input gives (data.go), or with an error that a fault which is not
// harmless explains, by naming a rank in its scope. A phantom run
// (Config.Phantom) runs on the meta device, whose tensors have sizes and
// no memory: it moves lengths instead of data, to time what would not fit
// in memory, and checks everything but the results.
//
// # Network model
//
// Ranks are numbered node by node. A frame between ranks of one node
// crosses the intra-node link (NVLink-like), between nodes the two ranks'
// NICs through a fabric whose oversubscription divides the NIC bandwidth.
// Each rank has a send and a receive port per kind of link, each serving
// one frame at a time in arrival order: a frame leaves once the sender's
// port is free, and its last byte lands after the latency, once the
// receiver's port has taken what came before it. Concurrent transfers
// share a port frame by frame, and schedules chunk large messages, so they
// share it about fairly. Frames of one connection arrive in the order sent
// (TCP's guarantee); jitter reorders frames of different connections. Each
// frame costs the sender a fixed software overhead.
//
// # Drawn plans and shrinking
//
// RandomPlan (chaos.go) draws a fault plan from a seed, on a stream of its
// own, so that a sweep of seeds tries a new plan with each. Shrink
// (shrink.go) cuts the plan of a failing run down to a minimal one by
// running it again and again; between runs, and only there, it reads the
// wall clock, to keep to its budget.
//
// This package must not be imported by the engine: it sits above actors,
// algorithms and transport, and it uses no wall time, goroutine or
// randomness that does not come from the run's seed.
package simulation
