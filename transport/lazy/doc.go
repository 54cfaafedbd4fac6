// Package lazy connects the members of a group on first use: each member
// connects only to the peers it talks to, instead of the whole mesh up
// front, and one connection per pair of members carries every frame
// between them, in both directions, even when both start dialling each
// other at the same moment.
//
// Start reading at Group in group.go, then conn in conn.go and the
// connection set-up in link.go. Each member runs a Group over its
// listener; a Conn per peer dials on its first Send and also takes the
// connection that peer dials to us:
//
//	g, err := lazy.New(lazy.Config{Network: nw, Listener: l, ID: id, Members: n, Self: i, Resolve: lookup})
//	c, err := g.Conn(j) // the same transport.Conn for every call; nothing dialled yet
//	c.Start(handler)    // frames from j, whichever side dialled
//	c.Send(f)           // the first Send dials j; f waits, in order, until connected
//	g.Close()           // every Conn and the listener
//
// A Group allocates a Conn when it is first asked for or first dialled,
// and a Conn costs nothing on the network until its first Send, or until
// Group.Dial asks for it: a member that only expects frames from a peer
// dials it too, so that a peer that left before sending anything is found
// when the dial fails. A mux
// (transport/mux) goes on top of the Conn, not beneath it.
//
// # Wire
//
// All integers are little-endian. A dialer's hello is at least 16 bytes:
//
//	offset size field
//	0      8    the group id
//	8      4    the dialer's index
//	12     4    the generation of the dialer's Conn to the acceptor, from 1
//	16     rest the dialer's listener address, for the acceptor to dial back
//
// The acceptor closes, without an answer, a connection whose hello has
// another length or id, or the acceptor's own index or one out of range,
// or that comes from a peer it is connected to already; and goes on
// serving. Any other it answers with one frame, before anything else:
//
//	Header{Comm: id, Kind: KindWelcome, Seq: g}  accepted by the acceptor's Conn of generation g: the connection carries the pair's frames
//	Header{Comm: id, Kind: KindWelcome, Tag: 1}  refused for good: the acceptor's conn to the dialer has ended
//	Header{Comm: id, Kind: KindWelcome, Tag: 2}  refused: the acceptor's own dial, which wins, is on its way
//
// and closes the connection after a refusal. KindWelcome (254) lies
// outside the engine's kinds (1 to 4; 0x81 to 0x84 flagged) and the mux's close marker (255).
// Frames after the welcome travel unchanged. A connection that ends
// without an answer failed the dial: the peer's listener closed with it
// in the backlog, or the peer is no member of this group.
//
// # One connection per pair
//
// Each Conn dials at most once, on its first Send. Its dial carries its
// frames only after the peer's welcome; until then they wait in a queue.
// An acceptor welcomes a connection unless it already has one, and, while
// its own dial to the same peer awaits an answer, the lower index wins:
// the lower member refuses the higher one's dial (Tag 2) and waits for the
// answer to its own, while the higher member accepts the lower one's dial
// and drops its own. A dialer so refused waits, within the dial timeout,
// for the peer's connection, which it accepts.
//
// Why this settles every race, for members i < j: j refuses i's dial
// only once it has a connection or has ended, never for the race. Its
// connection is either i's dial, which it accepted, or its own, which i
// welcomed; i welcomes it only if i never dialled, since only the lower
// member refuses for the race and i never waits for j, and once connected
// i never dials. So while both are open they never refuse each other, and
// they choose the same connection: the one its acceptor welcomed. Nothing
// is lost or reordered by a refusal: a dialer sends its queued frames
// only after the welcome, and an acceptor sends the welcome first, so a
// refused or dropped connection never carried a frame. Frames queued
// before the connection is up go out on it in order before any later
// Send.
//
// # Conns
//
// The Conns keep the transport.Conn contract; beyond it:
//
//   - Send never blocks. Until the connection is up it queues the frame,
//     lent payload and all, and the first Send starts the dial in a
//     goroutine. Queued frames are given back (transport.Release) if the
//     Conn ends first.
//   - The Conn fails, and its handler gets an error naming the peer's
//     index and address, when its address cannot be resolved, when the
//     dial fails, when the peer hangs up
//     without an answer or does not answer within the dial timeout, when
//     it refuses us for its own dial and does not dial us within the dial
//     timeout, when its conn to us has ended, and when the connection
//     fails, after the frames that came before. Every such error wraps transport.ErrClosed. A
//     failed Conn stays failed; see Reconnecting.
//   - Close closes the connection, which delivers what was sent before.
//     Frames still waiting for a connection keep the dial, or the wait for
//     the peer's, going within the dial timeout, and the connection closes
//     after them. A Conn never used touches nothing, so its peer learns
//     of the close only if it dials. After Close the peer's dials are
//     refused for good. Group.Close closes every Conn, then the
//     listener, which stays open as long as a closed Conn's frames may
//     still need the peer's dial.
//   - Conns are transport.Drainers: Drained follows the connection's own.
//   - Conns are transport.Borrowers exactly when the Network is one: such a
//     Network promises that its connections borrow payloads.
//   - LocalAddr and RemoteAddr are the connection's, once there is one, and
//     the listener's and the peer's listener address (once known) before.
//
// # Reconnecting
//
// Once a Conn fails (rather than being closed), Group.Conn returns a new
// one, of the next generation, for the layer above to reconnect on: the
// Group itself never retries. The new Conn dials on its first Send, or
// takes the peer's dial, whichever comes first, as the first Conn did.
// A dial from the peer's Conn of a newer generation than the one ours is
// connected to says the peer lost that connection, as a reset seen on
// one side only leaves it. A live link is never replaced on that word
// alone, which anyone who can reach the listener could forge: the dial
// waits, within the dial timeout, for ours to fail, and a new Conn takes
// it then; otherwise it is closed unanswered. One such dial waits per
// peer; another meanwhile is closed at once. A dial from the generation
// we are connected to is one the peer dropped for ours, arriving late,
// and is closed unanswered. A
// Conn closed on purpose refuses its peer's new Conns for good (Tag 1),
// so a peer that reconnects to a member that left learns it at once.
//
// Locks are never held across a call into an underlying connection, a
// handler or the Network: an inproc Send may run the peer's handler, and
// through it our own, in the sender's goroutine. Frames reach the handler
// through the Conn's own inbox, in order and one at a time.
//
// This package must not interpret headers beyond its answer, log, or
// retry: a failed Conn is reported, and whether to reconnect is for the
// link actor to decide.
package lazy
