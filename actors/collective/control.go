package collective

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gocomms/gocomms/actors/link"
	"github.com/gocomms/gocomms/commerr"
	"github.com/gocomms/gocomms/transport"
)

// Control frames travel between rank actors, outside any operation's
// routing. Their header's Seq is the collective sequence number they are
// about, if any, and their Tag says which of these they are.
const (
	// ControlFailed reports a failed collective: the payload is the
	// reporting rank and the reason.
	ControlFailed = 1
	// ControlProbe asks a rank how far it has got with a collective that
	// timed out at the sender. It has no payload.
	ControlProbe = 2
	// ControlProbeReply answers a probe: a ProbeStatus, then the ranks the
	// replier waits for when it is stuck in the collective.
	ControlProbeReply = 3
	// ControlBye says the sender is finalizing: the end of its connection
	// that follows is no failure. It has no payload.
	ControlBye = link.ControlBye
	// ControlPeerFailed says a rank failed: the payload is its rank and
	// the rank that found it, as little-endian uint32s.
	ControlPeerFailed = 5
	// ControlAgree carries a message of a fault-tolerant agreement
	// (actors/agree): Seq numbers the agreement, the payload is the
	// message.
	ControlAgree = 6
	// ControlRevoked says the communicator is revoked: the payload is the
	// rank that revoked it, as a little-endian uint32.
	ControlRevoked = 7
)

// ControlFrame returns a control frame, with a copy of payload, for
// link.SendControl.
func ControlFrame(commID, collSeq uint64, tag uint32, payload []byte) transport.Frame {
	p := transport.GetBuffer(len(payload))
	copy(p, payload)
	return transport.Frame{
		Header:  transport.Header{Comm: commID, Kind: transport.Control, Seq: collSeq, Tag: tag},
		Payload: p,
	}
}

// FailureKind says what ended a collective at the rank that reports it
// (ControlFailed), so that the ranks the report reaches fail with the
// sentinel that fits them: retry logic must tell a peer's cancellation
// from its own bad arguments.
type FailureKind uint8

const (
	// FailedOther: the reporter timed out or lost what a peer sent;
	// ErrPeerFailed.
	FailedOther FailureKind = iota
	// FailedMismatch: the reporter found the ranks' arguments differ;
	// ErrInvalidArgument.
	FailedMismatch
	// FailedCanceled: the reporter's caller cancelled; ErrPeerCanceled.
	FailedCanceled
)

// EncodeFailure returns the payload of a ControlFailed frame.
func EncodeFailure(rank int, kind FailureKind, reason string) []byte {
	b := make([]byte, 5, 5+len(reason))
	binary.LittleEndian.PutUint32(b, uint32(rank))
	b[4] = byte(kind)
	return append(b, reason...)
}

// DecodeFailure parses a ControlFailed payload.
func DecodeFailure(p []byte) (rank int, kind FailureKind, reason string, err error) {
	if len(p) < 5 || FailureKind(p[4]) > FailedCanceled {
		return 0, 0, "", fmt.Errorf("collective: malformed failure report of %d bytes", len(p))
	}
	return int(binary.LittleEndian.Uint32(p)), FailureKind(p[4]), string(p[5:]), nil
}

// StrayReport is the ControlFailed payload with which rank answers a frame
// of a collective that runs or ran here, signed ours, which no step takes:
// their calls differ, and the peer may wait for a frame this rank's
// schedule never sends. A collective that failed here answers with the
// report of its failure. Nil for a frame that is no stray: the word that a
// peer read registered memory comes after its collective here succeeded.
func StrayReport(rank, peer int, h transport.Header, ours uint64, failure []byte) []byte {
	if h.Tag&tagMarks != 0 {
		return nil
	}
	if failure != nil {
		return failure
	}
	reason := fmt.Sprintf("rank %d sent collective #%d more than this rank's call of it exchanges with it", peer, h.Seq)
	if h.Sig != ours {
		reason = fmt.Sprintf("arguments differ across ranks: %s", Mismatch(h.Sig, ours, peer, rank))
	}
	return EncodeFailure(rank, FailedMismatch, reason)
}

// ReportedFailure is the error of a collective that rank reported failed
// for reason.
func ReportedFailure(rank int, kind FailureKind, reason string) error {
	switch kind {
	case FailedMismatch:
		return commerr.Invalid("rank %d reported: %s", rank, reason)
	case FailedCanceled:
		return fmt.Errorf("%w: rank %d cancelled the operation: %s", commerr.ErrPeerCanceled, rank, reason)
	}
	return fmt.Errorf("%w: rank %d reported: %s", commerr.ErrPeerFailed, rank, reason)
}

// EncodePeerFailed is the payload of a ControlPeerFailed report: rank
// failed, as accuser (the rank whose link to it failed) found.
func EncodePeerFailed(rank, accuser int) []byte {
	p := binary.LittleEndian.AppendUint32(nil, uint32(rank))
	return binary.LittleEndian.AppendUint32(p, uint32(accuser))
}

// DecodePeerFailed parses a ControlPeerFailed payload, rejecting ranks
// outside a communicator of size.
func DecodePeerFailed(size int, p []byte) (rank, accuser int, err error) {
	if len(p) != 8 || binary.LittleEndian.Uint32(p) >= uint32(size) || binary.LittleEndian.Uint32(p[4:]) >= uint32(size) {
		return 0, 0, fmt.Errorf("collective: malformed failed-rank report of %d bytes", len(p))
	}
	return int(binary.LittleEndian.Uint32(p)), int(binary.LittleEndian.Uint32(p[4:])), nil
}

