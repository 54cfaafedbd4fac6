/*
 * fakeverbs is a stand-in libibverbs.so.1 with one device, "fake0", whose
 * queue pairs move data by memcpy inside the process. TestFakeProvider
 * builds it and runs the device tests against it through LD_LIBRARY_PATH,
 * so that every call the package makes, and every structure it hands over,
 * is exercised where no RDMA device exists. It is built with rdma-core's
 * own header: it reads and writes the real structures, as a provider does.
 *
 * It checks what a device would refuse (state transitions, attribute
 * masks, keys, ranges, access rights, atomic alignment), and what only the
 * exchange of endpoints gets right: each side's destination QP and PSN,
 * and the GID it routes to. It does not model timing, retries, or a QP's
 * error state beyond flushing the requests posted to it.
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr

#define MAX_OBJ 64
#define MAX_RECV 256
#define PORT_MTU IBV_MTU_1024

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device device;

struct fake_mr {
	struct ibv_mr mr;
	int access;
};

struct fake_cq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	int cap, head, n, users;
};

struct fake_recv {
	uint64_t wr_id;
	struct ibv_sge sge;
	int num_sge;
};

struct fake_qp {
	struct ibv_qp qp;
	int sig_all;
	unsigned int access;
	uint32_t dest_qpn, rq_psn, sq_psn;
	union ibv_gid dgid;
	int max_send;
	struct fake_recv recv[MAX_RECV];
	int nrecv;
};

struct fake_pd {
	struct ibv_pd pd;
	int users;
};

static struct fake_mr *mrs[MAX_OBJ];
static struct fake_qp *qps[MAX_OBJ];

static void gid_of(int index, union ibv_gid *gid)
{
	memset(gid, 0, sizeof *gid);
	if (index == 1) { /* ::ffff:127.0.0.1; index 0 is left empty */
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		gid->raw[12] = 127;
		gid->raw[15] = 1;
	}
}

struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **list = calloc(2, sizeof *list);
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	strcpy(device.name, "fake0");
	list[0] = &device;
	if (num)
		*num = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev->name;
}

__be64 ibv_get_device_guid(struct ibv_device *dev)
{
	(void)dev;
	return htobe64(0x0002c90300a1b2c3ULL);
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	struct ibv_context *ctx = calloc(1, sizeof *ctx);
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->device = dev;
	ctx->ops.poll_cq = fake_poll_cq;
	ctx->ops.post_send = fake_post_send;
	ctx->ops.post_recv = fake_post_recv;
	return ctx;
}

int ibv_close_device(struct ibv_context *ctx)
{
	free(ctx);
	return 0;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	(void)ctx;
	memset(attr, 0, sizeof *attr);
	strcpy(attr->fw_ver, "0.0.0-fake");
	attr->node_guid = htobe64(0x0002c90300a1b2c3ULL);
	attr->max_mr_size = 1ULL << 40;
	attr->vendor_id = 0x02c9;
	attr->max_qp = MAX_OBJ;
	attr->max_qp_wr = 1024;
	attr->max_sge = 1;
	attr->max_cq = MAX_OBJ;
	attr->max_cqe = 4096;
	attr->max_mr = MAX_OBJ;
	attr->max_qp_rd_atom = 16;
	attr->max_qp_init_rd_atom = 16;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->phys_port_cnt = 1;
	return 0;
}

