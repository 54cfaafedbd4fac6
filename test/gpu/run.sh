#!/usr/bin/env bash
# run.sh checks gocomms on a GPU machine, from the repository root, with
# the binaries test/gpu/build.sh built elsewhere (the machine needs no
# Go): NVML against nvidia-smi, the CUDA layer and its kernels against the
# CPU, the device's copy and kernel bandwidth, commnode's collectives on
# device memory where it has them, the nccl package, and torch.distributed
# over NCCL as the reference. Each step runs under a time limit, and a
# failure does not stop the next; the whole stays under 8 minutes. It
# prints PASS, FAIL or SKIP per step and a summary, on standard output
# and, where $OUT is set, in $OUT/gpu-run.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=test/gpu/bin
commnode=$PWD/$bin/commnode
deadline=$((SECONDS + 440)) # 8 minutes, less the checks between steps and the summary
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results=()

# step ID NAME LIMIT COMMAND... runs COMMAND, for LIMIT seconds at most
# and never past the deadline, and prints its output, kept in $tmp/ID, once
# it ends: a process it leaves behind cannot hold a pipe open. A Go test
# binary that passes having run nothing but skips counts as SKIP.
step() {
	local id=$1 name=$2 limit=$3 rc=0 verdict start
	shift 3
	if ((limit > deadline - SECONDS)); then
		limit=$((deadline - SECONDS))
	fi
	if ((limit < 10)); then
		skip "$name" "out of time"
		return
	fi
	echo
	echo "=== $name (at most ${limit}s): $*"
	start=$SECONDS
	timeout -k 5 "$limit" "$@" >"$tmp/$id" 2>&1
	rc=$?
	cat "$tmp/$id"
	case $rc in
	0) verdict=PASS ;;
	124 | 137) verdict="FAIL (timed out)" ;;
	*) verdict="FAIL (exit $rc)" ;;
	esac
	if ((rc == 0)) && grep -q -- '--- SKIP' "$tmp/$id" && ! grep -qE -- '--- PASS|^Benchmark.* ns/op' "$tmp/$id"; then
		verdict=SKIP
	fi
	echo "=== $name: $verdict in $((SECONDS - start))s"
	results+=("$(printf '%-20s %4ss  %s' "$verdict" $((SECONDS - start)) "$name")")
}

skip() {
	echo
	echo "=== $1: SKIP ($2)"
	results+=("$(printf '%-20s %4s   %s (%s)' SKIP - "$1" "$2")")
}

# gbps NAME FILE prints the GB/s that benchmark NAME reported in FILE.
gbps() {
	awk -v name="$1" '$1 ~ "^Benchmark" name "(-[0-9]+)?$" { for (i = 2; i < NF; i++) if ($(i+1) == "GB/s") print $i }' "$2"
}

# has_flag SUBCOMMAND FLAG tells whether commnode SUBCOMMAND has FLAG.
has_flag() {
	"$commnode" "$1" -h 2>&1 | grep -qE -- "^ +-$2([[:space:]]|$)"
}

main() {
	echo "# gocomms GPU checks, $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
	if timeout 30 nvidia-smi; then
		gpu=1
		timeout 30 nvidia-smi topo -m
	else
		gpu=
		echo "nvidia-smi fails: no usable GPU here; the Go tests skip rather than fail"
	fi

	local have need
	have=$(ldd --version 2>&1 | head -1)
	echo "glibc here: $have"
	if [ ! -f "$bin/glibc" ]; then
		echo "no $bin: run test/gpu/build.sh on a machine with Go first"
	else
		need=$(cat "$bin/glibc")
		have=$(grep -oE '[0-9]+\.[0-9]+$' <<<"$have")
		if [ "$(printf '%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ]; then
			echo "the binaries need glibc $need: OK"
		else
			echo "the binaries need glibc $need, newer than this machine's $have: they will not start"
		fi
	fi

	step nvml "1. NVML against nvidia-smi" 60 "$bin/gpu.test" -test.run NVML -test.v

	step device "2. gpu/cuda device tests" 150 \
		env GOCOMMS_CUDA_REQUIRE=$gpu "$bin/cuda.test" -test.run '^TestDevice' -test.v

	step bandwidth "3. copy and kernel bandwidth" 90 \
		"$bin/cuda.test" -test.run '^$' -test.bench 'DeviceCopy|DeviceCombine' -test.benchtime 20x -test.v
	local copy kernel g
	copy=$(gbps DeviceCopy "$tmp/bandwidth" 2>/dev/null)
	if [ -n "$copy" ]; then
		echo "copy: $copy GB/s (bytes read and written per second)"
		for kernel in sum_float32 sum_bfloat16; do
			g=$(gbps "DeviceCombine/$kernel" "$tmp/bandwidth")
			[ -z "$g" ] || echo "Sum kernel, $kernel: $g GB/s, $(awk -v g="$g" -v c="$copy" \
				'BEGIN { printf "%.0f", 100 * g / c }')% of the copy's"
		done
	fi

	local n
	if [ ! -x "$commnode" ]; then
		skip "4. commnode verify on cuda" "no $commnode"
	elif ! has_flag verify device; then
		skip "4. commnode verify on cuda" "commnode verify has no -device flag yet"
	else
		for n in 2 4; do
			step "verify$n" "4. commnode verify -device cuda, $n ranks" 60 \
				"$commnode" launch -n "$n" -timeout 55s -- "$commnode" verify -device cuda
		done
	fi

	local op
	if [ ! -x "$commnode" ]; then
		skip "5. commnode bench on cuda" "no $commnode"
	elif ! has_flag bench device; then
		skip "5. commnode bench on cuda" "commnode bench has no -device flag yet"
	else
		for op in all_reduce all_gather; do
			step "bench_$op" "5. commnode bench -device cuda -op $op, 2 ranks" 90 \
				"$commnode" launch -n 2 -timeout 85s -- "$commnode" bench -device cuda -op "$op" -b 1M -e 1G -n 10 -w 3
			echo "$op: average busbw $(grep -m1 -h '^\[rank 0\] # Avg bus bandwidth' "$tmp/bench_$op" 2>/dev/null |
				sed 's/.*: *//') GB/s, beside the device's copy: ${copy:-unmeasured} GB/s read and written"
		done
	fi

	if [ -x "$bin/nccl.test" ]; then
		step nccl "6. nccl package, world size 1" 60 env GOCOMMS_NCCL_REQUIRE=1 "$bin/nccl.test" -test.v
	else
		skip "6. nccl package" "no $bin/nccl.test: no nccl package was built"
	fi

	local torchrun=(torchrun)
	command -v torchrun >/dev/null || torchrun=(python3 -m torch.distributed.run)
	if ! timeout 30 python3 -c 'import torch, sys; sys.exit(not (torch.cuda.is_available() and torch.distributed.is_nccl_available()))' 2>/dev/null; then
		skip "7. torch.distributed NCCL reference" "no PyTorch with CUDA and NCCL here"
	else
		step torch "7. torch.distributed NCCL reference, 1 rank" 150 \
			"${torchrun[@]}" --nproc_per_node=1 test/gpu/torch_nccl.py
	fi

	echo
	echo "=== summary"
	printf '%s\n' "${results[@]}"
	! printf '%s\n' "${results[@]}" | grep -q '^FAIL'
}

if [ -n "${OUT:-}" ]; then
	main 2>&1 | tee "$OUT/gpu-run.txt"
else
	main 2>&1
fi
