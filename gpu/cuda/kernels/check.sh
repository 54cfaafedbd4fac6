#!/bin/sh
# check.sh checks the CUDA bindings and kernels against the real toolkit,
# on any machine, GPU or not: the constants gcu.h copies from cuda.h
# (TestHeaderValues, which would skip without the header, must pass), and
# the committed reduce.ptx, assembled by ptxas for the GPUs it is meant
# for (sm_80, A100; sm_90, H100 and H200), as the driver's JIT would. Run
# it wherever the PTX is regenerated or the bindings change. It needs cuda.h
# and ptxas: on Debian, `apt-get install nvidia-cuda-dev nvidia-cuda-toolkit`
# from the contrib and non-free components (about 800 MB, too large for
# every CI run).
set -eu
cd "$(dirname "$0")/../../.."
for tool in ptxas go; do
	command -v "$tool" >/dev/null || { echo "check.sh: $tool not found: install the CUDA toolkit (nvidia-cuda-toolkit)" >&2; exit 1; }
done
[ -e /usr/include/cuda.h ] || { echo "check.sh: /usr/include/cuda.h not found: install nvidia-cuda-dev" >&2; exit 1; }

out=$(go test -count=1 -run '^TestHeaderValues$' -v ./gpu/cuda/)
echo "$out" | grep -- '--- PASS: TestHeaderValues' >/dev/null || { echo "$out"; echo "check.sh: the header check did not pass" >&2; exit 1; }
echo "cuda.h: the constants gcu.h copies match"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arch in sm_80 sm_90; do
	ptxas -arch="$arch" -o "$tmp/reduce_$arch.cubin" gpu/cuda/kernels/reduce.ptx
	echo "reduce.ptx: ptxas $(ptxas --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') assembles it for $arch"
done
