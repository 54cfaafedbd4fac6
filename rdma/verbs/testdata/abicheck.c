/*
 * abicheck checks ibv.h against rdma-core's own <infiniband/verbs.h>: every
 * declared offset and size at compile time, then the helpers' effect on the
 * real structures through fake providers, then (where libibverbs.so.1
 * loads) that dlsym binds the IBVERBS_1.1 versions. TestABI builds and runs
 * it; it prints "ok" and exits 0, or names what differs and exits 1.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>

#include "../ibv.h"

#define SAME(mine, theirs, field)                                             \
	_Static_assert(offsetof(mine, field) == offsetof(theirs, field),       \
		       #theirs "." #field " moved");                           \
	_Static_assert(sizeof(((mine *)0)->field) == sizeof(((theirs *)0)->field), \
		       #theirs "." #field " resized")
#define OFFSET(mine, theirs, field)                                    \
	_Static_assert(offsetof(mine, field) == offsetof(theirs, field), \
		       #theirs "." #field " moved")
#define SIZE(mine, theirs) \
	_Static_assert(sizeof(mine) == sizeof(theirs), #theirs " resized")

SIZE(union gcv_gid, union ibv_gid);

SAME(struct gcv_context_ops, struct ibv_context_ops, poll_cq);
SAME(struct gcv_context_ops, struct ibv_context_ops, req_notify_cq);
SAME(struct gcv_context_ops, struct ibv_context_ops, post_srq_recv);
SAME(struct gcv_context_ops, struct ibv_context_ops, post_send);
SAME(struct gcv_context_ops, struct ibv_context_ops, post_recv);
SAME(struct gcv_context, struct ibv_context, device);
OFFSET(struct gcv_context, struct ibv_context, ops); /* a prefix of it */

SAME(struct gcv_cq, struct ibv_cq, context);
SAME(struct gcv_cq, struct ibv_cq, handle);
SAME(struct gcv_cq, struct ibv_cq, cqe);

SAME(struct gcv_qp, struct ibv_qp, context);
SAME(struct gcv_qp, struct ibv_qp, send_cq);
SAME(struct gcv_qp, struct ibv_qp, recv_cq);
SAME(struct gcv_qp, struct ibv_qp, handle);
SAME(struct gcv_qp, struct ibv_qp, qp_num);

SIZE(struct gcv_mr, struct ibv_mr);
SAME(struct gcv_mr, struct ibv_mr, addr);
SAME(struct gcv_mr, struct ibv_mr, length);
SAME(struct gcv_mr, struct ibv_mr, lkey);
SAME(struct gcv_mr, struct ibv_mr, rkey);

SIZE(struct gcv_device_attr, struct ibv_device_attr);
SAME(struct gcv_device_attr, struct ibv_device_attr, fw_ver);
SAME(struct gcv_device_attr, struct ibv_device_attr, node_guid);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_mr_size);
SAME(struct gcv_device_attr, struct ibv_device_attr, vendor_id);
SAME(struct gcv_device_attr, struct ibv_device_attr, vendor_part_id);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_qp);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_qp_wr);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_sge);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_cq);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_cqe);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_mr);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_qp_rd_atom);
SAME(struct gcv_device_attr, struct ibv_device_attr, max_qp_init_rd_atom);
SAME(struct gcv_device_attr, struct ibv_device_attr, atomic_cap);
SAME(struct gcv_device_attr, struct ibv_device_attr, phys_port_cnt);

