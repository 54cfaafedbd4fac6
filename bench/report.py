"""Helpers of bench/compare.sh: turn run logs into rows, rows into tables.

    report.py rows PEER PROCS ROUND BAND < LOG >> runs.tsv
    report.py table RESULTS_DIR [--all-sizes]

`rows` reads one run's log: `commnode bench --json` objects or the peers'
lines `size_bytes time_us algbw_GBps busbw_GBps wrong`, possibly behind a
launcher's prefix (`[rank 0] `, `[default0]:`), and prints tab-separated
rows `peer procs round band size_bytes time_us algbw busbw wrong`
(GB/s = 10^9 B/s; busbw = algbw * 2(p-1)/p).

`table` reads RESULTS_DIR/runs.tsv and prints, per process count, a markdown
table of medians over rounds, the gocomms/peer ratios, and a table of
ranges. Only the Python standard library is used.
"""

import collections
import json
import math
import re
import statistics
import sys

PEER_NAMES = {
    "gocomms": "gocomms",
    "mpi": "Open MPI",
    "gloo": "Gloo",
    "torch": "torch.distributed",
}
PEER_ORDER = ["gocomms", "mpi", "gloo", "torch"]
PREFIX = re.compile(r"^\[[^\]]*\]:?\s*")


def parse_line(line):
    """Returns (size, time_us, algbw, busbw, wrong) or None."""
    line = PREFIX.sub("", line.strip())
    if line.startswith("{"):
        try:
            r = json.loads(line)
            return (int(r["size"]), float(r["time_us"]), float(r["algbw"]),
                    float(r["busbw"]), int(r["wrong"]))
        except (ValueError, KeyError):
            return None
    f = line.split()
    if len(f) != 5:
        return None
    try:
        return int(f[0]), float(f[1]), float(f[2]), float(f[3]), int(float(f[4]))
    except ValueError:
        return None


def rows(peer, procs, rnd, band):
    p = int(procs)
    for line in sys.stdin:
        r = parse_line(line)
        if r:
            # Bandwidths are recomputed from size and time, alike for every
            # peer and without the rounding of the printed columns.
            size, t, _, _, wrong = r
            alg = size / t / 1e3
            bus = alg * 2 * (p - 1) / p
            print(f"{peer}\t{procs}\t{rnd}\t{band}\t{size}\t{t:.3f}\t{alg:.6g}\t{bus:.6g}\t{wrong}")


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
    return f"{size} B"


def shown(size, all_sizes):
    # 8 B (nccl-tests' smallest) and every power of 4 unless asked for all.
    return all_sizes or size == 8 or (size & (size - 1) == 0 and (size.bit_length() - 1) % 2 == 0)


def table(results, all_sizes):
    # data[procs][peer][size] = [(time_us, busbw), ...] over rounds
    data = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    wrong = []
    with open(f"{results}/runs.tsv") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            peer, procs, rnd, _band, size, t, _alg, bus, bad = line.rstrip("\n").split("\t")
            data[int(procs)][peer][int(size)].append((float(t), float(bus)))
            if int(bad):
                wrong.append(f"{peer} np={procs} round {rnd} size {size}: {bad} wrong elements")

    for procs in sorted(data):
        peers = [p for p in PEER_ORDER if p in data[procs]]
        others = [p for p in peers if p != "gocomms"]
        sizes = sorted({s for p in peers for s in data[procs][p] if shown(s, all_sizes)})
        rounds = max(len(v) for p in peers for v in data[procs][p].values())

        def med(peer, size, i):
            v = data[procs][peer].get(size)
            return statistics.median(x[i] for x in v) if v else None

        print(f"### {procs} processes, all-reduce float32 sum over TCP loopback\n")
        print(f"Median of {rounds} run{'s' if rounds > 1 else ''} per cell. busbw in GB/s (10⁹ B/s), time per op in µs; "
              "ratio = gocomms busbw / peer busbw (above 1: gocomms faster).\n")
        head = ["size"]
        for p in peers:
            head += [f"{PEER_NAMES[p]} busbw", f"{PEER_NAMES[p]} µs"]
            if p != "gocomms":
                head.append(f"gocomms/{PEER_NAMES[p]}")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for s in sizes:
            cells = [human(s)]
            g = med("gocomms", s, 1) if "gocomms" in peers else None
            for p in peers:
                b = med(p, s, 1)
                cells += [sig(b), sig(med(p, s, 0))]
                if p != "gocomms":
                    cells.append(f"{sig(g / b)}×" if g and b else "—")
            print("| " + " | ".join(cells) + " |")
        print()

        if "gocomms" in peers and sizes:
            s = sizes[0]
            g = med("gocomms", s, 0)
            parts = []
            for p in others:
                t = med(p, s, 0)
                if g and t:
                    parts.append(f"{PEER_NAMES[p]} {sig(t)} µs ({sig(g / t)}×)")
            if g and parts:
                print(f"Latency at {human(s)}: gocomms {sig(g)} µs; " + "; ".join(parts) +
                      " (gocomms time / peer time: above 1, gocomms slower).\n")

        # Below 64 KiB an op's fixed cost dominates: range its time there,
        # its bandwidth above.
        print(f"Ranges over runs, {procs} processes: time per op below 64 KiB, busbw from 64 KiB.\n")
        print("| size | " + " | ".join(PEER_NAMES[p] for p in peers) + " |")
        print("|" + "---|" * (len(peers) + 1))
        for s in sizes:
            cells = [human(s)]
            for p in peers:
                v = data[procs][p].get(s)
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


def main():
    if len(sys.argv) >= 6 and sys.argv[1] == "rows":
        rows(*sys.argv[2:6])
    elif len(sys.argv) >= 3 and sys.argv[1] == "table":
        table(sys.argv[2], "--all-sizes" in sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
