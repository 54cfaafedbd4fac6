"""torch.distributed collectives (gloo backend, CPU, float32, sum where they
reduce), the torch.distributed peer of bench/compare.sh.

    python3 -m torch.distributed.run --nproc_per_node P torch_coll.py OP MINB MAXB [FACTOR [ITERS [WARMUP]]]

OP is one of:

    all_reduce   dist.all_reduce, in place
    all_gather   dist.all_gather into views of one output tensor
    all_to_all   dist.all_to_all_single, out of place
    broadcast    dist.broadcast from rank 0, in place

(torch.distributed's gloo backend has no reduce-scatter.)

Each rank reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT from the
launcher (env:// init). For each size every rank runs WARMUP ops, a
barrier, then ITERS ops back to back (each call waits for its result, as
ordinary torch.distributed code does). Rank 0 prints one line per size in
the format shared by all peers:

    size_bytes time_us algbw_GBps busbw_GBps wrong

Sizes, times and bandwidths follow nccl-tests, as `commnode bench` does: a
size of B bytes is count = B/4 elements; the ops that split the buffer
among ranks use blocks of count/p elements, and size_bytes is the larger of
one rank's send and receive buffers. time_us is the largest over ranks of
(elapsed / ITERS); algbw = size / time; busbw = algbw * 2(p-1)/p for
all-reduce, (p-1)/p for all-gather and all-to-all, 1 for broadcast. After
timing, one more op on a known pattern is checked; wrong is summed over
ranks. TORCH_PEER_TIMEOUT_S (default 60) bounds each operation, so that a
stalled run fails instead of hanging.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

OPS = ("all_reduce", "all_gather", "all_to_all", "broadcast")


def parse_bytes(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    mult = units.get(s[-1:].upper(), 1)
    v = int(s[:-1] if mult > 1 else s) * mult
    if v <= 0:
        raise ValueError("bad size " + s)
    return v


def counts(op, count, p):
    """(send, recv, block) elements, as nccl-tests lays out count elements."""
    if op == "all_gather":
        b = count // p
        return b, b * p, b
    if op == "all_to_all":
        b = count // p
        return b * p, b * p, b
    return count, count, count


def bus_factor(op, p):
    if op == "all_reduce":
        return 2 * (p - 1) / p
    if op == "broadcast":
        return 1.0
    return (p - 1) / p


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in OPS:
        sys.exit(f"usage: torch_coll.py {'|'.join(OPS)} MINB MAXB [FACTOR [ITERS [WARMUP]]]")
    op = sys.argv[1]
    minb, maxb = parse_bytes(sys.argv[2]), parse_bytes(sys.argv[3])
    rest = [int(a) for a in sys.argv[4:7]]
    factor, iters, warm = (rest + [2, 20, 5][len(rest):])
    if factor < 2 or iters < 1 or warm < 0:
        sys.exit("torch_coll: need FACTOR >= 2, ITERS >= 1, WARMUP >= 0")

    timeout = datetime.timedelta(seconds=float(os.environ.get("TORCH_PEER_TIMEOUT_S", "60")))
    dist.init_process_group("gloo", timeout=timeout)
    rank, p = dist.get_rank(), dist.get_world_size()

    # Buffers for the largest size; each size uses views of their starts.
    # Zeros keep repeated in-place sums finite during timing. The check
    # pattern is made once too: fresh memory is slow to touch on some VMs,
    # and new tensors per size made the checks take longer than the timing.
    # Rank q's input at element i is 8q + 1 + i % 7, and pattern[k:k+m] is
    # (k + i) % 7 for i < m, k < 7.
    maxn = max(maxb // 4, 1)
    send = torch.zeros(maxn, dtype=torch.float32)
    recv = torch.zeros(maxn, dtype=torch.float32) if op in ("all_gather", "all_to_all") else None
    pattern = (torch.arange(maxn + 7, dtype=torch.int32) % 7).to(torch.float32)
    if rank == 0:
        print(f"# torch_coll {op} gloo torch={torch.__version__} np={p} iters={iters} warmup={warm}", flush=True)
        print("# size_bytes time_us algbw_GBps busbw_GBps wrong", flush=True)
    size = minb
    while size <= maxb:
        send_n, recv_n, n = counts(op, size // 4, p)
        s = send[:send_n]
        r = recv[:recv_n] if recv is not None else None
        s.zero_()
        if op == "all_reduce":
            def once():
                dist.all_reduce(s)
        elif op == "all_gather":
            outs = list(r.view(p, n))

            def once():
                dist.all_gather(outs, s)
        elif op == "all_to_all":
            def once():
                dist.all_to_all_single(r, s)
        else:
            def once():
                dist.broadcast(s, src=0)

        for _ in range(warm):
            once()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            once()
        per_op = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
        dist.all_reduce(per_op, op=dist.ReduceOp.MAX)

        # Patterned inputs, poisoned outputs, one more op; then subtract
        # what each element should be and count the non-zeros.
        off = rank * n if op == "all_gather" else 0
        if op == "broadcast" and rank != 0:
            s.fill_(-1)
        else:
            s.copy_(pattern[off % 7:off % 7 + send_n]).add_(8 * rank + 1)
        if r is not None:
            r.fill_(-1)
        once()
        if op == "all_reduce":
            got = s.sub_(pattern[:n], alpha=p).sub_(4 * p * (p - 1) + p)
        elif op == "broadcast":
            got = s.sub_(pattern[:n]).sub_(1)
        else:
            # Block q of the output is rank q's block: for all-gather its
            # elements q*n.. (its whole input), for all-to-all the block it
            # sent to this rank, elements rank*n.. of its input.
            blocks = r.view(p, n)
            for q in range(p):
                k = (q * n if op == "all_gather" else rank * n) % 7
                blocks[q].sub_(pattern[k:k + n]).sub_(8 * q + 1)
            got = r
        wrong = torch.count_nonzero(got).reshape(1)
        dist.all_reduce(wrong)

        if rank == 0:
            sec = per_op.item()
            nbytes = 4 * max(send_n, recv_n)
            algbw = nbytes / sec / 1e9
            print(f"{nbytes} {sec * 1e6:.3f} {algbw:.6f} {algbw * bus_factor(op, p):.6f} {wrong.item()}", flush=True)
        size *= factor
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
