"""Writes test/gpu/run.sh's JSON report from what its steps printed.

    python3 report.py DIR JSON STATUS [--table]

DIR holds steps.tsv (id, name, verdict, seconds, limit, command: one
step a line), versions.tsv (key, value) and each step's output, in a file
named by its id. run.sh calls this after every step, so a run cut short
still leaves a report of the steps it finished; the file is replaced
whole, never half written. With --table it also prints the figures side
by side, per size.
"""

import json
import os
import re
import sys

OPS = ("all_reduce", "all_gather")
SOURCES = ("native", "nccl", "torch")


def lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def tsv(path):
    return [line.split("\t") for line in lines(path) if line]


def go_benchmarks(out):
    """Each benchmark's metrics by unit, by its name less the -GOMAXPROCS
    suffix."""
    found = {}
    for line in out:
        fields = line.split()
        if len(fields) < 4 or not fields[0].startswith("Benchmark") or not fields[1].isdigit():
            continue
        name = re.sub(r"-\d+$", "", fields[0][len("Benchmark"):])
        found[name] = {unit: float(v) for v, unit in zip(fields[2::2], fields[3::2])}
    return found


def bandwidth(out):
    bench = go_benchmarks(out)
    copy = []
    for name, m in bench.items():
        size = re.fullmatch(r"DeviceCopy/(\d+)MiB", name)
        if size and "GB/s" in m:
            copy.append({"size": int(size.group(1)) << 20, "gbps": m["GB/s"], "alg_gbps": m.get("algGB/s")})
    kernels = {name.split("/", 1)[1]: m.get("GB/s") for name, m in bench.items() if name.startswith("DeviceCombine/")}
    folds = {name.split("/", 1)[1]: m.get("GB/s") for name, m in bench.items() if name.startswith("DeviceFold/")}
    return {"copy": copy, "combine_256MiB": kernels, "fold_256MiB": folds}


def bench_rows(out):
    """The rows commnode bench --json printed (rank 0's, behind the
    launcher's prefix)."""
    rows = []
    for line in out:
        start = line.find('{"op"')
        if start >= 0:
            try:
                rows.append(json.loads(line[start:]))
            except ValueError:
                pass
    return rows


def torch_rows(out):
    """torch_nccl.py's header and table rows, by op."""
    fig, op = {}, None
    for line in out:
        m = re.match(r"# (torch .*)", line)
        if m and "header" not in fig:
            fig["header"] = m.group(1)
        m = re.fullmatch(r"#\s+(\w+)", line)
        if m and m.group(1) in OPS:
            op = m.group(1)
            continue
        f = line.split()
        if op and len(f) == 6 and f[0].isdigit():
            fig.setdefault(op, []).append({"size": int(f[0]), "count": int(f[1]), "time_us": float(f[3]),
                                           "algbw": float(f[4]), "busbw": float(f[5])})
    return fig


def go_tests(out):
    count = lambda what: sum(1 for line in out if line.strip().startswith(f"--- {what}:"))
    return {"passed": count("PASS"), "failed": count("FAIL"), "skipped": count("SKIP")}


def figures(step_id, out):
    if step_id == "bandwidth":
        return bandwidth(out)
    if step_id.startswith("bench_"):
        return {"rows": bench_rows(out)}
    if step_id == "torch":
        return torch_rows(out)
    if step_id in ("nvml", "device"):
        return go_tests(out)
    last = [line for line in out if line.strip()][-1:]
    return {"last_line": last[0]} if last else {}


def table(steps):
    """Per op, a row per size of every source's figures and the copy's."""
    by = {s["id"]: s["figures"] for s in steps}
    copy = {c["size"]: c["gbps"] for c in by.get("bandwidth", {}).get("copy", [])}
    tables = {}
    for op in OPS:
        sizes = {}
        for src in ("native", "nccl"):
            for r in by.get(f"bench_{src}_{op}", {}).get("rows", []):
                sizes.setdefault(r["size"], {})[src] = {k: r.get(k) for k in ("ranks", "busbw", "algbw", "time_us", "wrong")}
        for r in by.get("torch", {}).get(op, []):
            sizes.setdefault(r["size"], {})["torch"] = {k: r[k] for k in ("busbw", "algbw", "time_us")}
        rows = []
        for size in sorted(set(sizes) | set(copy)):
            row = {"size": size, **{src: sizes.get(size, {}).get(src) for src in SOURCES}}
            row["copy_gbps"] = copy.get(size)
            rows.append(row)
        tables[op] = rows
    return tables


def text(tables):
    def num(v, fmt):
        return format(v, fmt) if v is not None else format("-", ">" + fmt.split(".")[0])

    cols = [(src, key, "9.2f") for key in ("busbw", "algbw") for src in SOURCES]
    out = []
    for op, rows in tables.items():
        if not any(r[s] for r in rows for s in SOURCES):
            continue
        out += [f"# {op}: GB/s; µs per op, timed by the host for gocomms and by CUDA events for torch; "
                "copy: GB/s read and written",
                "#     size    native      nccl     torch    native      nccl     torch      copy"
                "     native       nccl      torch",
                "#             busbw     busbw     busbw     algbw     algbw     algbw      GB/s"
                "         µs         µs         µs"]
        for r in rows:
            out.append(f"  {r['size'] >> 20:>5}MiB "
                       + " ".join(num((r[src] or {}).get(key), fmt) for src, key, fmt in cols)
                       + " " + num(r["copy_gbps"], "9.1f") + " "
                       + " ".join(num((r[src] or {}).get("time_us"), "10.1f") for src in SOURCES))
    return "\n".join(out)


def main():
    d, path, status = sys.argv[1:4]
    steps = []
    for f in tsv(os.path.join(d, "steps.tsv")):
        step_id, name, verdict, seconds, limit, command = (f + [""] * 6)[:6]
        steps.append({"id": step_id, "name": name, "verdict": verdict,
                      "seconds": int(seconds) if seconds.isdigit() else None,
                      "limit_s": int(limit) if limit.isdigit() else None, "command": command,
                      "figures": figures(step_id, lines(os.path.join(d, step_id)))})
    tables = table(steps)
    report = {
        "status": status,
        "passed": not any(s["verdict"].startswith("FAIL") for s in steps) and status == "done",
        "versions": {f[0]: f[1] for f in tsv(os.path.join(d, "versions.tsv")) if len(f) == 2},
        "steps": steps,
        "tables": tables,
        "notes": [
            "busbw = algbw * 2(n-1)/n for all_reduce and (n-1)/n for all_gather: 0 on one rank, which is all "
            "NCCL allows per GPU; compare algbw and time_us there",
            "copy_gbps counts bytes read and written (twice the size) per second of device time",
        ],
    }
    with open(path + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    if "--table" in sys.argv[4:]:
        print(text(tables))


if __name__ == "__main__":
    main()
