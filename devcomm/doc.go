// Package devcomm runs a communicator's operations on GPU tensors through a
// backend that moves host memory, the path between hosts that torchcomms'
// CPU-staged transports take: an operation's device tensors are copied to
// pinned host memory on the communicator's stream, after the caller's
// stream; the host backend runs the operation on those copies; what it
// wrote is copied back on the stream, and the operation ends once the
// device has it.
//
// Every operation passes through, in issue order, so the host backend sees
// the order the ranks agreed on: collectives, point-to-point messages and
// batches alike, whatever the host backend's transport (TCP between
// hosts, shared memory within one). Timeouts, aborts and failed peers are
// the host backend's, and are reported as it reports them.
//
// The host sits in the data path here: two copies across the bus and a
// wait for each. Collectives among the ranks of one GPU host go through
// nvl's device half instead, which only queues work on streams.
//
// This package must not choose devices or contexts: its caller gives the
// context and the device.
package devcomm
