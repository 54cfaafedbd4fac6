/*
 * ibv.h: the part of libibverbs' ABI this package uses, and the small C
 * functions that call it.
 *
 * The package builds without rdma-core's headers, so the layouts it needs
 * are declared here, named gcv_* so that they can sit next to the real ones:
 * testdata/abicheck.c includes <infiniband/verbs.h> and this file, asserts
 * that every offset and size below matches, and drives these functions
 * against fake providers. Layouts were copied from rdma-core 44.0's verbs.h.
 * They have been stable since libibverbs 1.1 (the IBVERBS_1.1 ABI): new
 * members go only at the ends of structures that the provider allocates,
 * of which this package reads leading members, or of structures passed
 * with their size, which get room to spare here.
 *
 * Nothing here keeps a pointer it was given beyond the call, except that a
 * registered memory region refers to its buffer until it is deregistered
 * (the Go side pins that buffer).
 */
#ifndef GOCOMMS_RDMA_VERBS_IBV_H
#define GOCOMMS_RDMA_VERBS_IBV_H

#include <arpa/inet.h>
#include "dlib.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Values of rdma-core's enums that the helpers below use. */
enum {
	GCV_QPT_RC = 2,

	GCV_QPS_INIT = 1,
	GCV_QPS_RTR = 2,
	GCV_QPS_RTS = 3,

	GCV_QP_STATE = 1 << 0,
	GCV_QP_ACCESS_FLAGS = 1 << 3,
	GCV_QP_PKEY_INDEX = 1 << 4,
	GCV_QP_PORT = 1 << 5,
	GCV_QP_AV = 1 << 7,
	GCV_QP_PATH_MTU = 1 << 8,
	GCV_QP_TIMEOUT = 1 << 9,
	GCV_QP_RETRY_CNT = 1 << 10,
	GCV_QP_RNR_RETRY = 1 << 11,
	GCV_QP_RQ_PSN = 1 << 12,
	GCV_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	GCV_QP_MIN_RNR_TIMER = 1 << 15,
	GCV_QP_SQ_PSN = 1 << 16,
	GCV_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	GCV_QP_DEST_QPN = 1 << 20,

	GCV_WR_RDMA_WRITE = 0,
	GCV_WR_RDMA_WRITE_WITH_IMM = 1,
	GCV_WR_SEND = 2,
	GCV_WR_SEND_WITH_IMM = 3,
	GCV_WR_RDMA_READ = 4,
	GCV_WR_ATOMIC_CMP_AND_SWP = 5,
	GCV_WR_ATOMIC_FETCH_AND_ADD = 6,

	GCV_WC_WITH_IMM = 1 << 1,

	GCV_POLL_BATCH = 32,
	GCV_PORT_ATTR_ROOM = 256
};

/* IBV_ACCESS_OPTIONAL_RANGE: bits 20..29, flags a device may ignore. */
#define GCV_ACCESS_OPTIONAL_RANGE 0x3ff00000u

union gcv_gid {
	uint8_t raw[16];
	struct {
		uint64_t subnet_prefix;
		uint64_t interface_id;
	} global;
};

struct gcv_device;
struct gcv_pd;
struct gcv_srq;
struct gcv_qp;
struct gcv_cq;
struct gcv_send_wr;
struct gcv_recv_wr;
struct gcv_wc;

/*
 * struct ibv_context_ops, up to post_recv. ibv_poll_cq, ibv_post_send and
 * ibv_post_recv are static inline in verbs.h: they are not exported, and
 * reach the provider through these slots, which every provider fills
 * (rdma-core's verbs_set_ops copies its fast-path functions here).
 */
