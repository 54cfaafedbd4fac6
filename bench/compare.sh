#!/usr/bin/env bash
# compare.sh: collectives between processes of one host, side by side:
# gocomms over shared memory and over TCP loopback, Open MPI over shared
# memory (btl vader) and over TCP, Gloo (TCP) and, if asked,
# torch.distributed (gloo backend). float32, sum where the op reduces:
# all-reduce from 8 B to 64 MiB, all-gather, reduce-scatter, all-to-all and
# broadcast at 8 B, 1 MiB and 64 MiB. A memcpy of 64 MiB gives the bound
# shared memory is held against.
#
# Every implementation runs the same sweep with the same iteration counts,
# one after the other, round after round (A B C D A B C D ...), so that the
# load of a shared machine falls on all of them alike. The tables report
# medians over rounds; the raw numbers of every run go to the results dir.
#
# Usage: bench/compare.sh [--quick] [--rounds N] [--procs 2,4] [--peers LIST]
#                         [--ops LIST] [--all-sizes-ops] [--out DIR]
#                         [--timeout S] [--all-sizes] [--no-install]
# See --help.
set -euo pipefail

all_peers=gocomms-shm,gocomms-shm-async,gocomms-tcp,gocomms-tcp-async,mpi-shm,mpi-tcp,gloo,torch
default_peers=gocomms-shm,gocomms-tcp,mpi-shm,mpi-tcp,gloo
all_ops=all_reduce,all_gather,reduce_scatter,all_to_all,broadcast,send_recv
default_ops=all_reduce,all_gather,reduce_scatter,all_to_all,broadcast

usage() {
	cat <<EOF
usage: bench/compare.sh [options]

  --quick          one round; all-reduce at 8 B, 64 KiB, 1 MiB, 64 MiB, the
                   other ops at their short sweep (a smoke test, ~1 min)
  --rounds N       rounds of every implementation (default 3)
  --procs LIST     process counts, comma-separated (default 2)
  --peers LIST     what to run, comma-separated, from
                     $all_peers
                   (default $default_peers;
                   gocomms and mpi stand for both their transports)
  --ops LIST       operations, comma-separated, from
                     $all_ops
                   (default $default_ops)
  --all-sizes-ops  every op runs all-reduce's full sweep, not the short one
  --out DIR        results dir (default bench/results/<date>T<time>[-quick])
  --timeout S      bound on each run in seconds (default 300); a run that
                   hangs is killed, noted, and the comparison goes on
  --all-sizes      table every size measured, not only 8 B and powers of 4
  --no-install     do not apt-get install missing peers; skip them instead
  --registered     gocomms' buffers come from Comm.Alloc (commnode bench -R):
                   peers of the host read them in place
  -h, --help       this help

Implementations:
  gocomms-shm  commnode launch -n P -- commnode bench --op OP -z --json,
               GOCOMMS_TRANSPORT=shm (shared memory between the processes);
               -z waits for each op, as the peers' blocking calls do
  gocomms-tcp  the same with GOCOMMS_TRANSPORT=tcp (TCP on loopback)
  gocomms-shm-async, gocomms-tcp-async
               the same without -z: every op issued async, then all
               waited, as a training loop overlaps its buckets
  mpi-shm      bench/peers/mpi_coll.c under mpirun --mca pml ob1
               --mca btl self,vader (Open MPI's shared memory)
  mpi-tcp      the same with --mca btl tcp,self
  gloo         bench/peers/gloo_coll.cc, TCP pairs on 127.0.0.1
  torch        bench/peers/torch_coll.py, torch.distributed's gloo backend

send_recv (every rank sends to rank+1 and receives from rank-1) runs on
gocomms (a batch) and Open MPI (MPI_Sendrecv) only.
               (no reduce-scatter; slow to start, so not in the default)

Sweeps (bytes: from, to, factor; iterations, warm-ups), the same for all
implementations:
  all_reduce   small  8 B .. 64 KiB x2       ITERS_SMALL=100 WARMUP_SMALL=10
               large  128 KiB .. 64 MiB x2   ITERS_LARGE=10  WARMUP_LARGE=3
  other ops    small  8 B                    OPS_ITERS_SMALL=50 OPS_WARMUP_SMALL=10
               large  1 MiB, 64 MiB          OPS_ITERS_LARGE=10 OPS_WARMUP_LARGE=5
  (all-gather, reduce-scatter and all-to-all start at 4P bytes when 8 B
  would leave a rank no element: 16 B at 3 or 4 processes)
The eight variables above may be set in the environment. Sizes, times and
bandwidths follow nccl-tests, as commnode bench reports them.
EOF
}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rounds=3
procs=2
peers=$default_peers
ops=$default_ops
out=
quick=0
run_timeout=300
all_sizes=
ops_full=0
install=1
registered=
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--rounds) rounds=${2:?--rounds needs a value}; shift ;;
	--procs) procs=${2:?--procs needs a value}; shift ;;
	--peers) peers=${2:?--peers needs a value}; shift ;;
	--ops) ops=${2:?--ops needs a value}; shift ;;
	--all-sizes-ops) ops_full=1 ;;
	--out) out=${2:?--out needs a value}; shift ;;
	--timeout) run_timeout=${2:?--timeout needs a value}; shift ;;
	--all-sizes) all_sizes=--all-sizes ;;
	--no-install) install=0 ;;
	--registered) registered=-R ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
	shift
