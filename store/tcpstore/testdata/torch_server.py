"""A PyTorch TCPStore server for a gocomms client, driven by interop_test.go.

Usage: torch_server.py. Prints "torch VERSION" once imported (or "no
torch: WHY" and exits), then "port N", then answers one JSON command a
line on stdin ({"op": "set"|"get", "key": K, "value": V}) with one
JSON line on stdout, until stdin closes. Keys are user keys: TCPStore puts
"/" in front of them on the wire.
"""
import datetime
import json
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError as e:
    print("no torch:", e, flush=True)
    sys.exit(0)
print("torch", torch.__version__, flush=True)

s = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=10),
                  wait_for_workers=False)
s.set("from-torch", "hi")
print("port", s.port, flush=True)

for line in sys.stdin:
    cmd = json.loads(line)
    op, key = cmd["op"], cmd["key"]
    if op == "set":
        s.set(key, cmd["value"])
        reply = {}
    elif op == "get":
        reply = {"value": s.get(key).decode("latin-1")}
    else:
        sys.exit("unknown op " + op)
    print(json.dumps(reply), flush=True)
