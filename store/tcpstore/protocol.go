package tcpstore

// op is a query kind, apart from the byte that a dialect numbers it with.
type op uint8

const (
	opUnknown op = iota
	opValidate
	opSet
	opCompareSet
	opGet
	opAdd
	opCheck
	opWait
	opNumKeys
	opWatchKey
	opDeleteKey
	opAppend
	opMultiGet
	opMultiSet
	opCancelWait
	opPing
	opQueuePush
	opQueuePop
	opQueueLen
	opListKeys
	opBarrier
)

var opNames = [...]string{
	opUnknown: "unknown", opValidate: "validate", opSet: "set",
	opCompareSet: "compare-set", opGet: "get", opAdd: "add", opCheck: "check",
	opWait: "wait", opNumKeys: "num-keys", opWatchKey: "watch-key",
	opDeleteKey: "delete", opAppend: "append", opMultiGet: "multi-get",
	opMultiSet: "multi-set", opCancelWait: "cancel-wait", opPing: "ping",
	opQueuePush: "queue-push", opQueuePop: "queue-pop", opQueueLen: "queue-len",
	opListKeys: "list-keys", opBarrier: "barrier",
}

func (o op) String() string { return opNames[o] }

// numbering maps query bytes to ops; a byte is its index.
type numbering []op

// v1Codes is the 1.13 numbering. Bytes 9 to 12 mean what they mean in 2.x,
// which is what pre-VALIDATE 2.x (≈2.0) clients send; a 1.13 server closes
// the connection on them.
var v1Codes = numbering{
	opSet, opCompareSet, opGet, opAdd, opCheck, opWait, opNumKeys, opWatchKey,
	opDeleteKey, opAppend, opMultiGet, opMultiSet, opCancelWait,
}

// v2Codes is the numbering of PyTorch 2.2 and later.
var v2Codes = numbering{
	opValidate, opSet, opCompareSet, opGet, opAdd, opCheck, opWait, opNumKeys,
	opDeleteKey, opAppend, opMultiGet, opMultiSet, opCancelWait, opPing,
	opQueuePush, opQueuePop, opQueueLen, opListKeys, opBarrier,
}

// op decodes a query byte.
func (n numbering) op(b byte) op {
	if int(b) < len(n) {
		return n[b]
	}
	return opUnknown
}

// code encodes o; ok is false where the numbering lacks it.
func (n numbering) code(o op) (b byte, ok bool) {
	for i, x := range n {
		if x == o {
			return byte(i), true
		}
	}
	return 0, false
}

const (
	// validateMagic follows VALIDATE, the first message of a 2.2+ client.
	validateMagic uint32 = 0x3C85F7CE

	// Reply bytes. CHECK answers ready or notReady; WAIT and BARRIER answer
	// stopWaiting, and CANCEL_WAIT answers waitCanceled.
	ready        byte = 0
	notReady     byte = 1
	stopWaiting  byte = 0
	waitCanceled byte = 1
)