struct gcv_context_ops {
	void *compat_query_device;
	void *compat_query_port;
	void *compat_alloc_pd;
	void *compat_dealloc_pd;
	void *compat_reg_mr;
	void *compat_rereg_mr;
	void *compat_dereg_mr;
	void *alloc_mw;
	void *bind_mw;
	void *dealloc_mw;
	void *compat_create_cq;
	int (*poll_cq)(struct gcv_cq *cq, int num_entries, struct gcv_wc *wc);
	void *req_notify_cq;
	void *compat_cq_event;
	void *compat_resize_cq;
	void *compat_destroy_cq;
	void *compat_create_srq;
	void *compat_modify_srq;
	void *compat_query_srq;
	void *compat_destroy_srq;
	void *post_srq_recv;
	void *compat_create_qp;
	void *compat_query_qp;
	void *compat_modify_qp;
	void *compat_destroy_qp;
	int (*post_send)(struct gcv_qp *qp, struct gcv_send_wr *wr,
			 struct gcv_send_wr **bad_wr);
	int (*post_recv)(struct gcv_qp *qp, struct gcv_recv_wr *wr,
			 struct gcv_recv_wr **bad_wr);
	/* later members are never read */
};

/* Leading members of provider-allocated objects: only these are read. */
struct gcv_context {
	struct gcv_device *device;
	struct gcv_context_ops ops;
};

struct gcv_cq {
	struct gcv_context *context;
	void *channel;
	void *cq_context;
	uint32_t handle;
	int cqe;
};

struct gcv_qp {
	struct gcv_context *context;
	void *qp_context;
	struct gcv_pd *pd;
	struct gcv_cq *send_cq;
	struct gcv_cq *recv_cq;
	struct gcv_srq *srq;
	uint32_t handle;
	uint32_t qp_num;
};

struct gcv_mr {
	struct gcv_context *context;
	struct gcv_pd *pd;
	void *addr;
	size_t length;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

/* Structures this package allocates: complete layouts. */
struct gcv_device_attr {
	char fw_ver[64];
	uint64_t node_guid; /* big-endian */
	uint64_t sys_image_guid;
	uint64_t max_mr_size;
	uint64_t page_size_cap;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	int max_qp;
	int max_qp_wr;
	unsigned int device_cap_flags;
	int max_sge;
	int max_sge_rd;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_pd;
	int max_qp_rd_atom;
	int max_ee_rd_atom;
	int max_res_rd_atom;
	int max_qp_init_rd_atom;
	int max_ee_init_rd_atom;
	int atomic_cap;
	int max_ee;
	int max_rdd;
	int max_mw;
	int max_raw_ipv6_qp;
	int max_raw_ethy_qp;
	int max_mcast_grp;
	int max_mcast_qp_attach;
	int max_total_mcast_qp_attach;
	int max_ah;
	int max_fmr;
	int max_map_per_fmr;
	int max_srq;
	int max_srq_wr;
	int max_srq_sge;
	uint16_t max_pkeys;
	uint8_t local_ca_ack_delay;
	uint8_t phys_port_cnt;
};

/*
 * struct ibv_port_attr as of rdma-core 44. It has grown at its end before
 * (flags, port_cap_flags2) and may again, so it is only ever handed to the
 * library inside GCV_PORT_ATTR_ROOM zeroed bytes.
 */
struct gcv_port_attr {
	int state;
	int max_mtu;
	int active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint32_t bad_pkey_cntr;
	uint32_t qkey_viol_cntr;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t lmc;
	uint8_t max_vl_num;
	uint8_t sm_sl;
	uint8_t subnet_timeout;
	uint8_t init_type_reply;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
	uint8_t link_layer;
	uint8_t flags;
	uint16_t port_cap_flags2;
};

struct gcv_wc {
	uint64_t wr_id;
	int status;
	int opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm_data; /* big-endian; a union with invalidated_rkey */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned int wc_flags;
	uint16_t pkey_index;
	uint16_t slid;
	uint8_t sl;
	uint8_t dlid_path_bits;
};

struct gcv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct gcv_mw_bind_info {
	void *mr;
	uint64_t addr;
	uint64_t length;
	unsigned int mw_access_flags;
};

struct gcv_send_wr {
	uint64_t wr_id;
	struct gcv_send_wr *next;
	struct gcv_sge *sg_list;
	int num_sge;
	int opcode;
	unsigned int send_flags;
	uint32_t imm_data; /* big-endian; a union with invalidate_rkey */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			void *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
	} wr;
	union {
		struct {
			uint32_t remote_srqn;
		} xrc;
	} qp_type;
	union {
		struct {
			void *mw;
			uint32_t rkey;
			struct gcv_mw_bind_info bind_info;
		} bind_mw;
		struct {
			void *hdr;
			uint16_t hdr_sz;
			uint16_t mss;
		} tso;
	} ext;
};

