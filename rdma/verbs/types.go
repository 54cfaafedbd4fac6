package verbs

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/gocomms/gocomms/internal/names"
)

// The values of these types are libibverbs' own (enum ibv_*), so that they
// pass to and from the library unchanged; testdata/abicheck.c holds the
// ones the C side uses to rdma-core's header.

// Access says what a memory region allows, and to whom (enum
// ibv_access_flags). Remote writes and atomics need AccessLocalWrite too.
type Access uint32

const (
	AccessLocalWrite   Access = 1 << 0
	AccessRemoteWrite  Access = 1 << 1
	AccessRemoteRead   Access = 1 << 2
	AccessRemoteAtomic Access = 1 << 3
	// AccessRelaxedOrdering lets the device reorder its PCIe writes to the
	// region; a device may ignore it (an "optional" flag in rdma-core).
	AccessRelaxedOrdering Access = 1 << 20

	accessKnown = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead |
		AccessRemoteAtomic | AccessRelaxedOrdering
)

func (a Access) String() string {
	return flagString(uint32(a), []string{0: "LocalWrite", 1: "RemoteWrite", 2: "RemoteRead",
		3: "RemoteAtomic", 20: "RelaxedOrdering"})
}

// SendFlags modify a posted work request (enum ibv_send_flags).
type SendFlags uint32

const (
	// Fence makes the request wait for earlier reads and atomics on the
	// same queue pair to complete.
	Fence SendFlags = 1 << 0
	// Signaled asks for a completion on success. Without it only a
	// failure completes, and a later signaled completion implies that
	// every earlier request on the queue pair succeeded; a send queue
	// must see a signaled request at least once per its depth, or it
	// fills with requests it cannot retire.
	Signaled SendFlags = 1 << 1
	// Solicited marks a request with immediate data as one the receiver
	// asked to be woken for.
	Solicited SendFlags = 1 << 2
	// Inline copies the payload into the request when it is posted (up to
	// QPCaps.MaxInline bytes), so the buffer is free on return.
	Inline SendFlags = 1 << 3

	sendFlagsKnown = Fence | Signaled | Solicited | Inline
)

func (f SendFlags) String() string {
	return flagString(uint32(f), []string{0: "Fence", 1: "Signaled", 2: "Solicited", 3: "Inline"})
}

// MTU is a path MTU as the verbs encode it (enum ibv_mtu).
type MTU uint8

const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the MTU in bytes, 0 for an unknown value.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

func (m MTU) String() string {
	if b := m.Bytes(); b != 0 {
		return fmt.Sprint(b)
	}
	return fmt.Sprintf("MTU(%d)", uint8(m))
}

// PortState is a port's logical state (enum ibv_port_state).
type PortState uint32

const (
	PortNop    PortState = 0
	PortDown   PortState = 1
	PortInit   PortState = 2
	PortArmed  PortState = 3
	PortActive PortState = 4
	// PortActiveDefer is active with an error being reported.
	PortActiveDefer PortState = 5
)

var portStateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

func (s PortState) String() string { return names.Of(s, "PortState", portStateNames[:]) }

// LinkLayer is what a port runs over.
type LinkLayer uint8

const (
	LinkUnspecified LinkLayer = 0 // reported by old kernels for InfiniBand
	LinkInfiniBand  LinkLayer = 1
	LinkEthernet    LinkLayer = 2 // RoCE: addressing needs a GID
)

var linkLayerNames = [...]string{LinkUnspecified: "unspecified", LinkInfiniBand: "InfiniBand", LinkEthernet: "Ethernet"}

func (l LinkLayer) String() string { return names.Of(l, "LinkLayer", linkLayerNames[:]) }

// AtomicCap says whether and how a device performs atomics (enum
// ibv_atomic_cap).
type AtomicCap uint32

const (
	// AtomicNone: fetch-add and compare-swap fail.
	AtomicNone AtomicCap = 0
	// AtomicHCA: atomic among this device's own operations only, not
	// against the CPU or other devices.
	AtomicHCA AtomicCap = 1
	// AtomicGlobal: atomic against every other access to the memory.
	AtomicGlobal AtomicCap = 2
)

