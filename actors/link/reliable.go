package link

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gocomms/gocomms/transport"
)

// The link layer's own frames (Kind transport.Link), by Tag. Data frames
// carry no number of their own: both ends count them, and a connection
// delivers them in order, so a count is the number of the last frame.
const (
	// tagResume opens every connection after the first, and answers the
	// peer's: Seq counts the data frames this end has received, and the
	// peer sends again every later one.
	tagResume uint32 = iota
	// tagAck: Seq counts the data frames this end has received, so the
	// peer may forget them.
	tagAck
	// tagFin says the sender closes the link on purpose: the connection
	// ending next is no fault to reconnect from.
	tagFin
	// tagPing asks for a tagAck at once: a link that waits on its peer
	// and has heard nothing for a while checks that the peer still runs.
	tagPing
	// tagFinAck answers tagFin: everything before the Fin arrived, so the
	// closing link may go.
	tagFinAck
)

// When a receiver acknowledges: at once for a frame whose sender asks
// (askAck: the operation lent the payload, and gets it back only once it
// is acknowledged), else every ackFrames frames or ackBytes bytes, which
// bounds what a sender keeps of other frames with no timer at all.
const (
	ackFrames = 64
	ackBytes  = 1 << 20
)

// askAck marks, in a data frame's Kind, a frame to acknowledge at once.
// The link sets it on the wire and clears it before delivery: the engine's
// kinds are small numbers, and transports carry the Kind verbatim.
const askAck transport.Kind = 0x80

// Window bounds the bytes a link has sent and the peer not yet
// acknowledged: later frames wait in the link until acknowledgements make
// room, so that a peer that stops reading stops the sender's transport
// from growing too.
const Window = 64 << 20

var (
	// errProtocol marks a peer whose counts contradict ours: it lost
	// state, so nothing can be resumed.
	errProtocol = errors.New("link protocol violation")
	// errSilent marks a peer the link waited on and heard nothing from.
	errSilent = errors.New("peer silent")
	// errStopped tells a collective on the plane of a stopped link that
	// nothing more comes.
	errStopped = fmt.Errorf("link stopped: %w", transport.ErrClosed)
)

// lent reports whether the operation that sent the frame waits for it
// back: until the peer acknowledges it, the link watches the peer.
func (o *outFrame) lent() bool { return o.msg.Frame.Sent != nil }

// outFrame is a data frame kept until the peer acknowledges it, so that
// it can be sent again on a new connection. It lives in the Send message
// that brought the frame, whose Frame, as the operation handed it, is the
// one kept: its Sent is the operation's, for a lent payload.
type outFrame struct {
	refs atomic.Int32 // the retransmit buffer's hold, plus one per transport still reading the payload
	sent func()       // release, made once per message: the transport's Sent for every copy it is lent
	msg  *Send
}

// release drops one hold; the last gives the payload back to the
// operation (lent) or to the pool (owned), and the message to its pool.
func (o *outFrame) release() {
	if o.refs.Add(-1) == 0 {
		transport.Release(o.msg.Frame)
		o.msg.recycle()
	}
}

// outbound is what a link has sent: data frames number from 1, and those
// the peer has not acknowledged stay in unacked, oldest first. A nil
// outbound has sent nothing: its methods that only read work on it.
type outbound struct {
	next    uint64 // data frames handed to the link so far
	acked   uint64 // of them, those the peer acknowledged
	unacked []*outFrame
	// transmitted counts the frames of unacked given to the current
	// connection, and wire their payload bytes; the rest wait for the
	// peer's resume or for room in the Window.
	transmitted int
	wire        int
	lent        int         // frames of unacked whose operation waits for them back
	acking      []*outFrame // ack's scratch
}

// add numbers f and keeps it.
func (o *outbound) add(f transport.Frame) { o.addSend(&Send{Frame: f}) }

// addSend numbers m's frame and keeps it, in m.
func (o *outbound) addSend(m *Send) {
	o.next++
	of := &m.out
	of.msg = m
	of.refs.Store(1)
	if of.sent == nil {
		of.sent = of.release
	}
	o.unacked = append(o.unacked, of)
	if of.lent() {
		o.lent++
	}
}

// ack forgets the frames up to n, which the peer confirmed.
func (o *outbound) ack(n uint64) error {
	if o == nil {
		if n != 0 {
			return fmt.Errorf("%w: the peer acknowledged %d frames; none were sent", errProtocol, n)
		}
		return nil
	}
	if n < o.acked || n > o.next {
		return fmt.Errorf("%w: the peer acknowledged %d frames; %d were sent and %d acknowledged before", errProtocol, n, o.next, o.acked)
	}
	drop := int(n - o.acked)
	// Shifted rather than resliced, so that appending reuses the array.
	acked := append(o.acking[:0], o.unacked[:drop]...)
	o.unacked = o.unacked[:copy(o.unacked, o.unacked[drop:])]
	clear(o.unacked[len(o.unacked) : len(o.unacked)+drop])
	for i, of := range acked {
		if i < o.transmitted {
			o.wire -= len(of.msg.Frame.Payload)
		}
		if of.lent() {
			o.lent--
		}
	}
	o.transmitted = max(o.transmitted-drop, 0)
	o.acked = n
	for _, of := range acked {
		of.release()
	}
	clear(acked)
	o.acking = acked
	return nil
}

// reconnected starts a new connection, on which nothing is transmitted yet.
func (o *outbound) reconnected() {
	if o != nil {
		o.transmitted, o.wire = 0, 0
	}
}

// onConnection counts the frames given to the current connection.
func (o *outbound) onConnection() int {
	if o == nil {
		return 0
	}
	return o.transmitted
}

// lending reports whether an operation waits for a payload back.
func (o *outbound) lending() bool { return o != nil && o.lent > 0 }

// pending is the next frame to transmit, if the Window has room for it.
func (o *outbound) pending() (*outFrame, bool) {
	if !o.stalled() {
		return nil, false
	}
	of := o.unacked[o.transmitted]
	if o.wire > 0 && o.wire+len(of.msg.Frame.Payload) > Window {
		return nil, false
	}
	return of, true
}

// stalled reports whether a frame waits for room in the Window.
func (o *outbound) stalled() bool { return o != nil && o.transmitted < len(o.unacked) }

// transmitting records that pending's frame goes to the connection.
func (o *outbound) transmitting(of *outFrame) {
	o.transmitted++
	o.wire += len(of.msg.Frame.Payload)
	of.refs.Add(1)
}

// releaseAll gives back every frame kept, when the link ends.
func (o *outbound) releaseAll() {
	if o == nil {
		return
	}
	kept := o.unacked
	o.unacked, o.transmitted, o.wire, o.lent = nil, 0, 0, 0
	for _, of := range kept {
		of.release()
	}
}

// inbound is what a link has received.
type inbound struct {
	received uint64 // data frames delivered so far
	ackedAt  uint64 // received when this end last acknowledged
	bytes    int    // payload bytes since then
}

// arrived counts a data frame of size bytes and reports whether to
// acknowledge now.
func (in *inbound) arrived(size int) bool {
	in.received++
	in.bytes += size
	return in.received-in.ackedAt >= ackFrames || in.bytes >= ackBytes
}

// acknowledged records that an acknowledgement (or resume) of received went out.
func (in *inbound) acknowledged() {
	in.ackedAt, in.bytes = in.received, 0
}

func linkFrame(comm uint64, tag uint32, n uint64) transport.Frame {
	return transport.Frame{Header: transport.Header{Comm: comm, Kind: transport.Link, Tag: tag, Seq: n}}
}