struct gcv_recv_wr {
	uint64_t wr_id;
	struct gcv_recv_wr *next;
	struct gcv_sge *sg_list;
	int num_sge;
};

struct gcv_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

struct gcv_qp_init_attr {
	void *qp_context;
	struct gcv_cq *send_cq;
	struct gcv_cq *recv_cq;
	struct gcv_srq *srq;
	struct gcv_qp_cap cap;
	int qp_type;
	int sq_sig_all;
};

struct gcv_global_route {
	union gcv_gid dgid;
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
};

struct gcv_ah_attr {
	struct gcv_global_route grh;
	uint16_t dlid;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
};

struct gcv_qp_attr {
	int qp_state;
	int cur_qp_state;
	int path_mtu;
	int path_mig_state;
	uint32_t qkey;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t dest_qp_num;
	unsigned int qp_access_flags;
	struct gcv_qp_cap cap;
	struct gcv_ah_attr ah_attr;
	struct gcv_ah_attr alt_ah_attr;
	uint16_t pkey_index;
	uint16_t alt_pkey_index;
	uint8_t en_sqd_async_notify;
	uint8_t sq_draining;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t port_num;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t alt_port_num;
	uint8_t alt_timeout;
	uint32_t rate_limit;
};

/*
 * The exported functions, found with dlsym. Unversioned dlsym returns a
 * symbol's default version, which for all of these is IBVERBS_1.1 (the
 * IBVERBS_1.0 ones serve binaries built against libibverbs 1.0).
 */
struct gcv_fns {
	int bound;
	struct gcv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct gcv_device **list);
	const char *(*get_device_name)(struct gcv_device *dev);
	uint64_t (*get_device_guid)(struct gcv_device *dev); /* optional */
	struct gcv_context *(*open_device)(struct gcv_device *dev);
	int (*close_device)(struct gcv_context *ctx);
	int (*query_device)(struct gcv_context *ctx, struct gcv_device_attr *attr);
	int (*query_port)(struct gcv_context *ctx, uint8_t port, struct gcv_port_attr *attr);
	int (*query_gid)(struct gcv_context *ctx, uint8_t port, int index, union gcv_gid *gid);
	struct gcv_pd *(*alloc_pd)(struct gcv_context *ctx);
	int (*dealloc_pd)(struct gcv_pd *pd);
	struct gcv_mr *(*reg_mr)(struct gcv_pd *pd, void *addr, size_t length, int access);
	struct gcv_mr *(*reg_mr_iova2)(struct gcv_pd *pd, void *addr, size_t length,
				       uint64_t iova, unsigned int access); /* optional */
	int (*dereg_mr)(struct gcv_mr *mr);
	struct gcv_cq *(*create_cq)(struct gcv_context *ctx, int cqe, void *cq_context,
				    void *channel, int comp_vector);
	int (*destroy_cq)(struct gcv_cq *cq);
	struct gcv_qp *(*create_qp)(struct gcv_pd *pd, struct gcv_qp_init_attr *attr);
	int (*destroy_qp)(struct gcv_qp *qp);
	int (*modify_qp)(struct gcv_qp *qp, struct gcv_qp_attr *attr, int mask);
	const char *(*wc_status_str)(int status); /* optional */
};

static struct gcv_fns gcv_fn;

/*
 * gcv_load opens the library called name and, the first time one opens,
 * binds gcv_fn to it. It returns 0, -1 if the library cannot be opened, or
 * -2 if it lacks a required symbol; err then holds the reason. A bound
 * library is never closed: providers loaded by it, and contexts opened
 * through it, may outlive any handle on it.
 */