_Static_assert(sizeof(struct ibv_port_attr) <= GCV_PORT_ATTR_ROOM, "ibv_port_attr outgrew its room");
SAME(struct gcv_port_attr, struct ibv_port_attr, state);
SAME(struct gcv_port_attr, struct ibv_port_attr, max_mtu);
SAME(struct gcv_port_attr, struct ibv_port_attr, active_mtu);
SAME(struct gcv_port_attr, struct ibv_port_attr, gid_tbl_len);
SAME(struct gcv_port_attr, struct ibv_port_attr, port_cap_flags);
SAME(struct gcv_port_attr, struct ibv_port_attr, max_msg_sz);
SAME(struct gcv_port_attr, struct ibv_port_attr, lid);
SAME(struct gcv_port_attr, struct ibv_port_attr, sm_lid);
SAME(struct gcv_port_attr, struct ibv_port_attr, active_width);
SAME(struct gcv_port_attr, struct ibv_port_attr, active_speed);
SAME(struct gcv_port_attr, struct ibv_port_attr, phys_state);
SAME(struct gcv_port_attr, struct ibv_port_attr, link_layer);
SAME(struct gcv_port_attr, struct ibv_port_attr, port_cap_flags2);

SIZE(struct gcv_wc, struct ibv_wc);
SAME(struct gcv_wc, struct ibv_wc, wr_id);
SAME(struct gcv_wc, struct ibv_wc, status);
SAME(struct gcv_wc, struct ibv_wc, opcode);
SAME(struct gcv_wc, struct ibv_wc, vendor_err);
SAME(struct gcv_wc, struct ibv_wc, byte_len);
SAME(struct gcv_wc, struct ibv_wc, imm_data);
SAME(struct gcv_wc, struct ibv_wc, qp_num);
SAME(struct gcv_wc, struct ibv_wc, src_qp);
SAME(struct gcv_wc, struct ibv_wc, wc_flags);
SAME(struct gcv_wc, struct ibv_wc, dlid_path_bits);

SIZE(struct gcv_sge, struct ibv_sge);
SAME(struct gcv_sge, struct ibv_sge, addr);
SAME(struct gcv_sge, struct ibv_sge, length);
SAME(struct gcv_sge, struct ibv_sge, lkey);

SIZE(struct gcv_send_wr, struct ibv_send_wr);
SAME(struct gcv_send_wr, struct ibv_send_wr, wr_id);
SAME(struct gcv_send_wr, struct ibv_send_wr, next);
SAME(struct gcv_send_wr, struct ibv_send_wr, sg_list);
SAME(struct gcv_send_wr, struct ibv_send_wr, num_sge);
SAME(struct gcv_send_wr, struct ibv_send_wr, opcode);
SAME(struct gcv_send_wr, struct ibv_send_wr, send_flags);
SAME(struct gcv_send_wr, struct ibv_send_wr, imm_data);
SAME(struct gcv_send_wr, struct ibv_send_wr, wr.rdma.remote_addr);
SAME(struct gcv_send_wr, struct ibv_send_wr, wr.rdma.rkey);
SAME(struct gcv_send_wr, struct ibv_send_wr, wr.atomic.remote_addr);
SAME(struct gcv_send_wr, struct ibv_send_wr, wr.atomic.compare_add);
SAME(struct gcv_send_wr, struct ibv_send_wr, wr.atomic.swap);
SAME(struct gcv_send_wr, struct ibv_send_wr, wr.atomic.rkey);
SAME(struct gcv_send_wr, struct ibv_send_wr, qp_type);

SIZE(struct gcv_recv_wr, struct ibv_recv_wr);
SAME(struct gcv_recv_wr, struct ibv_recv_wr, wr_id);
SAME(struct gcv_recv_wr, struct ibv_recv_wr, next);
SAME(struct gcv_recv_wr, struct ibv_recv_wr, sg_list);
SAME(struct gcv_recv_wr, struct ibv_recv_wr, num_sge);

SIZE(struct gcv_qp_cap, struct ibv_qp_cap);
SIZE(struct gcv_qp_init_attr, struct ibv_qp_init_attr);
SAME(struct gcv_qp_init_attr, struct ibv_qp_init_attr, send_cq);
SAME(struct gcv_qp_init_attr, struct ibv_qp_init_attr, recv_cq);
SAME(struct gcv_qp_init_attr, struct ibv_qp_init_attr, srq);
SAME(struct gcv_qp_init_attr, struct ibv_qp_init_attr, cap.max_send_wr);
SAME(struct gcv_qp_init_attr, struct ibv_qp_init_attr, cap.max_inline_data);
SAME(struct gcv_qp_init_attr, struct ibv_qp_init_attr, qp_type);
SAME(struct gcv_qp_init_attr, struct ibv_qp_init_attr, sq_sig_all);