/* Fills the whole current structure, as providers of some releases do. */
int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *compat)
{
	struct ibv_port_attr *attr = (struct ibv_port_attr *)compat;
	(void)ctx;
	if (port != 1)
		return EINVAL;
	memset(attr, 0, sizeof *attr);
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = PORT_MTU;
	attr->gid_tbl_len = 2;
	attr->max_msg_sz = 1U << 31;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	attr->port_cap_flags2 = 0xffff;
	return 0;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	(void)ctx;
	if (port != 1 || index < 0 || index > 1) {
		errno = EINVAL;
		return -1;
	}
	gid_of(index, gid);
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	struct fake_pd *p = calloc(1, sizeof *p);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->pd.context = ctx;
	return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	struct fake_pd *p = (struct fake_pd *)pd;
	if (p->users)
		return EBUSY;
	free(p);
	return 0;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct fake_mr *m;
	int i;

	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&mu);
	for (i = 0; i < MAX_OBJ && mrs[i]; i++)
		;
	if (i == MAX_OBJ) {
		pthread_mutex_unlock(&mu);
		errno = ENOMEM;
		return NULL;
	}
	m = calloc(1, sizeof *m);
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = length;
	m->mr.lkey = (uint32_t)i + 1;
	m->mr.rkey = ((uint32_t)i + 1) << 8; /* unlike the lkey, to catch a mix-up */
	m->access = access;
	mrs[i] = m;
	((struct fake_pd *)pd)->users++;
	pthread_mutex_unlock(&mu);
	return &m->mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < MAX_OBJ; i++)
		if (mrs[i] == (struct fake_mr *)mr)
			mrs[i] = NULL;
	((struct fake_pd *)mr->pd)->users--;
	pthread_mutex_unlock(&mu);
	free(mr);
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct fake_cq *c;

	(void)channel;
	(void)comp_vector;
	if (cqe <= 0) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof *c);
	c->cap = cqe;
	c->ring = calloc((size_t)cqe, sizeof *c->ring);
	c->cq.context = ctx;
	c->cq.cq_context = cq_context;
	c->cq.cqe = cqe;
	return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	struct fake_cq *c = (struct fake_cq *)cq;
	if (c->users)
		return EBUSY;
	free(c->ring);
	free(c);
	return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct fake_qp *q;
	int i;

	if (attr->qp_type != IBV_QPT_RC || !attr->send_cq || !attr->recv_cq || attr->srq ||
	    attr->cap.max_send_sge > 1 || attr->cap.max_recv_sge > 1 ||
	    attr->cap.max_recv_wr > MAX_RECV) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&mu);
	for (i = 0; i < MAX_OBJ && qps[i]; i++)
		;
	if (i == MAX_OBJ) {
		pthread_mutex_unlock(&mu);
		errno = ENOMEM;
		return NULL;
	}
	q = calloc(1, sizeof *q);
	q->qp.context = pd->context;
	q->qp.qp_context = attr->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = attr->send_cq;
	q->qp.recv_cq = attr->recv_cq;
	q->qp.qp_num = 0x100 + (uint32_t)i;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = IBV_QPT_RC;
	q->sig_all = attr->sq_sig_all;
	q->max_send = (int)attr->cap.max_send_wr;
	attr->cap.max_inline_data = 64; /* granted more than asked, as devices do */
	qps[i] = q;
	((struct fake_pd *)pd)->users++;
	((struct fake_cq *)attr->send_cq)->users++;
	((struct fake_cq *)attr->recv_cq)->users++;
	pthread_mutex_unlock(&mu);
	return &q->qp;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < MAX_OBJ; i++)
		if (qps[i] == (struct fake_qp *)qp)
			qps[i] = NULL;
	((struct fake_pd *)qp->pd)->users--;
	((struct fake_cq *)qp->send_cq)->users--;
	((struct fake_cq *)qp->recv_cq)->users--;
	pthread_mutex_unlock(&mu);
	free(qp);
	return 0;
}

static int complain(const char *what)
{
	fprintf(stderr, "fakeverbs: ibv_modify_qp: %s\n", what);
	return EINVAL;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct fake_qp *q = (struct fake_qp *)qp;
	union ibv_gid sgid;
	int want;

	pthread_mutex_lock(&mu);
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		want = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		if (q->qp.state != IBV_QPS_RESET || mask != want || a->port_num != 1)
			goto bad;
		q->access = a->qp_access_flags;
		break;
	case IBV_QPS_RTR:
		want = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		if (q->qp.state != IBV_QPS_INIT || mask != want)
			goto bad;
		if (a->path_mtu < IBV_MTU_256 || a->path_mtu > PORT_MTU)
			goto bad;
		/* RoCE: routed by GID, from a GID this port has */
		gid_of(a->ah_attr.grh.sgid_index, &sgid);
		if (!a->ah_attr.is_global || a->ah_attr.port_num != 1 ||
		    !memcmp(&sgid, &(union ibv_gid){0}, sizeof sgid) ||
		    a->max_dest_rd_atomic == 0 || a->max_dest_rd_atomic > 16)
			goto bad;
		q->dest_qpn = a->dest_qp_num;
		q->rq_psn = a->rq_psn;
		q->dgid = a->ah_attr.grh.dgid;
		break;
	case IBV_QPS_RTS:
		want = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		if (q->qp.state != IBV_QPS_RTR || mask != want || a->max_rd_atomic == 0 ||
		    a->max_rd_atomic > 16)
			goto bad;
		q->sq_psn = a->sq_psn;
		break;
	default:
		goto bad;
	}
	q->qp.state = a->qp_state;
	pthread_mutex_unlock(&mu);
	return 0;
