// Package rank owns the actor that is one rank of one communicator in this
// process. Its mailbox is the issue order: operations start in the order
// they were submitted, one at a time (a batch of point-to-point operations is
// one operation whose messages run concurrently), as on a torchcomms stream.
//
// The driving loop:
//
//	Started          -> spawn one link actor per peer, under a supervisor
//	*Submit          -> queue; if idle, start: number it (sequence number,
//	                    collective sequence or point-to-point ordinals),
//	                    hand it to the collective actor (spawned for the
//	                    first operation, and again after one failed)
//	*Finished        -> start the next queued operation; finish a Finalize
//	*link.Delivered  -> control frames: a peer's failure report for a
//	                    collective fails that collective here too
//	*link.Failed     -> the peer is gone: fail the running operation if it
//	                    still waits on that peer, and every later one that
//	                    involves it
//	*Abort           -> fail the running and queued operations, close links
//	*Finalize        -> once idle, close links and stop
//
// A rank actor never touches tensor memory and never blocks; it must not
// import net.
package rank