SIZE(struct gcv_global_route, struct ibv_global_route);
SIZE(struct gcv_ah_attr, struct ibv_ah_attr);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, grh.dgid);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, grh.flow_label);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, grh.sgid_index);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, grh.hop_limit);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, grh.traffic_class);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, dlid);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, sl);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, is_global);
SAME(struct gcv_ah_attr, struct ibv_ah_attr, port_num);

SIZE(struct gcv_qp_attr, struct ibv_qp_attr);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, qp_state);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, path_mtu);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, rq_psn);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, sq_psn);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, dest_qp_num);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, qp_access_flags);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, ah_attr);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, alt_ah_attr);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, pkey_index);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, max_rd_atomic);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, max_dest_rd_atomic);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, min_rnr_timer);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, port_num);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, timeout);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, retry_cnt);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, rnr_retry);
SAME(struct gcv_qp_attr, struct ibv_qp_attr, rate_limit);

/* The enum values ibv.h and the Go side use. */
#define VALUE(mine, theirs) \
	_Static_assert((long long)(mine) == (long long)(theirs), #theirs " renumbered")
VALUE(GCV_QPT_RC, IBV_QPT_RC);
VALUE(GCV_QPS_INIT, IBV_QPS_INIT);
VALUE(GCV_QPS_RTR, IBV_QPS_RTR);
VALUE(GCV_QPS_RTS, IBV_QPS_RTS);
VALUE(GCV_QP_STATE, IBV_QP_STATE);
VALUE(GCV_QP_ACCESS_FLAGS, IBV_QP_ACCESS_FLAGS);
VALUE(GCV_QP_PKEY_INDEX, IBV_QP_PKEY_INDEX);
VALUE(GCV_QP_PORT, IBV_QP_PORT);
VALUE(GCV_QP_AV, IBV_QP_AV);
VALUE(GCV_QP_PATH_MTU, IBV_QP_PATH_MTU);
VALUE(GCV_QP_TIMEOUT, IBV_QP_TIMEOUT);
VALUE(GCV_QP_RETRY_CNT, IBV_QP_RETRY_CNT);
VALUE(GCV_QP_RNR_RETRY, IBV_QP_RNR_RETRY);
VALUE(GCV_QP_RQ_PSN, IBV_QP_RQ_PSN);
VALUE(GCV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC);
VALUE(GCV_QP_MIN_RNR_TIMER, IBV_QP_MIN_RNR_TIMER);
VALUE(GCV_QP_SQ_PSN, IBV_QP_SQ_PSN);
VALUE(GCV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_DEST_RD_ATOMIC);
VALUE(GCV_QP_DEST_QPN, IBV_QP_DEST_QPN);
VALUE(GCV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
VALUE(GCV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
VALUE(GCV_WR_SEND, IBV_WR_SEND);
VALUE(GCV_WR_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
VALUE(GCV_WR_RDMA_READ, IBV_WR_RDMA_READ);
VALUE(GCV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
VALUE(GCV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
VALUE(GCV_WC_WITH_IMM, IBV_WC_WITH_IMM);
VALUE(GCV_ACCESS_OPTIONAL_RANGE, IBV_ACCESS_OPTIONAL_RANGE);

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                            \
		}                                                              \
	} while (0)

/* What the fake provider saw. */
static struct ibv_send_wr seen_wr;
static struct ibv_sge seen_sge;
static int seen_num_sge;
static struct ibv_recv_wr seen_rwr;
static struct ibv_qp_attr seen_attr;
static int seen_mask;
static struct ibv_qp_init_attr seen_init;

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	seen_wr = *wr;
	seen_num_sge = wr->num_sge;
	if (wr->num_sge)
		seen_sge = wr->sg_list[0];
	return qp->qp_num == 0xdead ? -ENOMEM : 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)bad;
	seen_rwr = *wr;
	seen_num_sge = wr->num_sge;
	if (wr->num_sge)
		seen_sge = wr->sg_list[0];
	return 0;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	if (n < 2)
		return -1;
	memset(wc, 0, 2 * sizeof *wc);
	wc[0].wr_id = 7;
	wc[0].status = IBV_WC_SUCCESS;
	wc[0].opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	wc[0].byte_len = 64;
	wc[0].imm_data = htonl(0xdeadbeef);
	wc[0].wc_flags = IBV_WC_WITH_IMM;
	wc[0].qp_num = 0x11;
	wc[1].wr_id = 8;
	wc[1].status = IBV_WC_REM_ACCESS_ERR;
	wc[1].opcode = IBV_WC_RDMA_READ;
	wc[1].vendor_err = 0x88;
	wc[1].imm_data = htonl(0x12345678); /* no IBV_WC_WITH_IMM: ignored */
	return 2;
}

static int fake_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	seen_attr = *attr;
	seen_mask = mask;
	return 0;
}

static struct ibv_qp created_qp;

static struct ibv_qp *fake_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	(void)pd;
	seen_init = *attr;
	attr->cap.max_send_wr = 256; /* providers round up */
	attr->cap.max_inline_data = 220;
	created_qp.qp_num = 0xabcde;
	return &created_qp;
}

