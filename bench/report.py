"""Helpers of bench/compare.sh: turn run logs into rows, rows into tables.

    report.py rows PEER OP PROCS ROUND BAND < LOG >> runs.tsv
    report.py memcpy ROUND < LOG >> memcpy.tsv
    report.py memcpy-line RESULTS_DIR
    report.py table RESULTS_DIR [--all-sizes] [--peers LIST] [--ops LIST]

`rows` reads one run's log: `commnode bench --json` objects or the peers'
lines `size_bytes time_us algbw_GBps busbw_GBps wrong`, possibly behind a
launcher's prefix (`[rank 0] `, `[default0]:`), and prints tab-separated
rows `peer op procs round band size_bytes time_us algbw busbw wrong`.
Bandwidths follow nccl-tests: GB/s = 10^9 B/s, algbw = size / time, busbw =
algbw * 2(p-1)/p for all-reduce, (p-1)/p for all-gather, reduce-scatter and
all-to-all, 1 for broadcast; size is the larger of one rank's send and
receive buffers (all-gather: the whole result; reduce-scatter: the whole
input; all-to-all: the whole send buffer).

`memcpy` reads bench/peers/memcpy_bw's output and prints rows `round
size_bytes nprocs reps best_GBps median_GBps sum_median_GBps`;
`memcpy-line` summarises memcpy.tsv in one line for machine.txt.

`table` reads RESULTS_DIR/runs.tsv (and memcpy.tsv, skipped.txt when there)
and prints an overview, then per op and process count a markdown table of
medians over rounds with the gocomms/peer ratios of like implementations,
the latency at the smallest size, the share of memcpy bandwidth that
shared memory reaches at 64 MiB, and a table of ranges. Only the Python
standard library is used.
"""

import collections
import json
import math
import re
import statistics
import sys

# Implementations, in table order, with their transport.
PEERS = {
    "gocomms-shm": "shm",
    "gocomms-shm-async": "shm",
    "mpi-shm": "shm",
    "gocomms-tcp": "tcp",
    "gocomms-tcp-async": "tcp",
    "mpi-tcp": "tcp",
    "gloo": "tcp",
    "torch": "tcp",
}
PEER_ORDER = list(PEERS)
OP_ORDER = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"]
OP_NAMES = {
    "all_reduce": "all-reduce (float32, sum)",
    "all_gather": "all-gather (float32)",
    "reduce_scatter": "reduce-scatter (float32, sum)",
    "all_to_all": "all-to-all (float32)",
    "broadcast": "broadcast (float32, root 0)",
    "send_recv": "send_recv (float32, to rank+1, from rank-1)",
}
# Ratio columns: gocomms busbw / peer busbw. The first four compare like
# with like (same transport); the last crosses transports: Gloo has no
# shared-memory transport, and is the bar gocomms over shared memory must
# clear at the least.
RATIOS = [
    ("gocomms-shm", "mpi-shm", "shm"),
    ("gocomms-shm-async", "mpi-shm", "shm async"),
    ("gocomms-tcp", "mpi-tcp", "tcp"),
    ("gocomms-tcp-async", "mpi-tcp", "tcp async"),
    ("gocomms-tcp", "gloo", "tcp"),
    ("gocomms-tcp", "torch", "tcp"),
    ("gocomms-shm", "gloo", "shm vs tcp"),
]
# What differs in how a peer runs an op, said under that op's table.
NOTES = {
    ("gloo", "reduce_scatter"): "Gloo's reduce-scatter is its legacy `ReduceScatterHalvingDoubling` "
                                "(Debian's Gloo has no reduce-scatter in the newer API), in place; "
                                "the others' are out of place.",
}
PREFIX = re.compile(r"^\[[^\]]*\]:?\s*")
MEMCPY_SIZE = 64 << 20


def bus_factor(op, p):
    if op == "all_reduce":
        return 2 * (p - 1) / p
    if op in ("broadcast", "send_recv"):
        return 1.0
    return (p - 1) / p


