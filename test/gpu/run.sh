#!/usr/bin/env bash
# run.sh checks gocomms on a GPU machine, from the repository root, with
# the binaries test/gpu/build.sh built elsewhere (the machine needs no
# Go). A 30-second smoke test comes first and stops the run where the
# build does not work here. Then: NVML against nvidia-smi, the device's
# copy bandwidth from 1 MiB to 1 GiB, commnode bench of all_reduce and
# all_gather on device memory on the native backend and on NCCL,
# torch.distributed over NCCL as the reference, the CUDA layer's device
# tests, the NCCL package's against the NCCL found (its nccl.h's values
# too), and commnode verify on both backends. Each step runs under its
# own time limit and a failure does not stop the next; the whole stays
# under 9 minutes, so that it fits one 10-minute command. It prints PASS,
# FAIL or SKIP per step, a summary and a table of the figures per size,
# into $OUT/gpu-run.txt (test/gpu/out/ where $OUT is unset) and
# standard output, and writes gpu-run.json beside it after every step,
# so a run cut short still reports what it did.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
bin=test/gpu/bin
commnode=$PWD/$bin/commnode
out=${OUT:-$PWD/test/gpu/out}
mkdir -p "$out"
json=$out/gpu-run.json
deadline=$((SECONDS + 510)) # 9 minutes, less the summary and the kills' grace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results=()

# version KEY VALUE records a version for the report.
version() {
	printf '%s\t%s\n' "$1" "$2" >>"$tmp/versions.tsv"
}

# report STATUS rewrites the JSON report from the steps so far.
report() {
	python3 test/gpu/report.py "$tmp" "$json" "$1" "${@:2}" ||
		echo "run.sh: could not write $json (python3 test/gpu/report.py failed)"
}

# step ID NAME LIMIT COMMAND... runs COMMAND, for LIMIT seconds at most
# and never past the deadline, and prints its output, kept in $tmp/ID, once
# it ends: a process it leaves behind cannot hold a pipe open. A Go test
# binary that passes having run nothing but skips counts as SKIP. It sets
# verdict.
step() {
	local id=$1 name=$2 limit=$3 rc=0 start
	shift 3
	if ((limit > deadline - SECONDS)); then
		limit=$((deadline - SECONDS))
	fi
	if ((limit < 10)); then
		skip "$id" "$name" "out of time"
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
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$name" "$verdict" $((SECONDS - start)) "$limit" "$*" >>"$tmp/steps.tsv"
	report running
}

# skip ID NAME WHY records a step not run.
skip() {
	verdict=SKIP
	echo
	echo "=== $2: SKIP ($3)"
	results+=("$(printf '%-20s %4s   %s (%s)' SKIP - "$2" "$3")")
	printf '%s\t%s\t%s\t\t\t%s\n' "$1" "$2" "SKIP ($3)" "" >>"$tmp/steps.tsv"
	report running
}

# gbps NAME FILE prints the GB/s that benchmark NAME reported in FILE.
gbps() {
	awk -v name="$1" '$1 ~ "^Benchmark" name "(-[0-9]+)?$" { for (i = 2; i < NF; i++) if ($(i+1) == "GB/s") print $i }' "$2"
}

