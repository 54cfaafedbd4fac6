//go:build linux && cgo

package verbs

/*
#cgo CFLAGS: -I${SRCDIR}/../../internal/dlib
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "ibv.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"

	"github.com/gocomms/gocomms/internal/errkind"
)

// This file is the only one that calls C. Handles cross into Go as
// unsafe.Pointer to C memory, which the garbage collector ignores; no Go
// memory is kept by C beyond a call except a registered region's, which
// RegMR pins.

const haveVerbs = true

// cqSys is a CQ's scratch for Poll, reused so that polling allocates
// nothing: C fills it with flat copies of the work completions.
type cqSys struct {
	buf [C.GCV_POLL_BATCH]C.struct_gcv_completion
}

func sysLoad(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var msg [512]C.char
	switch C.gcv_load(cname, &msg[0], C.size_t(len(msg))) {
	case 0:
		return nil
	case -1:
		return errkind.Of(fmt.Sprintf("rdma/verbs: cannot load %s: %s (rdma-core's libibverbs1 "+
			"or libibverbs package provides it)", name, C.GoString(&msg[0])), ErrNoLibrary, nil)
	default:
		return errkind.Of(fmt.Sprintf("rdma/verbs: %s lacks %s: older than rdma-core's IBVERBS_1.1 ABI",
			name, C.GoString(&msg[0])), ErrNoLibrary, nil)
	}
}

// errnoOr returns err, the errno cgo read after a call that failed, or
// EIO where the library failed without setting one.
func errnoOr(err error) error {
	if err == nil || err == syscall.Errno(0) {
		return syscall.EIO
	}
	return err
}

// rcErr turns a verbs return code into an error: 0 is success, a positive
// value is an errno, -1 means see errno.
func rcErr(rc C.int, err error) error {
	switch {
	case rc == 0:
		return nil
	case rc > 0:
		return syscall.Errno(rc)
	case rc < -1:
		return syscall.Errno(-rc)
	}
	return errnoOr(err)
}

func sysDevices() ([]DeviceInfo, error) {
	var n C.int
	list, err := C.gcv_get_device_list(&n)
	if list == nil {
		return nil, errnoOr(err)
	}
	defer C.gcv_free_device_list(list)
	devs := make([]DeviceInfo, 0, int(n))
	for i := C.int(0); i < n; i++ {
		devs = append(devs, DeviceInfo{
			Name: C.GoString(C.gcv_device_name(list, i)),
			GUID: uint64(C.gcv_device_guid(list, i)),
		})
	}
	return devs, nil
}

func sysOpenDevice(name string) (unsafe.Pointer, error) {
	var n C.int
	list, err := C.gcv_get_device_list(&n)
	if list == nil {
		return nil, errnoOr(err)
	}
	defer C.gcv_free_device_list(list)
	for i := C.int(0); i < n; i++ {
		if C.GoString(C.gcv_device_name(list, i)) != name {
			continue
		}
		ctx, err := C.gcv_open_device(list, i)
		if ctx == nil {
			return nil, errnoOr(err)
		}
		return unsafe.Pointer(ctx), nil
	}
	return nil, syscall.ENODEV // gone since it was listed
}

func sysCloseDevice(ctx unsafe.Pointer) error {
	rc, err := C.gcv_close_device((*C.struct_gcv_context)(ctx))
	return rcErr(rc, err)
}

func sysQueryDevice(ctx unsafe.Pointer) (DeviceAttr, error) {
	var d C.struct_gcv_device_info
	rc, err := C.gcv_query_device((*C.struct_gcv_context)(ctx), &d)
	if err := rcErr(rc, err); err != nil {
		return DeviceAttr{}, err
	}
	return DeviceAttr{
		FirmwareVersion:   C.GoString(&d.fw_ver[0]),
		NodeGUID:          uint64(d.node_guid),
		VendorID:          uint32(d.vendor_id),
		VendorPartID:      uint32(d.vendor_part_id),
		MaxMRSize:         uint64(d.max_mr_size),
		MaxQP:             int(d.max_qp),
		MaxQPWR:           int(d.max_qp_wr),
		MaxSGE:            int(d.max_sge),
		MaxCQ:             int(d.max_cq),
		MaxCQE:            int(d.max_cqe),
		MaxMR:             int(d.max_mr),
		MaxQPRdAtomic:     int(d.max_qp_rd_atom),
		MaxQPInitRdAtomic: int(d.max_qp_init_rd_atom),
		Atomic:            AtomicCap(d.atomic_cap),
		Ports:             int(d.phys_port_cnt),
	}, nil
}

func sysQueryPort(ctx unsafe.Pointer, port uint8) (PortAttr, error) {
	var p C.struct_gcv_port_info
	rc, err := C.gcv_query_port((*C.struct_gcv_context)(ctx), C.uint8_t(port), &p)
	if err := rcErr(rc, err); err != nil {
		return PortAttr{}, err
	}
	return PortAttr{
		State:       PortState(p.state),
		MaxMTU:      MTU(p.max_mtu),
		ActiveMTU:   MTU(p.active_mtu),
		GIDTableLen: int(p.gid_tbl_len),
		CapFlags:    uint32(p.port_cap_flags),
		MaxMsgSize:  uint32(p.max_msg_sz),
		LID:         uint16(p.lid),
		SMLID:       uint16(p.sm_lid),
		LinkLayer:   LinkLayer(p.link_layer),
		ActiveWidth: uint8(p.active_width),
		ActiveSpeed: uint8(p.active_speed),
		PhysState:   uint8(p.phys_state),
	}, nil
}

func sysQueryGID(ctx unsafe.Pointer, port uint8, index int) (GID, error) {
	var raw [16]C.uint8_t
	rc, err := C.gcv_query_gid((*C.struct_gcv_context)(ctx), C.uint8_t(port), C.int(index), &raw[0])
	if err := rcErr(rc, err); err != nil {
		return GID{}, err
	}
	var g GID
	for i, b := range raw {
		g[i] = byte(b)
	}
	return g, nil
}

func sysAllocPD(ctx unsafe.Pointer) (unsafe.Pointer, error) {
	pd, err := C.gcv_alloc_pd((*C.struct_gcv_context)(ctx))
	if pd == nil {
		return nil, errnoOr(err)
	}
	return unsafe.Pointer(pd), nil
}

func sysDeallocPD(pd unsafe.Pointer) error {
	rc, err := C.gcv_dealloc_pd((*C.struct_gcv_pd)(pd))
	return rcErr(rc, err)
}

// sysRegMR hands buf's address to the device, which keeps it: the caller
// has pinned buf.
func sysRegMR(pd unsafe.Pointer, buf []byte, access Access) (unsafe.Pointer, uint32, uint32, error) {
	var lkey, rkey C.uint32_t
	mr, err := C.gcv_reg_mr((*C.struct_gcv_pd)(pd), unsafe.Pointer(&buf[0]), C.size_t(len(buf)),
		C.uint(access), &lkey, &rkey)
	if mr == nil {
		return nil, 0, 0, errnoOr(err)
	}
	return unsafe.Pointer(mr), uint32(lkey), uint32(rkey), nil
}

func sysDeregMR(mr unsafe.Pointer) error {
	rc, err := C.gcv_dereg_mr((*C.struct_gcv_mr)(mr))
	return rcErr(rc, err)
}

func sysCreateCQ(ctx unsafe.Pointer, depth int) (unsafe.Pointer, int, error) {
	var actual C.int
	cq, err := C.gcv_create_cq((*C.struct_gcv_context)(ctx), C.int(depth), &actual)
	if cq == nil {
		return nil, 0, errnoOr(err)
	}
	return unsafe.Pointer(cq), int(actual), nil
}

func sysDestroyCQ(cq unsafe.Pointer) error {
	rc, err := C.gcv_destroy_cq((*C.struct_gcv_cq)(cq))
	return rcErr(rc, err)
}

// sysPoll polls q, holding q.mu, in batches until dst is full or the
// queue is empty.
func sysPoll(q *CQ, dst []Completion) (int, error) {
	total := 0
	for total < len(dst) {
		want := min(len(dst)-total, len(q.sys.buf))
		n := int(C.gcv_poll((*C.struct_gcv_cq)(q.h), &q.sys.buf[0], C.int(want)))
		if n < 0 {
			return total, fmt.Errorf("the provider's poll_cq returned %d", n)
		}
		for i := range n {
			dst[total+i] = completion(&q.sys.buf[i])
		}
		total += n
		if n < want {
			break
		}
	}
	return total, nil
}

func completion(wc *C.struct_gcv_completion) Completion {
	c := Completion{
		WRID:      uint64(wc.wr_id),
		Status:    Status(wc.status),
		Opcode:    Opcode(wc.opcode),
		ByteLen:   uint32(wc.byte_len),
		Imm:       uint32(wc.imm),
		HasImm:    wc.wc_flags&C.GCV_WC_WITH_IMM != 0,
		QPN:       uint32(wc.qp_num),
		SrcQP:     uint32(wc.src_qp),
		VendorErr: uint32(wc.vendor_err),
	}
	if c.Status != StatusSuccess {
		var text string
		if s := C.gcv_status_str(C.int(wc.status)); s != nil {
			text = C.GoString(s)
		}
		c.err = &CompletionError{WRID: c.WRID, QPN: c.QPN, Status: c.Status,
			VendorErr: c.VendorErr, Text: text}
	}
	return c
}

func sysCreateQP(pd, send, recv unsafe.Pointer, caps QPCaps) (unsafe.Pointer, uint32, QPCaps, error) {
	c := C.struct_gcv_caps{
		max_send_wr:     C.uint32_t(caps.MaxSendWR),
		max_recv_wr:     C.uint32_t(caps.MaxRecvWR),
		max_send_sge:    C.uint32_t(caps.MaxSendSGE),
		max_recv_sge:    C.uint32_t(caps.MaxRecvSGE),
		max_inline_data: C.uint32_t(caps.MaxInline),
	}
	var qpn C.uint32_t
	qp, err := C.gcv_create_rc_qp((*C.struct_gcv_pd)(pd), (*C.struct_gcv_cq)(send),
		(*C.struct_gcv_cq)(recv), &c, &qpn)
	if qp == nil {
		return nil, 0, QPCaps{}, errnoOr(err)
	}
	got := QPCaps{
		MaxSendWR:  uint32(c.max_send_wr),
		MaxRecvWR:  uint32(c.max_recv_wr),
		MaxSendSGE: uint32(c.max_send_sge),
		MaxRecvSGE: uint32(c.max_recv_sge),
		MaxInline:  uint32(c.max_inline_data),
	}
	return unsafe.Pointer(qp), uint32(qpn), got, nil
}

func sysDestroyQP(qp unsafe.Pointer) error {
	rc, err := C.gcv_destroy_qp((*C.struct_gcv_qp)(qp))
	return rcErr(rc, err)
}

func sysModifyInit(qp unsafe.Pointer, port uint8, access Access) error {
	rc, err := C.gcv_modify_init((*C.struct_gcv_qp)(qp), C.uint8_t(port), C.uint(access))
	return rcErr(rc, err)
}

func sysModifyRTR(qp unsafe.Pointer, r rtr) error {
	c := C.struct_gcv_rtr{
		path_mtu:           C.int(r.mtu),
		dest_qpn:           C.uint32_t(r.destQPN),
		rq_psn:             C.uint32_t(r.rqPSN),
		max_dest_rd_atomic: C.uint8_t(r.maxDestRdAtom),
		min_rnr_timer:      C.uint8_t(r.minRNRTimer),
		dlid:               C.uint16_t(r.dlid),
		port:               C.uint8_t(r.port),
		sgid_index:         C.uint8_t(r.sgidIndex),
		hop_limit:          C.uint8_t(r.hopLimit),
	}
	if r.global {
		c.is_global = 1
	}
	for i, b := range r.dgid {
		c.dgid[i] = C.uint8_t(b)
	}
	rc, err := C.gcv_modify_rtr((*C.struct_gcv_qp)(qp), &c)
	return rcErr(rc, err)
}

func sysModifyRTS(qp unsafe.Pointer, psn uint32, maxRdAtomic, timeout, retry, rnrRetry uint8) error {
	rc, err := C.gcv_modify_rts((*C.struct_gcv_qp)(qp), C.uint32_t(psn), C.uint8_t(maxRdAtomic),
		C.uint8_t(timeout), C.uint8_t(retry), C.uint8_t(rnrRetry))
	return rcErr(rc, err)
}

func sysPostSend(qp unsafe.Pointer, wrID uint64, op wrOpcode, flags SendFlags, imm uint32,
	local SGE, remote Remote, compareAdd, swap uint64) error {
	rc := C.gcv_post_send((*C.struct_gcv_qp)(qp), C.uint64_t(wrID), C.int(op), C.uint(flags),
		C.uint32_t(imm), C.uint64_t(local.Addr), C.uint32_t(local.Length), C.uint32_t(local.LKey),
		C.uint64_t(remote.Addr), C.uint32_t(remote.RKey), C.uint64_t(compareAdd), C.uint64_t(swap))
	if rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func sysPostRecv(qp unsafe.Pointer, wrID uint64, local SGE) error {
	rc := C.gcv_post_recv((*C.struct_gcv_qp)(qp), C.uint64_t(wrID), C.uint64_t(local.Addr),
		C.uint32_t(local.Length), C.uint32_t(local.LKey))
	if rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}