def parse_line(line, op):
    """Returns (size, time_us, wrong) or None."""
    line = PREFIX.sub("", line.strip())
    if line.startswith("{"):
        try:
            r = json.loads(line)
            if r.get("op", op) != op:
                print(f"report.py: a row of {r['op']} in a run of {op}: left out", file=sys.stderr)
                return None
            return int(r["size"]), float(r["time_us"]), int(r["wrong"])
        except (ValueError, KeyError):
            return None
    f = line.split()
    if len(f) != 5:
        return None
    try:
        return int(f[0]), float(f[1]), int(float(f[4]))
    except ValueError:
        return None


def rows(peer, op, procs, rnd, band):
    p = int(procs)
    for line in sys.stdin:
        r = parse_line(line, op)
        if r and r[1] > 0:
            # Bandwidths are recomputed from size and time, alike for every
            # peer and without the rounding of the printed columns.
            size, t, wrong = r
            alg = size / t / 1e3
            bus = alg * bus_factor(op, p)
            print(f"{peer}\t{op}\t{procs}\t{rnd}\t{band}\t{size}\t{t:.3f}\t{alg:.6g}\t{bus:.6g}\t{wrong}")


def memcpy_rows(rnd):
    for line in sys.stdin:
        f = line.split()
        if len(f) == 6 and not line.startswith("#"):
            print(rnd + "\t" + "\t".join(f))


def read_memcpy(results):
    """{nprocs: (best, [medians per run], [sum medians per run])}"""
    m = {}
    try:
        with open(f"{results}/memcpy.tsv") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                _rnd, size, n, _reps, best, med, tot = line.split("\t")
                if int(size) != MEMCPY_SIZE:
                    continue
                b, meds, tots = m.get(int(n), (0.0, [], []))
                m[int(n)] = (max(b, float(best)), meds + [float(med)], tots + [float(tot)])
    except FileNotFoundError:
        pass
    return m


def memcpy_line(results):
    m = read_memcpy(results)
    if not m:
        print("memcpy 64 MiB: not measured")
        return
    parts = []
    for n in sorted(m):
        best, meds, tots = m[n]
        s = f"{n} process{'es at once' if n > 1 else ''}: {sig(statistics.median(meds))} GB/s median, {sig(best)} best"
        if n > 1:
            s += f" (per process; all together {sig(statistics.median(tots))})"
        parts.append(s)
    runs = max(len(v[1]) for v in m.values())
    print(f"memcpy 64 MiB, bytes copied per second ({runs} measurement{'s' if runs > 1 else ''}): " + "; ".join(parts))


def sig(v, digits=3):
    """v with `digits` significant digits, never in exponent notation."""
    if v is None or math.isnan(v):
        return "—"
    if v == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{v:.{decimals}f}"


def human(size):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= n and size % n == 0:
            return f"{size // n} {unit}"
    if size >= 1024:
        # Rounded down to a multiple of 4p bytes: say what it was asked as.
        return f"{size} B (~{human(nominal(size))})"
    return f"{size} B"


def nominal(size):
    """The power of two a size was asked as: ops that split the buffer
    among p ranks round it down to a multiple of 4p bytes."""
    return 1 << max(0, (size - 1).bit_length())


def shown(size, smallest, all_sizes):
    # The smallest size (nccl-tests' 8 B) and every power of 4 unless asked
    # for all.
    n = nominal(size)
    return all_sizes or size == smallest or (n.bit_length() - 1) % 2 == 0