static int gcv_load(const char *name, char *err, size_t errlen)
{
	struct gcv_fns t;
	void *h = dlib_open(name, err, errlen);

	if (!h)
		return -1;
	if (gcv_fn.bound) {
		dlclose(h); /* drops only the reference taken just now */
		return 0;
	}
	memset(&t, 0, sizeof t);
#define GCV_BIND(field, sym, required) DLIB_BIND(h, t.field, sym, required, err, errlen)
	GCV_BIND(get_device_list, "ibv_get_device_list", 1);
	GCV_BIND(free_device_list, "ibv_free_device_list", 1);
	GCV_BIND(get_device_name, "ibv_get_device_name", 1);
	GCV_BIND(get_device_guid, "ibv_get_device_guid", 0);
	GCV_BIND(open_device, "ibv_open_device", 1);
	GCV_BIND(close_device, "ibv_close_device", 1);
	GCV_BIND(query_device, "ibv_query_device", 1);
	GCV_BIND(query_port, "ibv_query_port", 1);
	GCV_BIND(query_gid, "ibv_query_gid", 1);
	GCV_BIND(alloc_pd, "ibv_alloc_pd", 1);
	GCV_BIND(dealloc_pd, "ibv_dealloc_pd", 1);
	GCV_BIND(reg_mr, "ibv_reg_mr", 1);
	GCV_BIND(reg_mr_iova2, "ibv_reg_mr_iova2", 0);
	GCV_BIND(dereg_mr, "ibv_dereg_mr", 1);
	GCV_BIND(create_cq, "ibv_create_cq", 1);
	GCV_BIND(destroy_cq, "ibv_destroy_cq", 1);
	GCV_BIND(create_qp, "ibv_create_qp", 1);
	GCV_BIND(destroy_qp, "ibv_destroy_qp", 1);
	GCV_BIND(modify_qp, "ibv_modify_qp", 1);
	GCV_BIND(wc_status_str, "ibv_wc_status_str", 0);
#undef GCV_BIND
	t.bound = 1;
	gcv_fn = t;
	return 0;
}

static uint64_t gcv_be64(uint64_t v)
{
	const uint8_t *b = (const uint8_t *)&v;
	return (uint64_t)b[0] << 56 | (uint64_t)b[1] << 48 | (uint64_t)b[2] << 40 |
	       (uint64_t)b[3] << 32 | (uint64_t)b[4] << 24 | (uint64_t)b[5] << 16 |
	       (uint64_t)b[6] << 8 | (uint64_t)b[7];
}

/*
 * Thin calls through gcv_fn, which cgo cannot make itself. Those that
 * return a pointer leave errno as the library set it.
 */
static struct gcv_device **gcv_get_device_list(int *num)
{
	return gcv_fn.get_device_list(num);
}

static void gcv_free_device_list(struct gcv_device **list)
{
	gcv_fn.free_device_list(list);
}

static int gcv_close_device(struct gcv_context *ctx)
{
	return gcv_fn.close_device(ctx);
}

static struct gcv_pd *gcv_alloc_pd(struct gcv_context *ctx)
{
	return gcv_fn.alloc_pd(ctx);
}

static int gcv_dealloc_pd(struct gcv_pd *pd)
{
	return gcv_fn.dealloc_pd(pd);
}

static int gcv_dereg_mr(struct gcv_mr *mr)
{
	return gcv_fn.dereg_mr(mr);
}

static int gcv_destroy_cq(struct gcv_cq *cq)
{
	return gcv_fn.destroy_cq(cq);
}

static int gcv_destroy_qp(struct gcv_qp *qp)
{
	return gcv_fn.destroy_qp(qp);
}

static const char *gcv_device_name(struct gcv_device **list, int i)
{
	return gcv_fn.get_device_name(list[i]);
}

static uint64_t gcv_device_guid(struct gcv_device **list, int i)
{
	return gcv_fn.get_device_guid ? gcv_be64(gcv_fn.get_device_guid(list[i])) : 0;
}

static struct gcv_context *gcv_open_device(struct gcv_device **list, int i)
{
	return gcv_fn.open_device(list[i]);
}

