// Package gocomms is a collective-communication engine for Go, after
// PyTorch's torchcomms: communicators, every collective (all-reduce, reduce,
// broadcast, all-gather, reduce-scatter, all-to-all, gather, scatter,
// barrier and their single and vector forms), point-to-point sends and
// receives, batches, hooks, timeouts and abort, for every dtype and reduce
// op. Each operation has a blocking form that takes a context and an async
// form that returns a *Work.
//
// Start with RunLocal, which runs n ranks in this process over the
// in-process transport, or NewComm, which creates one rank of a
// communicator that spans processes.
//
// NewMesh arranges a communicator's ranks in named dimensions, row-major,
// as torch's init_device_mesh, with a communicator along each (Mesh.Dim)
// or several (Mesh.Flatten). AllGatherObject, BroadcastObject,
// GatherObject, ScatterObject, SendObject and RecvObject move Go values
// through a Codec, gob by default.
//
// Every communicator keeps a flight record, as torchcomms'
// FlightRecorderHook: its last TORCHCOMM_FR_BUFFER_SIZE operations (2000 by
// default, 0 for none) with their state, times and errors, read with
// Comm.FlightRecord, written as JSON by Comm.DumpFlightRecord, or for every
// live communicator of the process by DumpFlightRecords.
//
// Failures are named, not waited out: an operation that needs a failed
// rank fails with ErrPeerFailed naming it. The survivors go on with ULFM's
// Revoke, Agree and Shrink; InitHandle and Reconfigure (torchcomms'
// dynamic regime, WithReconfigure) grow a communicator back with new
// processes; JoinElastic combines them for data-parallel training, with an
// AllReduce that completes among the live ranks.
//
// This package is the API alone: it validates arguments, numbers
// operations, runs hooks and keeps the flight record, and hands each
// operation to a Backend (package backend's contract), asking for any
// capability beyond it (pooled issue, cancellation, fault tolerance,
// windows) through small optional interfaces. The built-in backend,
// package engine, registers as "native": every communicator rank,
// in-flight operation and peer link there is an actor (actors/rank,
// actors/collective, actors/link) whose mailbox orders its work;
// algorithms holds the pure schedules they execute; transport and store
// are the seams through which ranks meet.
package gocomms