static int fake_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	(void)ctx;
	if (port != 1)
		return EINVAL;
	memset(attr, 0, sizeof *attr);
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = IBV_MTU_1024;
	attr->gid_tbl_len = 16;
	attr->lid = 0x1234;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	attr->port_cap_flags2 = 0xffff;
	return 0;
}

static int fake_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	(void)ctx;
	memset(attr, 0, sizeof *attr);
	strcpy(attr->fw_ver, "1.2.3");
	attr->node_guid = htonl(1); /* big-endian 0x0000000100000000 on little-endian hosts */
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 8;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->phys_port_cnt = 2;
	return 0;
}

static int reg_calls, iova2_calls, seen_access;
static struct ibv_mr fake_mr;

static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	(void)pd;
	(void)addr;
	(void)len;
	reg_calls++;
	seen_access = access;
	fake_mr.lkey = 0x1111;
	fake_mr.rkey = 0x2222;
	return &fake_mr;
}

static struct ibv_mr *fake_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len,
					uint64_t iova, unsigned int access)
{
	(void)pd;
	(void)len;
	CHECK(iova == (uint64_t)(uintptr_t)addr);
	iova2_calls++;
	seen_access = (int)access;
	return &fake_mr;
}

static int fake_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	(void)ctx;
	if (port != 1 || index != 3)
		return -1;
	memset(gid, 0, sizeof *gid);
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	gid->raw[15] = 0x42;
	return 0;
}

static struct ibv_cq fake_cq;

static struct ibv_cq *fake_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
				     struct ibv_comp_channel *channel, int comp_vector)
{
	(void)ctx;
	CHECK(cq_context == NULL && channel == NULL && comp_vector == 0);
	fake_cq.cqe = cqe * 2 - 1; /* providers round up */
	return &fake_cq;
}