static const char *gcv_status_str(int status)
{
	return gcv_fn.wc_status_str ? gcv_fn.wc_status_str(status) : NULL;
}

/* Flat copies of what the Go side reads, free of unions and enums. */
struct gcv_device_info {
	char fw_ver[64];
	uint64_t node_guid;
	uint64_t max_mr_size;
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	int max_qp;
	int max_qp_wr;
	int max_sge;
	int max_cq;
	int max_cqe;
	int max_mr;
	int max_qp_rd_atom;
	int max_qp_init_rd_atom;
	int atomic_cap;
	int phys_port_cnt;
};

static int gcv_query_device(struct gcv_context *ctx, struct gcv_device_info *out)
{
	struct gcv_device_attr a;
	int rc;

	memset(&a, 0, sizeof a);
	rc = gcv_fn.query_device(ctx, &a);
	if (rc)
		return rc;
	memcpy(out->fw_ver, a.fw_ver, sizeof out->fw_ver);
	out->fw_ver[sizeof out->fw_ver - 1] = 0;
	out->node_guid = gcv_be64(a.node_guid);
	out->max_mr_size = a.max_mr_size;
	out->vendor_id = a.vendor_id;
	out->vendor_part_id = a.vendor_part_id;
	out->max_qp = a.max_qp;
	out->max_qp_wr = a.max_qp_wr;
	out->max_sge = a.max_sge;
	out->max_cq = a.max_cq;
	out->max_cqe = a.max_cqe;
	out->max_mr = a.max_mr;
	out->max_qp_rd_atom = a.max_qp_rd_atom;
	out->max_qp_init_rd_atom = a.max_qp_init_rd_atom;
	out->atomic_cap = a.atomic_cap;
	out->phys_port_cnt = a.phys_port_cnt;
	return 0;
}

struct gcv_port_info {
	int state;
	int max_mtu;
	int active_mtu;
	int gid_tbl_len;
	uint32_t port_cap_flags;
	uint32_t max_msg_sz;
	uint16_t lid;
	uint16_t sm_lid;
	uint8_t link_layer;
	uint8_t active_width;
	uint8_t active_speed;
	uint8_t phys_state;
};

/*
 * ibv_query_port is a macro over an inline function in verbs.h; the
 * exported symbol of that name takes the old structure, a prefix of
 * today's. rdma-core 44.0 tells the provider that size; nothing promises
 * every release does, so the provider gets room to spare.
 */
static int gcv_query_port(struct gcv_context *ctx, uint8_t port, struct gcv_port_info *out)
{
	union {
		struct gcv_port_attr attr;
		unsigned char room[GCV_PORT_ATTR_ROOM];
	} u;
	int rc;

	memset(&u, 0, sizeof u);
	rc = gcv_fn.query_port(ctx, port, &u.attr);
	if (rc)
		return rc;
	out->state = u.attr.state;
	out->max_mtu = u.attr.max_mtu;
	out->active_mtu = u.attr.active_mtu;
	out->gid_tbl_len = u.attr.gid_tbl_len;
	out->port_cap_flags = u.attr.port_cap_flags;
	out->max_msg_sz = u.attr.max_msg_sz;
	out->lid = u.attr.lid;
	out->sm_lid = u.attr.sm_lid;
	out->link_layer = u.attr.link_layer;
	out->active_width = u.attr.active_width;
	out->active_speed = u.attr.active_speed;
	out->phys_state = u.attr.phys_state;
	return 0;
}

static int gcv_query_gid(struct gcv_context *ctx, uint8_t port, int index, uint8_t *out)
{
	union gcv_gid g;
	int rc;

	memset(&g, 0, sizeof g);
	rc = gcv_fn.query_gid(ctx, port, index, &g);
	if (rc)
		return rc;
	memcpy(out, g.raw, sizeof g.raw);
	return 0;
}

/*
 * As verbs.h's ibv_reg_mr does: ibv_reg_mr_iova2 only when an optional
 * access flag asks for it, and those flags dropped where it is missing
 * (a device may ignore them anyway).
 */