def table(results, all_sizes, want_peers, want_ops):
    # data[op][procs][peer][size] = [(time_us, busbw), ...] over rounds
    data = collections.defaultdict(lambda: collections.defaultdict(
        lambda: collections.defaultdict(lambda: collections.defaultdict(list))))
    wrong = []
    with open(f"{results}/runs.tsv") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            peer, op, procs, rnd, _band, size, t, _alg, bus, bad = line.rstrip("\n").split("\t")
            data[op][int(procs)][peer][int(size)].append((float(t), float(bus)))
            if int(bad):
                wrong.append(f"{peer} {op} np={procs} round {rnd} size {size}: {bad} wrong elements")
    skipped = collections.defaultdict(dict)  # op -> peer -> why
    try:
        with open(f"{results}/skipped.txt") as f:
            for line in f:
                if line.strip():
                    peer, op, why = line.rstrip("\n").split("\t", 2)
                    skipped[op][peer] = why
    except FileNotFoundError:
        pass
    memcpy = read_memcpy(results)

    ops = [o for o in (want_ops or OP_ORDER) if o in data] + [o for o in OP_ORDER if o in data and o not in (want_ops or OP_ORDER)]
    procs_all = sorted({p for o in ops for p in data[o]})

    def med(op, procs, peer, size, i):
        v = data[op][procs][peer].get(size)
        return statistics.median(x[i] for x in v) if v else None

    def peers_of(op, procs):
        # Every implementation asked for that runs this op, measured or not
        # (a peer whose runs all failed shows as —).
        asked = want_peers or [p for p in PEER_ORDER if p in data[op][procs]]
        return [p for p in PEER_ORDER if p in asked and p not in skipped[op]]

    def memcpy_bw(procs):
        v = memcpy.get(procs)
        return statistics.median(v[1]) if v else None

    def at_64m(op, procs, peer):
        sizes = [s for s in data[op][procs][peer] if nominal(s) == MEMCPY_SIZE]
        return med(op, procs, peer, sizes[0], 1) if sizes else None

    # Overview: busbw at 64 MiB per op, and the share of memcpy.
    for procs in procs_all:
        ops_here = [o for o in ops if procs in data[o]]
        peers = [p for p in PEER_ORDER if any(p in peers_of(o, procs) for o in ops_here)]
        print(f"### Overview, {procs} processes: busbw at 64 MiB (GB/s, median)\n")
        mb = memcpy_bw(procs)
        head = ["op"] + peers + (["gocomms-shm / memcpy"] if mb and "gocomms-shm" in peers else [])
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for o in ops_here:
            cells = [o]
            for p in peers:
                cells.append(sig(at_64m(o, procs, p)) if p in peers_of(o, procs) else "n/a")
            if len(head) > len(cells):
                g = at_64m(o, procs, "gocomms-shm")
                cells.append(f"{100 * g / mb:.0f}%" if g else "—")
            print("| " + " | ".join(cells) + " |")
        print()
        if mb:
            print(f"memcpy: {sig(mb)} GB/s, the median bandwidth of one process's 64 MiB memcpy while {procs} "
                  f"processes copy at once (bytes copied per second); gocomms-shm / memcpy = busbw / that.\n")
        if any(p.startswith("mpi-") for p in peers):
            print("Open MPI at 32 MiB and up may pay page faults: its all-reduce allocates a temporary buffer per "
                  "operation, which glibc maps afresh each time at that size "
                  "(docs/PERFORMANCE.md, \"Open MPI at 32 MiB and up\").\n")

    for op in ops:
        for procs in sorted(data[op]):
            peers = peers_of(op, procs)
            present = [p for p in peers if data[op][procs][p]]
            if not present:
                continue
            smallest = min(s for p in present for s in data[op][procs][p])
            sizes = sorted({s for p in present for s in data[op][procs][p] if shown(s, smallest, all_sizes)})
            rounds = max(len(v) for p in present for v in data[op][procs][p].values())
            ratios = [r for r in RATIOS if r[0] in peers and r[1] in peers]

            print(f"### {OP_NAMES.get(op, op)}, {procs} processes\n")
            print(f"Median of {rounds} run{'s' if rounds > 1 else ''} per cell; busbw in GB/s (10⁹ B/s), time per op in µs. "
                  "gocomms-shm and mpi-shm move data through shared memory, the others over TCP on loopback. "
                  "Ratios = gocomms busbw / peer busbw (above 1: gocomms faster), like with like "
                  "(shared memory against shared memory, TCP against TCP)"
                  + ("; gocomms-shm / gloo crosses transports (Gloo has no shared-memory transport)" if ("gocomms-shm", "gloo", "shm vs tcp") in ratios else "")
                  + ".\n")
            head = ["size"]
            for p in peers:
                head += [f"{p} busbw", f"{p} µs"]
            head += [f"{a} / {b}" for a, b, _ in ratios]
            print("| " + " | ".join(head) + " |")
            print("|" + "---|" * len(head))
            for s in sizes:
                cells = [human(s)]
                for p in peers:
                    cells += [sig(med(op, procs, p, s, 1)), sig(med(op, procs, p, s, 0))]
                for a, b, _ in ratios:
                    x, y = med(op, procs, a, s, 1), med(op, procs, b, s, 1)
                    cells.append(f"{sig(x / y)}×" if x and y else "—")
                print("| " + " | ".join(cells) + " |")
            print()

            # Latency at the smallest size: time ratios, like with like.
            parts = []
            for g in ("gocomms-shm", "gocomms-tcp"):
                tg = med(op, procs, g, smallest, 0)
                if g not in peers or not tg:
                    continue
                against = []
                for a, b, _ in ratios:
                    tb = med(op, procs, b, smallest, 0)
                    if a == g and tb:
                        against.append(f"{b} {sig(tb)} µs ({sig(tg / tb)}×)")
                parts.append(f"{g} {sig(tg)} µs" + (" against " + ", ".join(against) if against else ""))
            if parts:
                print(f"Latency at {human(smallest)}: " + "; ".join(parts) +
                      " (gocomms time / peer time: above 1, gocomms slower).\n")

            mb = memcpy_bw(procs)
            shm = [(p, at_64m(op, procs, p)) for p in ("gocomms-shm", "mpi-shm") if p in peers]
            shm = [(p, b) for p, b in shm if b]
            if mb and shm and shm[0][0] == "gocomms-shm":
                print(f"Share of memcpy at 64 MiB (busbw / {sig(mb)} GB/s, one process's memcpy while {procs} copy at once): " +
                      ", ".join(f"{p} {100 * b / mb:.0f}%" for p, b in shm) + ".\n")

            for p in peers:
                if (p, op) in NOTES:
                    print(NOTES[(p, op)] + "\n")
            for p, why in skipped[op].items():
                if not want_peers or p in want_peers:
                    print(f"{p}: not run ({why}).\n")

            # Below 64 KiB an op's fixed cost dominates: range its time
            # there, its bandwidth above.
            print(f"Ranges over runs, {op}, {procs} processes: time per op below 64 KiB, busbw from 64 KiB.\n")
            print("| size | " + " | ".join(peers) + " |")
            print("|" + "---|" * (len(peers) + 1))
            for s in sizes:
                cells = [human(s)]
                for p in peers:
                    v = data[op][procs][p].get(s)
                    if not v:
                        cells.append("—")
                        continue
                    i, unit = (0, "µs") if s < 65536 else (1, "GB/s")
                    xs = [x[i] for x in v]
                    lo, hi = sig(min(xs)), sig(max(xs))
                    cells.append(f"{lo} {unit}" if lo == hi else f"{lo}–{hi} {unit}")
                print("| " + " | ".join(cells) + " |")
            print()

    if wrong:
        print("**Wrong results:**\n")
        for w in wrong:
            print(f"- {w}")
        print()


def opt_list(args, name):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return [x for x in args[i + 1].split(",") if x]
    return None


def main():
    a = sys.argv
    if len(a) >= 7 and a[1] == "rows":
        rows(*a[2:7])
    elif len(a) >= 3 and a[1] == "memcpy":
        memcpy_rows(a[2])
    elif len(a) >= 3 and a[1] == "memcpy-line":
        memcpy_line(a[2])
    elif len(a) >= 3 and a[1] == "table":
        table(a[2], "--all-sizes" in a[3:], opt_list(a[3:], "--peers"), opt_list(a[3:], "--ops"))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