bad:
	pthread_mutex_unlock(&mu);
	return complain("attributes or mask not as a connection needs");
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return "success";
	case IBV_WC_REM_ACCESS_ERR:
		return "remote access error (fakeverbs)";
	case IBV_WC_RETRY_EXC_ERR:
		return "transport retry counter exceeded (fakeverbs)";
	default:
		return "error (fakeverbs)";
	}
}

static void push(struct ibv_cq *cq, const struct ibv_wc *wc)
{
	struct fake_cq *c = (struct fake_cq *)cq;
	if (c->n == c->cap) {
		/* a device reports this asynchronously and stops the queue */
		fprintf(stderr, "fakeverbs: completion queue overrun: a completion is lost\n");
		return;
	}
	c->ring[(c->head + c->n) % c->cap] = *wc;
	c->n++;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fake_cq *c = (struct fake_cq *)cq;
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < n && c->n > 0; i++) {
		wc[i] = c->ring[c->head];
		c->head = (c->head + 1) % c->cap;
		c->n--;
	}
	pthread_mutex_unlock(&mu);
	return i;
}

static struct fake_qp *qp_by_num(uint32_t qpn)
{
	int i;
	for (i = 0; i < MAX_OBJ; i++)
		if (qps[i] && qps[i]->qp.qp_num == qpn)
			return qps[i];
	return NULL;
}

/* mem finds the registered bytes [addr, addr+len) under key with access. */
static void *mem(uint32_t key, int remote, uint64_t addr, uint64_t len, int access)
{
	int i;
	for (i = 0; i < MAX_OBJ; i++) {
		struct fake_mr *m = mrs[i];
		uint64_t base;
		if (!m || (remote ? m->mr.rkey : m->mr.lkey) != key)
			continue;
		base = (uint64_t)(uintptr_t)m->mr.addr;
		if (addr < base || len > m->mr.length || addr - base > m->mr.length - len)
			return NULL;
		if ((m->access & access) != access)
			return NULL;
		return (void *)(uintptr_t)addr;
	}
	return NULL;
}

static enum ibv_wc_status execute(struct fake_qp *q, struct fake_qp *d, struct ibv_send_wr *wr)
{
	uint64_t len = wr->num_sge ? wr->sg_list[0].length : 0;
	void *local = NULL, *far;
	struct ibv_wc rwc;
	uint64_t *word, old;

	if (wr->num_sge > 1)
		return IBV_WC_LOC_LEN_ERR;
	if (wr->num_sge) {
		local = mem(wr->sg_list[0].lkey, 0, wr->sg_list[0].addr, len,
			    wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
					    wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP
				    ? IBV_ACCESS_LOCAL_WRITE
				    : 0);
		if (!local)
			return IBV_WC_LOC_PROT_ERR;
	}
	memset(&rwc, 0, sizeof rwc);
	rwc.qp_num = d->qp.qp_num;
	rwc.src_qp = q->qp.qp_num;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (!(d->access & IBV_ACCESS_REMOTE_WRITE))
			return IBV_WC_REM_ACCESS_ERR;
		far = mem(wr->wr.rdma.rkey, 1, wr->wr.rdma.remote_addr, len, IBV_ACCESS_REMOTE_WRITE);
		if (!far)
			return IBV_WC_REM_ACCESS_ERR;
		if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && d->nrecv == 0)
			return IBV_WC_RNR_RETRY_EXC_ERR;
		memcpy(far, local, len);
		if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
			rwc.wr_id = d->recv[0].wr_id;
			memmove(d->recv, d->recv + 1, (size_t)--d->nrecv * sizeof d->recv[0]);
			rwc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
			rwc.byte_len = (uint32_t)len;
			rwc.imm_data = wr->imm_data; /* stays in network order */
			rwc.wc_flags = IBV_WC_WITH_IMM;
			push(d->qp.recv_cq, &rwc);
		}
		return IBV_WC_SUCCESS;
	case IBV_WR_SEND:
		if (d->nrecv == 0)
			return IBV_WC_RNR_RETRY_EXC_ERR;
		if (len > (d->recv[0].num_sge ? d->recv[0].sge.length : 0))
			return IBV_WC_REM_INV_REQ_ERR;
		if (len)
			memcpy((void *)(uintptr_t)d->recv[0].sge.addr, local, len);
		rwc.wr_id = d->recv[0].wr_id;
		memmove(d->recv, d->recv + 1, (size_t)--d->nrecv * sizeof d->recv[0]);
		rwc.opcode = IBV_WC_RECV;
		rwc.byte_len = (uint32_t)len;
		push(d->qp.recv_cq, &rwc);
		return IBV_WC_SUCCESS;
	case IBV_WR_RDMA_READ:
		if (!(d->access & IBV_ACCESS_REMOTE_READ))
			return IBV_WC_REM_ACCESS_ERR;
		far = mem(wr->wr.rdma.rkey, 1, wr->wr.rdma.remote_addr, len, IBV_ACCESS_REMOTE_READ);
		if (!far)
			return IBV_WC_REM_ACCESS_ERR;
		memcpy(local, far, len);
		return IBV_WC_SUCCESS;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		if (len != 8 || wr->wr.atomic.remote_addr % 8)
			return IBV_WC_REM_INV_REQ_ERR;
		if (!(d->access & IBV_ACCESS_REMOTE_ATOMIC))
			return IBV_WC_REM_ACCESS_ERR;
		word = mem(wr->wr.atomic.rkey, 1, wr->wr.atomic.remote_addr, 8, IBV_ACCESS_REMOTE_ATOMIC);
		if (!word)
			return IBV_WC_REM_ACCESS_ERR;
		old = *word;
		if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			*word = old + wr->wr.atomic.compare_add;
		else if (old == wr->wr.atomic.compare_add)
			*word = wr->wr.atomic.swap;
		memcpy(local, &old, 8);
		return IBV_WC_SUCCESS;
	default:
		return IBV_WC_LOC_QP_OP_ERR;
	}
}