static struct gcv_mr *gcv_reg_mr(struct gcv_pd *pd, void *addr, size_t length,
				 unsigned int access, uint32_t *lkey, uint32_t *rkey)
{
	struct gcv_mr *mr;

	if ((access & GCV_ACCESS_OPTIONAL_RANGE) && gcv_fn.reg_mr_iova2)
		mr = gcv_fn.reg_mr_iova2(pd, addr, length, (uint64_t)(uintptr_t)addr, access);
	else
		mr = gcv_fn.reg_mr(pd, addr, length, (int)(access & ~GCV_ACCESS_OPTIONAL_RANGE));
	if (mr) {
		*lkey = mr->lkey;
		*rkey = mr->rkey;
	}
	return mr;
}

static struct gcv_cq *gcv_create_cq(struct gcv_context *ctx, int depth, int *actual)
{
	struct gcv_cq *cq = gcv_fn.create_cq(ctx, depth, NULL, NULL, 0);
	if (cq)
		*actual = cq->cqe;
	return cq;
}

struct gcv_completion {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t imm; /* host order */
	uint32_t qp_num;
	uint32_t src_qp;
	uint32_t wc_flags;
};

/* gcv_poll is ibv_poll_cq for at most GCV_POLL_BATCH entries. */
static int gcv_poll(struct gcv_cq *cq, struct gcv_completion *out, int max)
{
	struct gcv_wc wc[GCV_POLL_BATCH];
	int i, n;

	if (max > GCV_POLL_BATCH)
		max = GCV_POLL_BATCH;
	n = cq->context->ops.poll_cq(cq, max, wc);
	for (i = 0; i < n; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = (uint32_t)wc[i].status;
		out[i].opcode = (uint32_t)wc[i].opcode;
		out[i].vendor_err = wc[i].vendor_err;
		out[i].byte_len = wc[i].byte_len;
		out[i].imm = (wc[i].wc_flags & GCV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
		out[i].qp_num = wc[i].qp_num;
		out[i].src_qp = wc[i].src_qp;
		out[i].wc_flags = wc[i].wc_flags;
	}
	return n;
}

struct gcv_caps {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* gcv_create_rc_qp creates a reliable-connected QP; caps is in-out. */
static struct gcv_qp *gcv_create_rc_qp(struct gcv_pd *pd, struct gcv_cq *send_cq,
				       struct gcv_cq *recv_cq, struct gcv_caps *caps,
				       uint32_t *qpn)
{
	struct gcv_qp_init_attr a;
	struct gcv_qp *qp;

	memset(&a, 0, sizeof a);
	a.send_cq = send_cq;
	a.recv_cq = recv_cq;
	a.cap.max_send_wr = caps->max_send_wr;
	a.cap.max_recv_wr = caps->max_recv_wr;
	a.cap.max_send_sge = caps->max_send_sge;
	a.cap.max_recv_sge = caps->max_recv_sge;
	a.cap.max_inline_data = caps->max_inline_data;
	a.qp_type = GCV_QPT_RC;
	a.sq_sig_all = 0;
	qp = gcv_fn.create_qp(pd, &a);
	if (!qp)
		return NULL;
	caps->max_send_wr = a.cap.max_send_wr;
	caps->max_recv_wr = a.cap.max_recv_wr;
	caps->max_send_sge = a.cap.max_send_sge;
	caps->max_recv_sge = a.cap.max_recv_sge;
	caps->max_inline_data = a.cap.max_inline_data;
	*qpn = qp->qp_num;
	return qp;
}

static int gcv_modify_init(struct gcv_qp *qp, uint8_t port, unsigned int access)
{
	struct gcv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.qp_state = GCV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = access;
	return gcv_fn.modify_qp(qp, &a, GCV_QP_STATE | GCV_QP_PKEY_INDEX | GCV_QP_PORT |
					       GCV_QP_ACCESS_FLAGS);
}

/* The receive side of a connection, as the Go side computed it. */
struct gcv_rtr {
	int path_mtu;
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint16_t dlid;
	uint8_t sl;
	uint8_t port;
	uint8_t is_global;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint8_t dgid[16];
};

static int gcv_modify_rtr(struct gcv_qp *qp, const struct gcv_rtr *r)
{
	struct gcv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.qp_state = GCV_QPS_RTR;
	a.path_mtu = r->path_mtu;
	a.dest_qp_num = r->dest_qpn;
	a.rq_psn = r->rq_psn;
	a.max_dest_rd_atomic = r->max_dest_rd_atomic;
	a.min_rnr_timer = r->min_rnr_timer;
	a.ah_attr.dlid = r->dlid;
	a.ah_attr.sl = r->sl;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = r->port;
	a.ah_attr.is_global = r->is_global;
	if (r->is_global) {
		memcpy(a.ah_attr.grh.dgid.raw, r->dgid, sizeof r->dgid);
		a.ah_attr.grh.sgid_index = r->sgid_index;
		a.ah_attr.grh.hop_limit = r->hop_limit;
		a.ah_attr.grh.traffic_class = r->traffic_class;
		a.ah_attr.grh.flow_label = r->flow_label;
	}
	return gcv_fn.modify_qp(qp, &a, GCV_QP_STATE | GCV_QP_AV | GCV_QP_PATH_MTU |
					       GCV_QP_DEST_QPN | GCV_QP_RQ_PSN |
					       GCV_QP_MAX_DEST_RD_ATOMIC | GCV_QP_MIN_RNR_TIMER);
}

static int gcv_modify_rts(struct gcv_qp *qp, uint32_t sq_psn, uint8_t max_rd_atomic,
			  uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry)
{
	struct gcv_qp_attr a;

	memset(&a, 0, sizeof a);
	a.qp_state = GCV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = max_rd_atomic;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = rnr_retry;
	return gcv_fn.modify_qp(qp, &a, GCV_QP_STATE | GCV_QP_SQ_PSN | GCV_QP_MAX_QP_RD_ATOMIC |
					       GCV_QP_TIMEOUT | GCV_QP_RETRY_CNT |
					       GCV_QP_RNR_RETRY);
}

/* Providers return a positive errno; a few return it negated. */
static int gcv_errno(int rc)
{
	return rc < 0 ? -rc : rc;
}

/*
 * gcv_post_send posts one work request, built on this stack: the provider
 * copies it into its queue before returning. An empty local range posts no
 * scatter-gather entry.
 */
static int gcv_post_send(struct gcv_qp *qp, uint64_t wr_id, int opcode, unsigned int flags,
			 uint32_t imm, uint64_t laddr, uint32_t llen, uint32_t lkey,
			 uint64_t raddr, uint32_t rkey, uint64_t compare_add, uint64_t swap)
{
	struct gcv_sge sge;
	struct gcv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof wr);
	sge.addr = laddr;
	sge.length = llen;
	sge.lkey = lkey;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = llen ? 1 : 0;
	wr.opcode = opcode;
	wr.send_flags = flags;
	switch (opcode) {
	case GCV_WR_RDMA_WRITE_WITH_IMM:
		wr.imm_data = htonl(imm);
		/* fall through */
	case GCV_WR_RDMA_WRITE:
	case GCV_WR_RDMA_READ:
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		break;
	case GCV_WR_SEND_WITH_IMM:
		wr.imm_data = htonl(imm);
		break;
	case GCV_WR_ATOMIC_CMP_AND_SWP:
	case GCV_WR_ATOMIC_FETCH_AND_ADD:
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = compare_add;
		wr.wr.atomic.swap = swap;
		break;
	}
	return gcv_errno(qp->context->ops.post_send(qp, &wr, &bad));
}

static int gcv_post_recv(struct gcv_qp *qp, uint64_t wr_id, uint64_t laddr, uint32_t llen,
			 uint32_t lkey)
{
	struct gcv_sge sge;
	struct gcv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof wr);
	sge.addr = laddr;
	sge.length = llen;
	sge.lkey = lkey;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = llen ? 1 : 0;
	return gcv_errno(qp->context->ops.post_recv(qp, &wr, &bad));
}

#endif
