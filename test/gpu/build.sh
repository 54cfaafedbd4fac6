#!/usr/bin/env bash
# build.sh builds, where Go is, what test/gpu/run.sh runs on a GPU machine
# that has no Go: commnode and the test binaries of gpu, gpu/cuda and
# nccl, into test/gpu/bin. It records in bin/glibc the newest glibc
# symbol version they need and prints it: cgo binaries do not start on an
# older glibc, and run.sh compares it with the machine's.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=test/gpu/bin
command -v objdump >/dev/null || {
	echo "build.sh: objdump (binutils) is needed to read the glibc versions the binaries need" >&2
	exit 1
}
# The CUDA driver and NCCL are loaded with dlopen, which needs cgo.
if [ "$(go env CGO_ENABLED)" != 1 ]; then
	echo "build.sh: cgo is off (CGO_ENABLED=$(go env CGO_ENABLED)); the binaries could not load CUDA or NCCL" >&2
	exit 1
fi
mkdir -p "$bin"
rm -f "$bin"/*
ld=(-ldflags='-s -w') # no symbol tables: the binaries travel

go build "${ld[@]}" -o "$bin/commnode" ./cmd/commnode
go test -c "${ld[@]}" -o "$bin/gpu.test" ./gpu
go test -c "${ld[@]}" -o "$bin/cuda.test" ./gpu/cuda
go test -c "${ld[@]}" -o "$bin/nccl.test" ./nccl

# Which commit the figures are of: the GPU machine has no git.
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo -modified)" >"$bin/revision"
glibc=$(objdump -T "$bin/commnode" "$bin"/*.test | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 | sed 's/^GLIBC_//')
echo "$glibc" >"$bin/glibc"
ls -l "$bin"
echo "build.sh: $bin holds $(du -sh "$bin" | cut -f1)"
echo "build.sh: the binaries need glibc $glibc or newer; compare with \`ldd --version\` on the GPU machine"