static enum ibv_wc_opcode wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	default:
		return IBV_WC_SEND;
	}
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fake_qp *q = (struct fake_qp *)qp, *d;
	union ibv_gid self;
	struct ibv_wc wc;

	pthread_mutex_lock(&mu);
	for (; wr; wr = wr->next) {
		if (q->qp.state != IBV_QPS_RTS && q->qp.state != IBV_QPS_ERR) {
			*bad = wr;
			pthread_mutex_unlock(&mu);
			return EINVAL;
		}
		memset(&wc, 0, sizeof wc);
		wc.wr_id = wr->wr_id;
		wc.qp_num = q->qp.qp_num;
		wc.opcode = wc_opcode(wr->opcode);
		if (q->qp.state == IBV_QPS_ERR) {
			/* as devices do: accepted, and flushed */
			wc.status = IBV_WC_WR_FLUSH_ERR;
			push(q->qp.send_cq, &wc);
			continue;
		}
		/* A packet reaches the peer only if the endpoints were exchanged
		 * right: its QP is connected back to this one and expects this
		 * PSN, and this side routes to the GID the peer has. */
		gid_of(1, &self);
		d = qp_by_num(q->dest_qpn);
		if (!d || (d->qp.state != IBV_QPS_RTR && d->qp.state != IBV_QPS_RTS) ||
		    d->dest_qpn != q->qp.qp_num || d->rq_psn != q->sq_psn ||
		    memcmp(&q->dgid, &self, sizeof self))
			wc.status = IBV_WC_RETRY_EXC_ERR;
		else
			wc.status = execute(q, d, wr);
		if (wc.status != IBV_WC_SUCCESS) {
			wc.vendor_err = 0xfa;
			q->qp.state = IBV_QPS_ERR;
		}
		if (wc.status != IBV_WC_SUCCESS || q->sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
			push(q->qp.send_cq, &wc);
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fake_qp *q = (struct fake_qp *)qp;

	pthread_mutex_lock(&mu);
	for (; wr; wr = wr->next) {
		if (q->qp.state == IBV_QPS_RESET || q->nrecv == MAX_RECV || wr->num_sge > 1 ||
		    (wr->num_sge && !mem(wr->sg_list[0].lkey, 0, wr->sg_list[0].addr,
					 wr->sg_list[0].length, IBV_ACCESS_LOCAL_WRITE))) {
			*bad = wr;
			pthread_mutex_unlock(&mu);
			return q->nrecv == MAX_RECV ? ENOMEM : EINVAL;
		}
		q->recv[q->nrecv].wr_id = wr->wr_id;
		q->recv[q->nrecv].num_sge = wr->num_sge;
		if (wr->num_sge)
			q->recv[q->nrecv].sge = wr->sg_list[0];
		q->nrecv++;
	}
	pthread_mutex_unlock(&mu);
	return 0;
}
