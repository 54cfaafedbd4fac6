"""A PyTorch TCPStore client of a gocomms server, driven by interop_test.go.

Usage: torch_client.py HOST PORT. Prints "torch VERSION" once imported (or
"no torch: WHY" and exits), checks each call's answer itself, prints
"waiting" before blocking on a key the test sets, and "done" at the end;
any failure exits non-zero with a traceback.
"""
import datetime
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError as e:
    print("no torch:", e, flush=True)
    sys.exit(0)
print("torch", torch.__version__, flush=True)

host, port = sys.argv[1], int(sys.argv[2])
# world_size=2 makes the constructor send ADD init/ 1, as ranks do.
s = dist.TCPStore(host, port, 2, False, datetime.timedelta(seconds=10))

s.set("a", "1")
assert s.get("a") == b"1"
s.set("a", b"\x00\xff binary")
assert s.get("a") == b"\x00\xff binary"
assert s.add("n", 5) == 5
assert s.add("n", -2) == 3
assert s.get("n") == b"3"
assert s.compare_set("c", "y", "z") == b"y"  # missing, expected given
assert s.compare_set("c", "", "x") == b"x"  # missing, expected empty
assert s.compare_set("c", "y", "z") == b"x"  # present, different
assert s.compare_set("c", "x", "z") == b"z"  # present, equal
# 1.13's Python has no check(); the Go side checks instead.
s.wait(["a", "n"])
assert s.delete_key("a") is True
assert s.delete_key("a") is False
assert s.get("from-go") == b"hello from go"
dist.PrefixStore("pfx", s).set("k", "prefixed")

try:
    s.wait(["never"], datetime.timedelta(milliseconds=100))
    sys.exit("wait for a missing key returned")
except RuntimeError:
    pass
# 1.13 leaves that WAIT registered; the next calls must still line up.
assert s.add("n", 1) == 4

print("num_keys", s.num_keys(), flush=True)
print("waiting", flush=True)
assert s.get("late") == b"woken"
print("done", flush=True)