static void check_resources(void)
{
	uint32_t lkey = 0, rkey = 0;
	uint8_t gid[16];
	char buf[64];
	int actual = 0;

	*(void **)&gcv_fn.reg_mr = (void *)fake_reg_mr;
	*(void **)&gcv_fn.reg_mr_iova2 = (void *)fake_reg_mr_iova2;
	*(void **)&gcv_fn.query_gid = (void *)fake_query_gid;
	*(void **)&gcv_fn.create_cq = (void *)fake_create_cq;

	CHECK(gcv_reg_mr(NULL, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE, &lkey, &rkey) ==
	      (struct gcv_mr *)&fake_mr);
	CHECK(reg_calls == 1 && iova2_calls == 0 && seen_access == IBV_ACCESS_LOCAL_WRITE);
	CHECK(lkey == 0x1111 && rkey == 0x2222);
	gcv_reg_mr(NULL, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING,
		   &lkey, &rkey);
	CHECK(iova2_calls == 1 &&
	      seen_access == (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING));
	gcv_fn.reg_mr_iova2 = NULL;
	gcv_reg_mr(NULL, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING,
		   &lkey, &rkey);
	CHECK(reg_calls == 2 && seen_access == IBV_ACCESS_LOCAL_WRITE);

	CHECK(gcv_query_gid(NULL, 1, 3, gid) == 0);
	CHECK(gid[0] == 0xfe && gid[1] == 0x80 && gid[15] == 0x42);
	CHECK(gcv_query_gid(NULL, 1, 4, gid) == -1);

	CHECK(gcv_create_cq(NULL, 64, &actual) == (struct gcv_cq *)&fake_cq && actual == 127);
}

static void check_posts(void)
{
	struct ibv_context ctx;
	struct ibv_qp qp;

	memset(&ctx, 0, sizeof ctx);
	memset(&qp, 0, sizeof qp);
	ctx.ops.post_send = fake_post_send;
	ctx.ops.post_recv = fake_post_recv;
	qp.context = &ctx;

	CHECK(gcv_post_send((struct gcv_qp *)&qp, 42, GCV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_SIGNALED,
			    0xcafef00d, 0x1000, 64, 0x77, 0x2000, 0x99, 0, 0) == 0);
	CHECK(seen_wr.wr_id == 42);
	CHECK(seen_wr.next == NULL);
	CHECK(seen_wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM);
	CHECK(seen_wr.send_flags == IBV_SEND_SIGNALED);
	CHECK(seen_wr.imm_data == htonl(0xcafef00d));
	CHECK(seen_wr.wr.rdma.remote_addr == 0x2000);
	CHECK(seen_wr.wr.rdma.rkey == 0x99);
	CHECK(seen_num_sge == 1);
	CHECK(seen_sge.addr == 0x1000 && seen_sge.length == 64 && seen_sge.lkey == 0x77);

	CHECK(gcv_post_send((struct gcv_qp *)&qp, 43, GCV_WR_RDMA_READ, 0, 0, 0x1000, 8, 0x77,
			    0x3000, 0x98, 0, 0) == 0);
	CHECK(seen_wr.opcode == IBV_WR_RDMA_READ && seen_wr.send_flags == 0);
	CHECK(seen_wr.wr.rdma.remote_addr == 0x3000 && seen_wr.wr.rdma.rkey == 0x98);

	CHECK(gcv_post_send((struct gcv_qp *)&qp, 44, GCV_WR_ATOMIC_CMP_AND_SWP, IBV_SEND_SIGNALED,
			    0, 0x1008, 8, 0x77, 0x4000, 0x97, 5, 6) == 0);
	CHECK(seen_wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP);
	CHECK(seen_wr.wr.atomic.remote_addr == 0x4000);
	CHECK(seen_wr.wr.atomic.rkey == 0x97);
	CHECK(seen_wr.wr.atomic.compare_add == 5 && seen_wr.wr.atomic.swap == 6);

	CHECK(gcv_post_send((struct gcv_qp *)&qp, 45, GCV_WR_ATOMIC_FETCH_AND_ADD, 0, 0, 0x1010, 8,
			    0x77, 0x4008, 0x96, 9, 0) == 0);
	CHECK(seen_wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD);
	CHECK(seen_wr.wr.atomic.compare_add == 9 && seen_wr.wr.atomic.rkey == 0x96);

	CHECK(gcv_post_send((struct gcv_qp *)&qp, 46, GCV_WR_RDMA_WRITE, 0, 0, 0, 0, 0, 0x5000,
			    0x95, 0, 0) == 0);
	CHECK(seen_num_sge == 0);

	qp.qp_num = 0xdead;
	CHECK(gcv_post_send((struct gcv_qp *)&qp, 47, GCV_WR_SEND, 0, 0, 0, 0, 0, 0, 0, 0, 0) ==
	      ENOMEM);

	CHECK(gcv_post_recv((struct gcv_qp *)&qp, 48, 0x6000, 128, 0x55) == 0);
	CHECK(seen_rwr.wr_id == 48 && seen_rwr.next == NULL && seen_num_sge == 1);
	CHECK(seen_sge.addr == 0x6000 && seen_sge.length == 128 && seen_sge.lkey == 0x55);
}

