"""torch.distributed all-reduce sweep (gloo backend, CPU, float32, sum), the
torch.distributed peer of bench/compare.sh.

    python3 -m torch.distributed.run --nproc_per_node P torch_allreduce.py MINB MAXB [FACTOR [ITERS [WARMUP]]]

Each rank reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT from the
launcher (env:// init). For each size every rank runs WARMUP all-reduces, a
barrier, then ITERS all-reduces back to back (each call waits for its
result, as ordinary torch.distributed code does). Rank 0 prints one line per
size in the format shared by all peers:

    size_bytes time_us algbw_GBps busbw_GBps wrong

time_us is the largest over ranks of (elapsed / ITERS); busbw = algbw *
2(p-1)/p. After timing, one more all-reduce of a known pattern is checked;
wrong is summed over ranks. TORCH_PEER_TIMEOUT_S (default 60) bounds each
operation, so that a stalled run fails instead of hanging.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def parse_bytes(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    mult = units.get(s[-1:].upper(), 1)
    v = int(s[:-1] if mult > 1 else s) * mult
    if v <= 0:
        raise ValueError("bad size " + s)
    return v


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: torch_allreduce.py MINB MAXB [FACTOR [ITERS [WARMUP]]]")
    minb, maxb = parse_bytes(sys.argv[1]), parse_bytes(sys.argv[2])
    rest = [int(a) for a in sys.argv[3:6]]
    factor, iters, warm = (rest + [2, 20, 5][len(rest):])
    if factor < 2 or iters < 1 or warm < 0:
        sys.exit("torch_allreduce: need FACTOR >= 2, ITERS >= 1, WARMUP >= 0")

    timeout = datetime.timedelta(seconds=float(os.environ.get("TORCH_PEER_TIMEOUT_S", "60")))
    dist.init_process_group("gloo", timeout=timeout)
    rank, p = dist.get_rank(), dist.get_world_size()

    # One buffer for the largest size; each size uses a view of its start.
    # Zeros keep the repeated in-place sums finite during timing. The check
    # pattern is made once too: fresh memory is slow to touch on some VMs,
    # and new tensors per size made the checks take longer than the timing.
    maxn = max(maxb // 4, 1)
    buf = torch.zeros(maxn, dtype=torch.float32)
    pattern = (torch.arange(maxn, dtype=torch.int32) % 7).to(torch.float32)
    if rank == 0:
        print(f"# torch_allreduce gloo torch={torch.__version__} np={p} iters={iters} warmup={warm}", flush=True)
        print("# size_bytes time_us algbw_GBps busbw_GBps wrong", flush=True)
    size = minb
    while size <= maxb:
        n = max(size // 4, 1)
        t = buf[:n]
        t.zero_()
        for _ in range(warm):
            dist.all_reduce(t)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        per_op = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
        dist.all_reduce(per_op, op=dist.ReduceOp.MAX)

        # Small integers: every partial sum is exact, whatever the order.
        # Expect p*pattern + p(p+1)/2; subtract it in place, count non-zeros.
        t.copy_(pattern[:n]).add_(rank + 1)
        dist.all_reduce(t)
        t.sub_(pattern[:n], alpha=p).sub_(p * (p + 1) // 2)
        wrong = torch.count_nonzero(t).reshape(1)
        dist.all_reduce(wrong)

        if rank == 0:
            sec = per_op.item()
            algbw = size / sec / 1e9
            print(f"{size} {sec * 1e6:.3f} {algbw:.6f} {algbw * 2 * (p - 1) / p:.6f} {wrong.item()}", flush=True)
        size *= factor
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
