"""All-reduce and all-gather of float32 through torch.distributed's NCCL
backend, 1 MiB to 1 GiB, timed with CUDA events: the reference that
gocomms' collectives on device memory are read against.

Run with torchrun; test/gpu/run.sh uses --nproc_per_node=1, since NCCL
refuses two ranks on one GPU. Rank 0 prints a table like nccl-tests':
size in bytes (all_gather: of the gathered output), time per operation,
algbw = size / time, busbw = algbw * 2(n-1)/n for all_reduce and
(n-1)/n for all_gather, which is 0 on one rank.
"""

import os

import torch
import torch.distributed as dist

WARMUP, ITERS = 5, 20


def timed(fn):
    """Microseconds per call of fn, by events on the current stream, which
    NCCL's work is ordered with."""
    for _ in range(WARMUP):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(ITERS):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / ITERS


def main():
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"# torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"{world} ranks, {torch.cuda.get_device_name(dev)}")
    for op, factor in (("all_reduce", 2 * (world - 1) / world), ("all_gather", (world - 1) / world)):
        if rank == 0:
            print(f"#\n# {op}\n# {'size':>12} {'count':>12} {'type':>8} {'time':>10} {'algbw':>8} {'busbw':>8}")
            print(f"# {'(B)':>12} {'(elements)':>12} {'':>8} {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8}")
        size = 1 << 20
        while size <= 1 << 30:
            count = size // 4 // world * world
            if op == "all_reduce":
                buf = torch.ones(count, dtype=torch.float32, device=dev)
                us = timed(lambda: dist.all_reduce(buf))
                del buf
            else:
                inp = torch.ones(count // world, dtype=torch.float32, device=dev)
                out = torch.empty(count, dtype=torch.float32, device=dev)
                us = timed(lambda: dist.all_gather_into_tensor(out, inp))
                del inp, out
            algbw = count * 4 / us / 1e3
            if rank == 0:
                print(f"  {count * 4:>12} {count:>12} {'float':>8} {us:>10.1f} {algbw:>8.2f} {algbw * factor:>8.2f}")
            size *= 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