done
need_positive --rounds "$rounds"
parse_procs "$procs" "collectives need at least 2 processes"
need_positive --timeout "$run_timeout"

# Peers in table order, without repeats; gocomms and mpi name both
# transports.
peer_list=()
IFS=, read -ra asked <<<"$peers"
for p in "${asked[@]}"; do
	case $p in
	gocomms) asked+=(gocomms-shm gocomms-tcp) ;;
	gocomms-async) asked+=(gocomms-shm-async gocomms-tcp-async) ;;
	mpi) asked+=(mpi-shm mpi-tcp) ;;
	gocomms-shm | gocomms-shm-async | gocomms-tcp | gocomms-tcp-async | mpi-shm | mpi-tcp | gloo | torch) ;;
	*) die "unknown peer '$p' (from $all_peers)" ;;
	esac
done
IFS=, read -ra known <<<"$all_peers"
for p in "${known[@]}"; do
	[[ " ${asked[*]} " == *" $p "* ]] && peer_list+=("$p")
done
((${#peer_list[@]})) || die "--peers: nothing to run"
peers=$(IFS=,; echo "${peer_list[*]}")

IFS=, read -ra op_list <<<"$ops"
((${#op_list[@]})) || die "--ops: nothing to run"
for o in "${op_list[@]}"; do
	[[ ,$all_ops, == *,$o,* ]] || die "unknown op '$o' (from $all_ops)"
done

# Bands: "name minb maxb factor iters warmup". Small sizes get more
# iterations (an op takes microseconds there); large ones fewer (64 MiB
# takes tens of milliseconds). The tables merge the bands of an op.
iters_small=${ITERS_SMALL:-100} warmup_small=${WARMUP_SMALL:-10}
iters_large=${ITERS_LARGE:-10} warmup_large=${WARMUP_LARGE:-3}
ops_iters_small=${OPS_ITERS_SMALL:-50} ops_warmup_small=${OPS_WARMUP_SMALL:-10}
ops_iters_large=${OPS_ITERS_LARGE:-10} ops_warmup_large=${OPS_WARMUP_LARGE:-5}
for v in "$iters_small" "$iters_large" "$ops_iters_small" "$ops_iters_large"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || die "ITERS_* and OPS_ITERS_* must be positive integers"
done
for v in "$warmup_small" "$warmup_large" "$ops_warmup_small" "$ops_warmup_large"; do
	[[ $v =~ ^[0-9]+$ ]] || die "WARMUP_* and OPS_WARMUP_* must be integers >= 0"
done
if ((quick)); then
	rounds=1
	# Factors that jump straight from one end to the other: 8 B and 64 KiB,
	# 1 MiB and 64 MiB.
	full_bands=("small 8 65536 8192 $iters_small $warmup_small"
		"large 1048576 67108864 64 $iters_large $warmup_large")
else
	full_bands=("small 8 65536 2 $iters_small $warmup_small"
		"large 131072 67108864 2 $iters_large $warmup_large")
fi
short_bands=("small 8 8 2 $ops_iters_small $ops_warmup_small"
	"large 1048576 67108864 64 $ops_iters_large $ops_warmup_large")

# bands_of OP: the bands OP runs, one a line.
bands_of() {
	if [[ $1 == all_reduce ]] || ((ops_full)); then
		printf '%s\n' "${full_bands[@]}"
	else
		printf '%s\n' "${short_bands[@]}"
	fi
}

# min_bytes OP P MINB: the smallest size OP runs at on P processes. Ops that
# split the buffer into P blocks need 4P bytes (one float32 per rank); take
# the next power of two.
min_bytes() {
	local m=$3
	case $1 in
	all_gather | reduce_scatter | all_to_all)
		while ((m < 4 * $2)); do m=$((m * 2)); done
		;;
	esac
	echo "$m"
}

# supports PEER OP: whether PEER has OP; prints why not.
supports() {
	if [[ $1 == torch && $2 == reduce_scatter ]]; then
		echo "torch.distributed's gloo backend has no reduce-scatter"
		return 1
	fi
	if [[ ($1 == gloo || $1 == torch) && $2 == send_recv ]]; then
		echo "no send_recv peer for $1"
		return 1
	fi
}

has_peer() { [[ ,$peers, == *,$1,* ]]; }
has_any() {
	local p
	for p; do has_peer "$p" && return 0; done
	return 1
}
drop_peer() {
	local kept=() p q
	for p in "${peer_list[@]}"; do
		for q; do [[ $p == "$q" ]] && continue 2; done
		kept+=("$p")
	done
	peer_list=("${kept[@]}")
	peers=$(IFS=,; echo "${peer_list[*]}")
}

# Debian's python3 carries Debian's torch; a python3 earlier in PATH (a
# virtualenv, pyenv) would not.
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3) || die "python3 not found"

# --- peers: install what is missing -------------------------------------

missing_pkgs() {
	local pkgs=()
	if has_any mpi-shm mpi-tcp; then
		command -v mpirun >/dev/null || pkgs+=(openmpi-bin)
		command -v mpicc >/dev/null || pkgs+=(libopenmpi-dev)
	fi
	if has_peer gloo; then
		[[ -f /usr/include/gloo/allreduce.h ]] || pkgs+=(libgloo-dev)
		command -v g++ >/dev/null || pkgs+=(g++)
	fi
	if has_peer torch; then
		/usr/bin/python3 -c 'import torch' 2>/dev/null || pkgs+=(python3-torch)
	fi
	command -v gcc >/dev/null || pkgs+=(gcc)
	echo "${pkgs[@]}"
}

read -ra need <<<"$(missing_pkgs)"
if ((${#need[@]})); then
	if ((install)); then
		apt_install "; install them, or leave peers out with --peers" "${need[@]}"
	else
		log "missing ${need[*]}; --no-install: leaving those peers out"
		for pkg in "${need[@]}"; do
			case $pkg in
			openmpi-bin | libopenmpi-dev) drop_peer mpi-shm mpi-tcp ;;
			libgloo-dev | g++) drop_peer gloo ;;
			python3-torch) drop_peer torch ;;
			gcc) log "no gcc: memcpy bandwidth is not measured" ;;
			esac
		done
	fi
fi
((${#peer_list[@]})) || die "nothing left to run"

# --- build ------------------------------------------------------------------

make_tmp compare

if has_any gocomms-shm gocomms-shm-async gocomms-tcp gocomms-tcp-async; then
	build_commnode
fi
if has_any mpi-shm mpi-tcp; then
	mpicc -O2 -Wall -o "$tmp/mpi_coll" "$here/peers/mpi_coll.c" || die "building the MPI peer failed"
fi
if has_peer gloo; then
	g++ -O2 -std=c++17 -Wall -o "$tmp/gloo_coll" "$here/peers/gloo_coll.cc" -lgloo -lpthread ||
		die "building the Gloo peer failed"
fi
memcpy_bw=
if command -v gcc >/dev/null; then
	if gcc -O2 -Wall -o "$tmp/memcpy_bw" "$here/peers/memcpy_bw.c" -lpthread; then
		memcpy_bw=$tmp/memcpy_bw
	else
		log "building memcpy_bw failed: memcpy bandwidth is not measured"
	fi
fi

# --- results dir and machine ------------------------------------------------

default_out ""
mkdir -p "$out/logs"
: >"$out/failures.txt"
: >"$out/skipped.txt"
printf '# peer\top\tprocs\tround\tband\tsize_bytes\ttime_us\talgbw_GBps\tbusbw_GBps\twrong\n' >"$out/runs.tsv"
printf '# round\tsize_bytes\tnprocs\treps\tbest_GBps\tmedian_GBps\tsum_median_GBps\n' >"$out/memcpy.tsv"

# The share of time some task waited for a CPU: how busy the machine was.
cpu_pressure() {
	if [[ -r /proc/pressure/cpu ]]; then
		echo "cpu pressure at $1: $(head -1 /proc/pressure/cpu)"
	fi
}

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "command: ${cmdline% }"
	echo "options: rounds=$rounds procs=$procs peers=$peers ops=$ops quick=$quick all_sizes_ops=$ops_full timeout=${run_timeout}s registered=${registered:-no}"
	printf 'band all_reduce: %s\n' "${full_bands[@]}"
	if ((ops_full)); then
		echo "band other ops: as all_reduce"
	else
		printf 'band other ops: %s\n' "${short_bands[@]}"
	fi
	echo "nproc: $(nproc)"
	echo "cpu: $(cpu_model)"
	echo "kernel: $(uname -sr)"
	echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	cpu_pressure start
	if has_any gocomms-shm gocomms-shm-async gocomms-tcp gocomms-tcp-async; then
		go version
		echo "commnode: $(build_id "$tmp/commnode")"
		# Settings that change what gocomms does (GOCOMMS_TRANSPORT is set
		# per run).
		env | grep '^GOCOMMS_' | grep -v '^GOCOMMS_TRANSPORT=' | sort | sed 's/^/environment: /' || true
	fi
	if has_any mpi-shm mpi-tcp; then
		mpirun --allow-run-as-root --version 2>/dev/null | head -1
		env | grep -E '^(OMPI_MCA_|GLIBC_TUNABLES=)' | sort | sed 's/^/environment: /' || true
	fi
	if has_peer gloo; then
		dpkg-query -W -f='gloo: ${Package} ${Version}\n' libgloo-dev 2>/dev/null || echo "gloo: (version unknown)"
	fi
	if has_peer torch; then
		/usr/bin/python3 -c 'import sys, torch; print("torch", torch.__version__, "python", sys.version.split()[0])'
	fi
} >"$out/machine.txt"

# --- runs ---------------------------------------------------------------------

free_port() {
	"$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_peer PEER OP P LOG MINB MAXB FACTOR ITERS WARMUP
run_peer() {
	local peer=$1 op=$2 p=$3 logf=$4
	shift 4
	case $peer in
	gocomms-*)
		# `commnode` after -- names the launcher's own binary.
		local transport=${peer#gocomms-} blocking=-z
		[[ $transport == *-async ]] && blocking=
		bounded "$logf" env GOCOMMS_TRANSPORT="${transport%-async}" "$tmp/commnode" launch -n "$p" -- commnode bench \
			--op "$op" -b "$1" -e "$2" -f "$3" -n "$4" -w "$5" $blocking $registered -timeout "${op_timeout}s" --json
		;;
	mpi-shm | mpi-tcp)
		# pml ob1 so that the btl choice holds (UCX, when present, would
		# bypass it); self,vader: shared memory only; tcp,self: no shared
		# memory between the ranks.
		local btl=self,vader
		[[ $peer == mpi-tcp ]] && btl=tcp,self
		bounded "$logf" mpirun --allow-run-as-root --oversubscribe \
			--mca pml ob1 --mca btl "$btl" -np "$p" "$tmp/mpi_coll" "$op" "$@"
		;;
	gloo)
		local store r pids=() rc=0
		store=$(mktemp -d "$tmp/gloo-store.XXXXXX")
		for ((r = 0; r < p; r++)); do
			RANK=$r WORLD_SIZE=$p GLOO_STORE=$store GLOO_TIMEOUT_MS=$((op_timeout * 1000)) \
				timeout -k 10 "$run_timeout" "$tmp/gloo_coll" "$op" "$@" >>"$logf" 2>&1 &
			pids+=($!)
		done
		children=("${pids[@]}")
		for r in "${pids[@]}"; do wait "$r" || rc=$?; done
		children=()
		rm -rf "$store"
		return "$rc"
		;;
	torch)
		# Debian's torchrun on Python 3.11 needs --redirects/--tee to relay
		# the workers' output; a free port keeps concurrent jobs apart; a
		# short monitor interval saves seconds at the end of each run.
		mkdir -p "$tmp/torchrun"
		bounded "$logf" /usr/bin/python3 -m torch.distributed.run --nproc_per_node "$p" \
			--redirects 1 --tee 1 --monitor_interval 0.5 --log_dir "$tmp/torchrun" \
			--master_addr 127.0.0.1 --master_port "$(free_port)" \
			"$here/peers/torch_coll.py" "$op" "$@"
		;;
	esac
}
# Per-operation bounds (no legitimate op here takes a second): a stalled op
# fails its run with a message well before timeout(1) kills it.
op_timeout=$((run_timeout / 5 + 1))
export TORCH_PEER_TIMEOUT_S=$op_timeout

# What runs: note the pairs a peer lacks, count the runs.
total=0
for o in "${op_list[@]}"; do
	mapfile -t bands < <(bands_of "$o")
	for peer in "${peer_list[@]}"; do
		if why=$(supports "$peer" "$o"); then
			total=$((total + ${#proc_list[@]} * rounds * ${#bands[@]}))
		else
			printf '%s\t%s\t%s\n' "$peer" "$o" "$why" >>"$out/skipped.txt"
			log "$peer: no $o ($why)"
		fi
	done
done
((total)) || die "nothing to run"
log "peers: ${peer_list[*]}; ops: ${op_list[*]}; processes: ${proc_list[*]}; rounds: $rounds"
log "$total runs$([[ -n $memcpy_bw ]] && echo ", and a memcpy measurement per round")"
log "results: $out"
start=$SECONDS
done_runs=0
for p in "${proc_list[@]}"; do
	for ((rnd = 1; rnd <= rounds; rnd++)); do
		if [[ -n $memcpy_bw ]]; then
			logf=$out/logs/np${p}_r${rnd}_memcpy.log
			: >"$logf"
			if bounded "$logf" "$memcpy_bw" 64M 10 1 "$p"; then
				"$py" "$here/report.py" memcpy "$rnd" <"$logf" >>"$out/memcpy.tsv"
			else
				echo "np=$p round=$rnd memcpy: FAILED; log: logs/${logf##*/}" >>"$out/failures.txt"
			fi
		fi
		for op in "${op_list[@]}"; do
			mapfile -t bands < <(bands_of "$op")
			for band in "${bands[@]}"; do
				read -r bname minb maxb factor iters warmup <<<"$band"
				minb=$(min_bytes "$op" "$p" "$minb")
				((maxb >= minb)) || maxb=$minb
				for peer in "${peer_list[@]}"; do
					supports "$peer" "$op" >/dev/null || continue
					logf=$out/logs/np${p}_r${rnd}_${op}_${bname}_${peer}.log
					: >"$logf"
					t0=$SECONDS
					rc=0
					run_peer "$peer" "$op" "$p" "$logf" "$minb" "$maxb" "$factor" "$iters" "$warmup" || rc=$?
					"$py" "$here/report.py" rows "$peer" "$op" "$p" "$rnd" "$bname" <"$logf" >>"$out/runs.tsv"
					done_runs=$((done_runs + 1))
					status=$(run_status "$rc")
					if ((rc != 0)); then
						echo "np=$p round=$rnd op=$op band=$bname peer=$peer: $status; log: logs/${logf##*/}" >>"$out/failures.txt"
					fi
					elapsed=$((SECONDS - start))
					left=$((elapsed * (total - done_runs) / done_runs))
					log "[$done_runs/$total] np=$p round $rnd/$rounds $op $bname $peer: $((SECONDS - t0))s $status (${elapsed}s in, ~${left}s left)"
				done
			done
		done
	done
done

{
	echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	cpu_pressure end
	if [[ -n $memcpy_bw ]]; then
		"$py" "$here/report.py" memcpy-line "$out"
	fi
	echo "wall time: $((SECONDS - start))s"
} >>"$out/machine.txt"

{
	echo "## Collectives between processes of one host: ${peers//,/, }"
	echo
	echo '```'
	cat "$out/machine.txt"
	echo '```'
	echo
	"$py" "$here/report.py" table "$out" $all_sizes --peers "$peers" --ops "$ops"
	failed_runs rows
} >"$out/summary.md"
cat "$out/summary.md"
log "done in $((SECONDS - start))s; summary: $out/summary.md, raw: $out/runs.tsv, logs: $out/logs/"