var atomicCapNames = [...]string{AtomicNone: "none", AtomicHCA: "HCA", AtomicGlobal: "global"}

func (a AtomicCap) String() string { return names.Of(a, "AtomicCap", atomicCapNames[:]) }

// Status is a completion's status (enum ibv_wc_status).
type Status uint32

const (
	StatusSuccess          Status = 0
	StatusLocLenErr        Status = 1
	StatusLocQPOpErr       Status = 2
	StatusLocEECOpErr      Status = 3
	StatusLocProtErr       Status = 4
	StatusWRFlushErr       Status = 5 // the QP entered the error state: later requests are flushed
	StatusMWBindErr        Status = 6
	StatusBadRespErr       Status = 7
	StatusLocAccessErr     Status = 8
	StatusRemInvReqErr     Status = 9
	StatusRemAccessErr     Status = 10 // bad rkey, range or permission at the peer
	StatusRemOpErr         Status = 11
	StatusRetryExcErr      Status = 12 // the peer did not answer: unreachable, or its QP is gone
	StatusRNRRetryExcErr   Status = 13 // the peer had no receive posted
	StatusLocRDDViolErr    Status = 14
	StatusRemInvRdReqErr   Status = 15
	StatusRemAbortErr      Status = 16
	StatusInvEECNErr       Status = 17
	StatusInvEECStateErr   Status = 18
	StatusFatalErr         Status = 19
	StatusRespTimeoutErr   Status = 20
	StatusGeneralErr       Status = 21
	StatusTMErr            Status = 22
	StatusTMRndvIncomplete Status = 23
)

var statusNames = [...]string{
	"SUCCESS", "LOC_LEN_ERR", "LOC_QP_OP_ERR", "LOC_EEC_OP_ERR", "LOC_PROT_ERR",
	"WR_FLUSH_ERR", "MW_BIND_ERR", "BAD_RESP_ERR", "LOC_ACCESS_ERR", "REM_INV_REQ_ERR",
	"REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR",
	"LOC_RDD_VIOL_ERR", "REM_INV_RD_REQ_ERR", "REM_ABORT_ERR", "INV_EECN_ERR",
	"INV_EEC_STATE_ERR", "FATAL_ERR", "RESP_TIMEOUT_ERR", "GENERAL_ERR", "TM_ERR",
	"TM_RNDV_INCOMPLETE",
}

// String returns the name rdma-core gives the status, without its
// IBV_WC_ prefix.
func (s Status) String() string { return names.Of(s, "Status", statusNames[:]) }

// Opcode is what a completion completed (enum ibv_wc_opcode).
type Opcode uint32

const (
	OpSend        Opcode = 0
	OpWrite       Opcode = 1
	OpRead        Opcode = 2
	OpCompareSwap Opcode = 3
	OpFetchAdd    Opcode = 4
	OpBindMW      Opcode = 5
	OpLocalInv    Opcode = 6
	OpTSO         Opcode = 7
	OpAtomicWrite Opcode = 9
	// OpRecv and the opcodes after it complete receive requests.
	OpRecv Opcode = 1 << 7
	// OpRecvWriteImm completes a receive consumed by a peer's write with
	// immediate data: the data went where the writer said, the receive's
	// buffer is untouched.
	OpRecvWriteImm Opcode = OpRecv + 1
)

var opcodeNames = [...]string{
	OpSend: "send", OpWrite: "write", OpRead: "read", OpCompareSwap: "compare-swap",
	OpFetchAdd: "fetch-add", OpBindMW: "bind-mw", OpLocalInv: "local-invalidate",
	OpTSO: "tso", OpAtomicWrite: "atomic-write", OpRecv: "recv",
	OpRecvWriteImm: "recv-write-imm",
}

func (o Opcode) String() string { return names.Of(o, "Opcode", opcodeNames[:]) }

// IsRecv reports whether o completes a receive request.
func (o Opcode) IsRecv() bool { return o&OpRecv != 0 }

