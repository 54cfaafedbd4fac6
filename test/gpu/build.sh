#!/usr/bin/env bash
# build.sh builds, where Go is, what test/gpu/run.sh runs on a GPU machine
# that has no Go: the test binaries of gpu and gpu/cuda, commnode, and the
# nccl package's tests where it exists, into test/gpu/bin. It records in
# bin/glibc the newest glibc symbol version they need, which run.sh
# compares with the machine's glibc: cgo binaries do not start on an
# older one.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=test/gpu/bin
mkdir -p "$bin"
rm -f "$bin"/*
ld=(-ldflags='-s -w') # no symbol tables: the binaries travel

go test -c "${ld[@]}" -o "$bin/cuda.test" ./gpu/cuda
go test -c "${ld[@]}" -o "$bin/gpu.test" ./gpu
go build "${ld[@]}" -o "$bin/commnode" ./cmd/commnode
if [ -d nccl ]; then
	go test -c "${ld[@]}" -o "$bin/nccl.test" ./nccl
else
	echo "build.sh: no nccl package here; run.sh skips its tests"
fi

objdump -T "$bin"/*.test "$bin/commnode" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 | sed 's/^GLIBC_//' >"$bin/glibc"
echo "build.sh: built into $bin ($(du -sh "$bin" | cut -f1)); they need glibc $(cat "$bin/glibc") or newer"
ls -l "$bin"
