// Package rank owns the actor that is one rank of one communicator in this
// process. Its mailbox is the issue order: operations start in the order
// they were submitted, one at a time (a batch of point-to-point operations is
// one operation whose messages run concurrently), as on a torchcomms stream.
//
// The actor owns the rank's links (one link actor per peer it talks to,
// spawned on first use), its collective actor, its windows and its
// agreements. What becomes of its operations and of the communicator is
// decided by a sequencer, a state machine without goroutines, clock or
// I/O, as raft's is etcd's: it holds the queue, the running operation, the
// collective numbering, the failure that broke the communicator, the abort,
// the revoke and the Finalize, and the actor drives it:
//
//	for each message:
//	    decode it into an event (or handle it outside the sequencer:
//	    probes, windows, agreement frames, links' restarts)
//	    acts := sequencer.step(event, acts)
//	    perform each action in order; performing one may step another
//	    event (a peer that cannot be connected), whose actions are
//	    performed before the rest
//
// The transcripts in testdata show the sequencer's decisions, event in,
// actions out.
//
// Events (what happened):
//
//	evSubmit        a Submit: queue the operation, or reject it if the rank
//	                takes no new work (aborted, broken, finalizing)
//	evEnded         the running operation ended (collective.Finished, or a
//	                refused start)
//	evUnreachable   a peer the starting operation needs cannot be connected
//	evCancel        a Cancel
//	evAbort         an Abort
//	evFinalize      a Finalize
//	evClosed        no link is live while closing: every one stopped, or
//	                the grace period is over
//	evPeerFailed    a link failed, gave up reconnecting, or could not be made
//	evBye           a peer said goodbye: its link's end is no failure
//	evPeerReported  a peer says a rank failed
//	evRevoke        a Revoke, or a peer's word of one
//	evCollFailed    a peer reports that a collective failed
//	evPeerLost      the running operation waits on a peer whose connection
//	                failed
//	evConnected     a Connected
//	evAgree         an Agree
//	evLend          after every message: lend the turn if idle and sound
//	evReclaimed     the lent turn is back (at once, or with a Reclaimed)
//	evAdopt         an operation that ran off the rank timed out and
//	                comes back, with those queued behind it there
//	                (collective.Adoption)
//
// Actions (what the actor does):
//
//	actStart            connect the operation's peers, number its
//	                    point-to-point messages, hand it to the collective
//	                    actor (spawned for the first operation, and again
//	                    after one failed)
//	actRefuse           connect its peers, pass a peer's report of its
//	                    failure on to them, end it, step evEnded
//	actFail             ask the running operation to fail (collective.Fail)
//	actReject           end an operation that never started, let go of it
//	actRelease          let go of an operation that ended
//	actRevokeWindows    tell every window the communicator broke
//	actFailAgreement    fail the agreement still deciding
//	actStartAgreement   start an agreement
//	actRefuseAgreement  fail an agreement at once
//	actSpreadFailure    tell every live link but the failed rank's and the
//	                    teller's that the rank failed
//	actSpreadRevoke     tell every live link but the teller's that a rank
//	                    revoked the communicator
//	actConnect          make the link to a peer
//	actHangUp           close a peer's connection unread
//	actCloseLinks       say goodbye, close every link after what it holds,
//	                    bound the wait; step evClosed once none is live
//	actStopLinks        stop every link after what its mailbox holds
//	actFinalized        call Finalize's Done, stop the rank
//	actLend             lend the turn (Lease), numbering the next collective
//	actAdopt            hand an adopted operation to the collective actor
//
// While the rank is idle it lends its turn (lease.go): operations then run
// off the actors, on a collective.Direct, numbered by the lease (a
// collective's sequence number, a message's ordinal), queued there in
// issue order, and the rank starts nothing until the turn is back. It
// takes the turn back when it has work of its own (a submission, a
// Finalize, a peer's report or probe) or the communicator breaks, which
// fails the operations off it. A connection that ends under them reaches
// it first: a peer's failure, which it spreads, before they fail naming
// the peer.
//
// With Config.ReleaseLinks the rank holds links only while something
// uses them (release.go): its lazy collective links each peer as it
// comes to it and lets go of it after, and the rank releases the link,
// the peer its end, each after its last frame; what either sends later
// goes on a new link, which also carries the word of the failures the
// rank spread before it.
//
// A peer's failure breaks the communicator, as with NCCL: the running and
// queued operations fail naming that peer, whatever peers each needs, and
// so does every later one; the word floods the ranks that talk to each
// other. Agreements (Agree) still run, on a broken or revoked
// communicator: that is how its survivors go on.
//
// A rank actor never touches tensor memory and never blocks; it must not
// import net.
package rank