# preflight prints and records the machine: its GPUs, driver, glibc
# against the binaries', the NCCL commnode finds and PyTorch's. It sets
# gpus to the number of GPUs and torch where PyTorch has CUDA and NCCL.
preflight() {
	local have need line
	echo "# gocomms GPU checks, $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
	version date "$(date -u '+%Y-%m-%dT%H:%M:%SZ')"
	version host "$(hostname)"
	version revision "$(cat "$bin/revision" 2>/dev/null || echo unknown)"
	gpus=0
	if timeout 15 nvidia-smi; then
		timeout 15 nvidia-smi topo -m
		gpus=$(timeout 15 nvidia-smi -L | grep -c '^GPU ')
		version gpu "$(timeout 15 nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"
		version driver "$(timeout 15 nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
		version cuda "$(timeout 15 nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | sed 's/.*: //')"
	else
		echo "nvidia-smi fails: no usable GPU here"
	fi
	version gpus "$gpus"

	have=$(ldd --version 2>&1 | head -1 | grep -oE '[0-9]+\.[0-9]+$')
	version glibc "${have:-unknown}"
	if [ ! -f "$bin/glibc" ]; then
		echo "no $bin: run test/gpu/build.sh on a machine with Go first, and bring $bin here"
	else
		need=$(cat "$bin/glibc")
		version glibc_needed "$need"
		if [ "$(printf '%s\n' "$need" "${have:-0}" | sort -V | head -1)" = "$need" ]; then
			echo "glibc here: $have; the binaries need $need: OK"
		else
			echo "glibc here: ${have:-unknown}; the binaries need $need: they will not start"
		fi
	fi

	# The NCCL commnode finds by itself is recorded; where it finds none,
	# the one in Python's nvidia packages, which PyTorch loads, is named.
	line=$(timeout 15 "$commnode" info 2>&1 | sed -n 's/^nccl  *//p')
	version nccl_located "${line:-commnode info failed}"
	if [[ $line == "NCCL not found"* && -z ${GOCOMMS_NCCL_LIBRARY:-} ]]; then
		GOCOMMS_NCCL_LIBRARY=$(timeout 20 python3 -c '
import glob, importlib.util, os
spec = importlib.util.find_spec("nvidia")
for d in spec.submodule_search_locations if spec else []:
    for p in sorted(glob.glob(os.path.join(d, "**", "libnccl.so*"), recursive=True)):
        print(p)
        raise SystemExit
' 2>/dev/null)
		if [ -n "$GOCOMMS_NCCL_LIBRARY" ]; then
			export GOCOMMS_NCCL_LIBRARY
			echo "commnode finds no NCCL by itself; Python's is $GOCOMMS_NCCL_LIBRARY: GOCOMMS_NCCL_LIBRARY names it"
			version nccl_library "$GOCOMMS_NCCL_LIBRARY"
		fi
	fi

	torch=
	if line=$(timeout 60 python3 -c '
import torch
assert torch.cuda.is_available() and torch.distributed.is_nccl_available()
print(torch.__version__, ".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null); then
		torch=1
		version torch "${line% *}"
		version torch_nccl "${line#* }"
		echo "PyTorch $line"
	else
		echo "no PyTorch with CUDA and NCCL here"
	fi
}

main() {
	preflight

	# In 30 seconds: does the build run here and reach the GPU?
	# shellcheck disable=SC2016 # $1 is the inner shell's
	step smoke "0. smoke test: commnode info, 2-rank verify on cuda" 30 bash -c \
		'"$1" info && "$1" launch -n 2 -timeout 25s -- "$1" verify -device cuda -counts 0,1' - "$commnode"
	if [ "$verdict" != PASS ]; then
		echo
		echo "run.sh: STOPPED: the smoke test failed ($verdict), so the build does not work on this machine;"
		echo "run.sh: see its output above (and the glibc line), fix it, and run again; nothing else was run"
		report "stopped: the smoke test failed"
		return 1
	fi
	version cuda_driver "$(sed -n 's/^cuda driver  *//p' "$tmp/smoke")"
	version nccl "$(sed -n 's/^nccl  *//p' "$tmp/smoke")"

	# NCCL refuses two ranks on one GPU; the native backend shares one.
	local nccl_ranks=$((gpus > 1 ? gpus : 1)) native_ranks=$((gpus > 2 ? gpus : 2)) op copy kernel g backend n

	step nvml "1. NVML against nvidia-smi" 30 "$bin/gpu.test" -test.run NVML -test.v

	step bandwidth "2. device copy 1 MiB to 1 GiB, and kernel bandwidth" 60 \
		"$bin/cuda.test" -test.run '^$' -test.bench 'DeviceCopy|DeviceCombine|DeviceFold' -test.benchtime 20x -test.v
	copy=$(gbps DeviceCopy/256MiB "$tmp/bandwidth" 2>/dev/null)
	if [ -n "$copy" ]; then
		for kernel in DeviceCombine/sum_float32 DeviceCombine/sum_bfloat16 DeviceFold/sum_float32_2 DeviceFold/sum_float32_4; do
			g=$(gbps "$kernel" "$tmp/bandwidth")
			[ -z "$g" ] || echo "$kernel: $g GB/s, $(awk -v g="$g" -v c="$copy" \
				'BEGIN { printf "%.0f", 100 * g / c }')% of a 256 MiB copy's $copy GB/s"
		done
	fi

	for backend in native nccl; do
		n=$native_ranks
		[ "$backend" = native ] || n=$nccl_ranks
		for op in all_reduce all_gather; do
			step "bench_${backend}_$op" "3. commnode bench --backend $backend -op $op, $n ranks, 1 MiB to 1 GiB" 60 \
				"$commnode" launch -n "$n" -timeout 55s -- "$commnode" bench --backend "$backend" -device cuda \
				-op "$op" -b 1M -e 1G -n 10 -w 3 --json -timeout 30s
		done
	done

	if [ -z "$torch" ]; then
		skip torch "4. torch.distributed NCCL reference" "no PyTorch with CUDA and NCCL here"
	else
		local torchrun=(torchrun)
		command -v torchrun >/dev/null || torchrun=(python3 -m torch.distributed.run)
		step torch "4. torch.distributed NCCL reference, $nccl_ranks ranks" 120 \
			"${torchrun[@]}" --nproc_per_node="$nccl_ranks" test/gpu/torch_nccl.py
	fi

	step device "5. gpu/cuda device tests" 120 \
		env GOCOMMS_CUDA_REQUIRE=1 "$bin/cuda.test" -test.run '^TestDevice' -test.v
	# The NCCL found: gnc.h's values against its nccl.h, then the nccl
	# package's device tests, one rank per process and GPU.
	# It reads gnc.h from the package's directory, as go test runs it.
	step nccl "5. nccl header and device tests" 60 \
		env -C nccl GOCOMMS_NCCL_TEST=1 "$PWD/$bin/nccl.test" -test.run '^(TestHeaderValues|TestDevice)' -test.v

	for n in 2 4; do
		step "verify_native_$n" "6. commnode verify --backend native, $n ranks" 45 \
			"$commnode" launch -n "$n" -timeout 40s -- "$commnode" verify --backend native -device cuda
	done
	step "verify_nccl_$nccl_ranks" "6. commnode verify --backend nccl, $nccl_ranks ranks" 45 \
		"$commnode" launch -n "$nccl_ranks" -timeout 40s -- "$commnode" verify --backend nccl -device cuda

	echo
	echo "=== summary"
	printf '%s\n' "${results[@]}"
	echo
	report "done" --table
	echo "run.sh: report in $json"
	! printf '%s\n' "${results[@]}" | grep -q '^FAIL'
}

main 2>&1 | tee "$out/gpu-run.txt"