// EncodeRevoked is the payload of a ControlRevoked frame: the rank that
// revoked the communicator.
func EncodeRevoked(revoker int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(revoker)) }

// DecodeRevoked parses a ControlRevoked payload, rejecting ranks outside a
// communicator of size.
func DecodeRevoked(size int, p []byte) (int, error) {
	if len(p) != 4 || binary.LittleEndian.Uint32(p) >= uint32(size) {
		return 0, fmt.Errorf("collective: malformed revoke of %d bytes", len(p))
	}
	return int(binary.LittleEndian.Uint32(p)), nil
}

// ProbeStatus is how far a probed rank has got with a collective.
type ProbeStatus uint8

const (
	// NotReached: the rank has not started the collective (it has not
	// called it, or earlier operations still run).
	NotReached ProbeStatus = iota
	// Stuck: the rank runs the collective and waits for the ranks the
	// reply lists.
	Stuck
	// Ended: the rank has finished the collective, or it failed there for
	// another reason than a timeout.
	Ended
	// GaveUp: the rank timed out in the collective, waiting for the ranks
	// the reply lists: it sends nothing more for it.
	GaveUp
	// Behind: the rank has not started the collective because an earlier
	// one (the reply's At) still runs, waiting for the ranks it lists.
	Behind
	// Left: the rank's communicator broke, so it will not start the
	// collective: the ranks listed failed, as the reply's Accuser found.
	Left
)

// Probe asks the running collective whom it waits for, to answer a
// ControlProbe from Peer. The collective answers its parent with a
// ProbeAnswer, unless it has already ended: its Finished says then.
type Probe struct{ Peer int }

// Ask asks the rank to probe Peer about collective About on behalf of the
// running collective CollSeq: the rank holds the links, and the rank asked
// may be one the collective has no link to, when it follows a chain of
// stuck ranks, maybe into an earlier collective that holds them back.
type Ask struct {
	Peer           int
	CollSeq, About uint64
}

// ProbeAnswer is a running collective's answer to a Probe: Seq is the
// operation's.
type ProbeAnswer struct {
	Peer    int
	Seq     uint64
	Waiting []int
}

// ProbeReply carries a probed rank's answer to the collective that asked.
type ProbeReply struct {
	Peer    int
	Status  ProbeStatus
	At      uint64 // Behind: the collective Peer is still in
	Accuser int    // Left: the rank that found the failure
	Waiting []int  // the ranks Peer waits for, or waited for when it gave up, or that failed
}

// EncodeProbe returns the payload of a ControlProbe frame, sent about a
// collective on behalf of collective asker, to which the reply goes.
func EncodeProbe(asker uint64) []byte { return binary.AppendUvarint(nil, asker) }

// DecodeProbe parses a ControlProbe payload.
func DecodeProbe(p []byte) (asker uint64, err error) {
	asker, n := binary.Uvarint(p)
	if n <= 0 || n != len(p) {
		return 0, errors.New("collective: malformed probe")
	}
	return asker, nil
}

// EncodeProbeReply returns the payload of a ControlProbeReply frame; at
// is the collective a Behind rank is in, or the accuser of a Left one.
func EncodeProbeReply(status ProbeStatus, at uint64, waiting []int) []byte {
	b := []byte{byte(status)}
	if status == Behind || status == Left {
		b = binary.AppendUvarint(b, at)
	}
	for _, r := range waiting {
		b = binary.AppendUvarint(b, uint64(r))
	}
	return b
}

// DecodeProbeReply parses a ControlProbeReply payload from peer, rejecting
// ranks outside a communicator of size.
func DecodeProbeReply(peer, size int, p []byte) (*ProbeReply, error) {
	if len(p) == 0 || ProbeStatus(p[0]) > Left {
		return nil, fmt.Errorf("collective: malformed probe reply from rank %d", peer)
	}
	reply := &ProbeReply{Peer: peer, Status: ProbeStatus(p[0])}
	rest := p[1:]
	if reply.Status == Behind || reply.Status == Left {
		at, n := binary.Uvarint(rest)
		if n <= 0 || reply.Status == Left && at >= uint64(size) {
			return nil, fmt.Errorf("collective: malformed probe reply from rank %d", peer)
		}
		rest = rest[n:]
		if reply.Status == Left {
			reply.Accuser = int(at)
		} else {
			reply.At = at
		}
	}
	for len(rest) > 0 {
		r, n := binary.Uvarint(rest)
		if n <= 0 || r >= uint64(size) {
			return nil, fmt.Errorf("collective: malformed probe reply from rank %d", peer)
		}
		reply.Waiting = append(reply.Waiting, int(r))
		rest = rest[n:]
	}
	return reply, nil
}

// LostPeerError is the error of req, which waited on peer when err ended peer's
// connection: ErrPeerFailed naming it, unless the peer finalized before
// this collective (link.PeerLeft): then the ranks called different numbers
// of collectives, a mismatch like any other.
func LostPeerError(peer int, req *Request, err error) error {
	var left *link.PeerLeft
	if errors.As(err, &left) && req.P2P == nil && req.CollSeq >= left.Collectives {
		return fmt.Errorf("%w: rank %d finalized with a part in %d collectives, so collective #%d has no partner there", commerr.ErrInvalidArgument, peer, left.Collectives, req.CollSeq)
	}
	return fmt.Errorf("%w: rank %d: %v", commerr.ErrPeerFailed, peer, err)
}