static void check_poll(void)
{
	struct ibv_context ctx;
	struct ibv_cq cq;
	struct gcv_completion out[GCV_POLL_BATCH];

	memset(&ctx, 0, sizeof ctx);
	memset(&cq, 0, sizeof cq);
	ctx.ops.poll_cq = fake_poll_cq;
	cq.context = &ctx;
	CHECK(gcv_poll((struct gcv_cq *)&cq, out, 1000) == 2);
	CHECK(out[0].wr_id == 7 && out[0].status == 0 && out[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(out[0].imm == 0xdeadbeef && out[0].byte_len == 64 && out[0].qp_num == 0x11);
	CHECK(out[1].wr_id == 8 && out[1].status == IBV_WC_REM_ACCESS_ERR);
	CHECK(out[1].opcode == IBV_WC_RDMA_READ && out[1].vendor_err == 0x88 && out[1].imm == 0);
	CHECK(gcv_poll((struct gcv_cq *)&cq, out, 1) == -1);
}

static void check_control(void)
{
	struct ibv_context ctx;
	struct gcv_caps caps = {100, 50, 1, 2, 0};
	struct gcv_port_info port;
	struct gcv_device_info dev;
	struct gcv_rtr rtr;
	uint32_t qpn = 0;
	struct gcv_qp *qp;
	struct ibv_cq scq, rcq;

	memset(&ctx, 0, sizeof ctx);
	*(void **)&gcv_fn.modify_qp = (void *)fake_modify_qp;
	*(void **)&gcv_fn.create_qp = (void *)fake_create_qp;
	*(void **)&gcv_fn.query_port = (void *)fake_query_port;
	*(void **)&gcv_fn.query_device = (void *)fake_query_device;

	qp = gcv_create_rc_qp(NULL, (struct gcv_cq *)&scq, (struct gcv_cq *)&rcq, &caps, &qpn);
	CHECK(qp == (struct gcv_qp *)&created_qp && qpn == 0xabcde);
	CHECK(seen_init.qp_type == IBV_QPT_RC && seen_init.sq_sig_all == 0 && seen_init.srq == NULL);
	CHECK(seen_init.send_cq == &scq && seen_init.recv_cq == &rcq);
	CHECK(seen_init.cap.max_send_wr == 100 && seen_init.cap.max_recv_wr == 50);
	CHECK(seen_init.cap.max_send_sge == 1 && seen_init.cap.max_recv_sge == 2);
	CHECK(caps.max_send_wr == 256 && caps.max_inline_data == 220);

	CHECK(gcv_modify_init(qp, 1, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) == 0);
	CHECK(seen_mask == (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS));
	CHECK(seen_attr.qp_state == IBV_QPS_INIT && seen_attr.port_num == 1);
	CHECK(seen_attr.qp_access_flags == (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ));

	memset(&rtr, 0, sizeof rtr);
	rtr.path_mtu = IBV_MTU_1024;
	rtr.dest_qpn = 0x321;
	rtr.rq_psn = 0x654;
	rtr.max_dest_rd_atomic = 16;
	rtr.min_rnr_timer = 12;
	rtr.dlid = 7;
	rtr.port = 1;
	rtr.is_global = 1;
	rtr.sgid_index = 3;
	rtr.hop_limit = 255;
	rtr.dgid[0] = 0xfe;
	rtr.dgid[15] = 0x01;
	CHECK(gcv_modify_rtr(qp, &rtr) == 0);
	CHECK(seen_mask == (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
	CHECK(seen_attr.qp_state == IBV_QPS_RTR && seen_attr.path_mtu == IBV_MTU_1024);
	CHECK(seen_attr.dest_qp_num == 0x321 && seen_attr.rq_psn == 0x654);
	CHECK(seen_attr.max_dest_rd_atomic == 16 && seen_attr.min_rnr_timer == 12);
	CHECK(seen_attr.ah_attr.dlid == 7 && seen_attr.ah_attr.port_num == 1);
	CHECK(seen_attr.ah_attr.is_global == 1 && seen_attr.ah_attr.grh.sgid_index == 3);
	CHECK(seen_attr.ah_attr.grh.hop_limit == 255);
	CHECK(seen_attr.ah_attr.grh.dgid.raw[0] == 0xfe && seen_attr.ah_attr.grh.dgid.raw[15] == 1);

	CHECK(gcv_modify_rts(qp, 0x777, 8, 14, 7, 6) == 0);
	CHECK(seen_mask == (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY));
	CHECK(seen_attr.qp_state == IBV_QPS_RTS && seen_attr.sq_psn == 0x777);
	CHECK(seen_attr.max_rd_atomic == 8 && seen_attr.timeout == 14);
	CHECK(seen_attr.retry_cnt == 7 && seen_attr.rnr_retry == 6);

	CHECK(gcv_query_port((struct gcv_context *)&ctx, 1, &port) == 0);
	CHECK(port.state == IBV_PORT_ACTIVE && port.active_mtu == IBV_MTU_1024);
	CHECK(port.max_mtu == IBV_MTU_4096 && port.gid_tbl_len == 16 && port.lid == 0x1234);
	CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET);
	CHECK(gcv_query_port((struct gcv_context *)&ctx, 2, &port) == EINVAL);

	CHECK(gcv_query_device((struct gcv_context *)&ctx, &dev) == 0);
	CHECK(strcmp(dev.fw_ver, "1.2.3") == 0);
	CHECK(dev.max_qp_rd_atom == 16 && dev.max_qp_init_rd_atom == 8);
	CHECK(dev.atomic_cap == IBV_ATOMIC_HCA && dev.phys_port_cnt == 2);
	CHECK(dev.node_guid == gcv_be64(htonl(1)));
}

static void check_load(void)
{
	char err[256];
	void *h;

	memset(&gcv_fn, 0, sizeof gcv_fn);
	CHECK(gcv_load("libgocomms-no-such-library.so.1", err, sizeof err) == -1);
	CHECK(strstr(err, "libgocomms-no-such-library.so.1") != NULL);
	if (gcv_load("libibverbs.so.1", err, sizeof err) != 0) {
		printf("skip load: %s\n", err);
		return;
	}
	h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
	CHECK(h != NULL);
#ifdef __GLIBC__
	CHECK((void *)gcv_fn.open_device == dlvsym(h, "ibv_open_device", "IBVERBS_1.1"));
	CHECK((void *)gcv_fn.create_qp == dlvsym(h, "ibv_create_qp", "IBVERBS_1.1"));
	CHECK((void *)gcv_fn.modify_qp == dlvsym(h, "ibv_modify_qp", "IBVERBS_1.1"));
	CHECK((void *)gcv_fn.reg_mr == dlvsym(h, "ibv_reg_mr", "IBVERBS_1.1"));
	CHECK((void *)gcv_fn.query_port == dlvsym(h, "ibv_query_port", "IBVERBS_1.1"));
	CHECK((void *)gcv_fn.get_device_list == dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1"));
#endif
	CHECK(gcv_status_str(IBV_WC_REM_ACCESS_ERR) != NULL);
	if (h)
		dlclose(h);
}

int main(void)
{
	check_posts();
	check_poll();
	check_control();
	check_resources();
	check_load();
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