// Completion is one entry of a completion queue (struct ibv_wc).
type Completion struct {
	WRID   uint64 // the caller's id from the post
	Status Status
	// Opcode, ByteLen, Imm and SrcQP are defined only when Status is
	// StatusSuccess.
	Opcode    Opcode
	ByteLen   uint32 // bytes received, for receives
	Imm       uint32 // immediate data, in host order, when HasImm
	HasImm    bool
	QPN       uint32 // the local queue pair it belongs to
	SrcQP     uint32
	VendorErr uint32
	err       error
}

// Err returns nil for a successful completion, and otherwise a
// *CompletionError (which wraps ErrCompletion) naming the request, the
// status in libibverbs' words, and the vendor's error code.
func (c Completion) Err() error {
	if c.Status == StatusSuccess {
		return nil
	}
	if c.err != nil {
		return c.err
	}
	return &CompletionError{WRID: c.WRID, QPN: c.QPN, Status: c.Status, VendorErr: c.VendorErr}
}

// DeviceInfo names a device that libibverbs lists.
type DeviceInfo struct {
	Name string // the kernel's name for it: mlx5_0, rxe0, ...
	GUID uint64 // its node GUID, 0 where the library cannot say
}

func (d DeviceInfo) String() string { return fmt.Sprintf("%s (GUID %016x)", d.Name, d.GUID) }

// DeviceAttr is what a device reports of itself (struct ibv_device_attr),
// the limits a caller may need among it.
type DeviceAttr struct {
	FirmwareVersion string
	NodeGUID        uint64
	VendorID        uint32
	VendorPartID    uint32
	MaxMRSize       uint64
	MaxQP           int
	MaxQPWR         int // work requests per queue
	MaxSGE          int
	MaxCQ           int
	MaxCQE          int // entries per completion queue
	MaxMR           int
	// MaxQPRdAtomic is how many reads and atomics a queue pair can answer
	// at once; MaxQPInitRdAtomic how many it can have outstanding.
	MaxQPRdAtomic     int
	MaxQPInitRdAtomic int
	Atomic            AtomicCap
	Ports             int
}

// PortAttr is what a port reports of itself (struct ibv_port_attr).
type PortAttr struct {
	State       PortState
	MaxMTU      MTU
	ActiveMTU   MTU
	GIDTableLen int
	CapFlags    uint32
	MaxMsgSize  uint32
	LID         uint16 // 0 on Ethernet
	SMLID       uint16
	LinkLayer   LinkLayer
	ActiveWidth uint8
	ActiveSpeed uint8
	PhysState   uint8
}

// GID is a port's global identifier: an IPv6 address (or an IPv4 one,
// mapped) on RoCE, a subnet prefix and port GUID on InfiniBand.
type GID [16]byte

// IsZero reports an unset GID; a RoCE GID table holds them in unused
// slots.
func (g GID) IsZero() bool { return g == GID{} }

func (g GID) String() string { return netip.AddrFrom16(g).String() }

// QPCaps sizes a queue pair. Zero fields take the defaults below; the
// device may round each up, and QP.Caps returns what it granted.
type QPCaps struct {
	MaxSendWR  uint32 // default 128
	MaxRecvWR  uint32 // default 128
	MaxSendSGE uint32 // default 1
	MaxRecvSGE uint32 // default 1
	MaxInline  uint32 // default 0: no Inline posts
}

// SGE is a range of registered memory on this side: the local end of a
// work request. Make one with MR.SGE, which checks it against the region.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// Remote is a range of a peer's registered memory: the far end of a
// one-sided request. The peer sends its MR's Addr and RKey out of band.
type Remote struct {
	Addr uint64
	RKey uint32
}

func flagString(v uint32, names []string) string {
	if v == 0 {
		return "0"
	}
	var parts []string
	for i := 0; i < 32; i++ {
		if v&(1<<i) == 0 {
			continue
		}
		if i < len(names) && names[i] != "" {
			parts = append(parts, names[i])
		} else {
			parts = append(parts, fmt.Sprintf("1<<%d", i))
		}
	}
	return strings.Join(parts, "|")
}
