#!/usr/bin/env bash
# compare.sh: all-reduce over TCP loopback, side by side: gocomms against
# Open MPI (btl tcp), Gloo (gloo::allreduce, ring) and torch.distributed
# (gloo backend). float32, sum, sizes 8 B to 64 MiB.
#
# Every implementation runs the same sweep with the same iteration counts,
# one after the other, round after round (A B C D A B C D ...), so that the
# load of a shared machine falls on all of them alike. The table reports
# medians over rounds; the raw numbers of every run go to the results dir.
#
# Usage: bench/compare.sh [--quick] [--rounds N] [--procs 2,4] [--peers LIST]
#                         [--out DIR] [--timeout S] [--all-sizes] [--no-install]
# See --help.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench/compare.sh [options]

  --quick          one round, sizes 8 B, 64 KiB, 1 MiB, 64 MiB (a smoke test)
  --rounds N       rounds of every implementation (default 3)
  --procs LIST     process counts, comma-separated (default 2,4)
  --peers LIST     what to run, comma-separated, from gocomms,mpi,gloo,torch
                   (default all four)
  --out DIR        results dir (default bench/results/<date>T<time>[-quick])
  --timeout S      bound on each run in seconds (default 300); a run that
                   hangs is killed, noted, and the comparison goes on
  --all-sizes      table every size measured, not only 8 B and powers of 4
  --no-install     do not apt-get install missing peers; skip them instead
  -h, --help       this help

Sweeps (bytes: from, to, factor; iterations, warm-ups), the same for all:
  small  8 B .. 64 KiB x2      ITERS_SMALL=100 WARMUP_SMALL=10
  large  128 KiB .. 64 MiB x2  ITERS_LARGE=10  WARMUP_LARGE=3
The four variables above may be set in the environment.
EOF
}

log() { printf 'compare.sh: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

cmdline="bench/compare.sh${*:+ $(printf '%q ' "$@")}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

rounds=3
procs=2,4
peers=gocomms,mpi,gloo,torch
out=
quick=0
run_timeout=300
all_sizes=
install=1
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--rounds) rounds=${2:?--rounds needs a value}; shift ;;
	--procs) procs=${2:?--procs needs a value}; shift ;;
	--peers) peers=${2:?--peers needs a value}; shift ;;
	--out) out=${2:?--out needs a value}; shift ;;
	--timeout) run_timeout=${2:?--timeout needs a value}; shift ;;
	--all-sizes) all_sizes=--all-sizes ;;
	--no-install) install=0 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
	shift
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer, not '$rounds'"
[[ $procs =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--procs must be like 2,4, not '$procs'"
[[ $run_timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer, not '$run_timeout'"
IFS=, read -ra proc_list <<<"$procs"
IFS=, read -ra peer_list <<<"$peers"
for p in "${peer_list[@]}"; do
	case $p in gocomms | mpi | gloo | torch) ;; *) die "unknown peer '$p' (gocomms, mpi, gloo, torch)" ;; esac
done
for n in "${proc_list[@]}"; do
	((n >= 2)) || die "--procs: all-reduce needs at least 2 processes"
done

# Bands: "name minb maxb factor iters warmup". Small sizes get more
# iterations (an op takes microseconds there); large ones fewer (64 MiB
# takes tens of milliseconds). The table merges both bands.
iters_small=${ITERS_SMALL:-100} warmup_small=${WARMUP_SMALL:-10}
iters_large=${ITERS_LARGE:-10} warmup_large=${WARMUP_LARGE:-3}
for v in "$iters_small" "$iters_large"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || die "ITERS_SMALL and ITERS_LARGE must be positive integers"
done
for v in "$warmup_small" "$warmup_large"; do
	[[ $v =~ ^[0-9]+$ ]] || die "WARMUP_SMALL and WARMUP_LARGE must be integers >= 0"
done
if ((quick)); then
	rounds=1
	# Factors that jump straight from one end to the other: 8 B and 64 KiB,
	# 1 MiB and 64 MiB.
	bands=("small 8 65536 8192 $iters_small $warmup_small"
		"large 1048576 67108864 64 $iters_large $warmup_large")
else
	bands=("small 8 65536 2 $iters_small $warmup_small"
		"large 131072 67108864 2 $iters_large $warmup_large")
fi

has_peer() { [[ ,$peers, == *,$1,* ]]; }
drop_peer() {
	local kept=() p
	for p in "${peer_list[@]}"; do [[ $p == "$1" ]] || kept+=("$p"); done
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
	if has_peer mpi; then
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
	echo "${pkgs[@]}"
}

read -ra need <<<"$(missing_pkgs)"
if ((${#need[@]})); then
	if ((install)); then
		sudo=()
		((EUID == 0)) || sudo=(sudo)
		log "installing ${need[*]} (apt-get)"
		# A fresh machine may have stale package lists: update once and retry.
		if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null; then
			"${sudo[@]}" apt-get update >/dev/null || true
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >/dev/null ||
				die "apt-get install ${need[*]} failed; install them, or leave peers out with --peers"
		fi
	else
		log "missing ${need[*]}; --no-install: leaving those peers out"
		for pkg in "${need[@]}"; do
			case $pkg in
			openmpi-bin | libopenmpi-dev) drop_peer mpi ;;
			libgloo-dev | g++) drop_peer gloo ;;
			python3-torch) drop_peer torch ;;
			esac
		done
	fi
fi
((${#peer_list[@]})) || die "nothing left to run"

# --- build ------------------------------------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gocomms-compare.XXXXXX")
children=()
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
# Ranks started under timeout(1) run in their own process groups, out of
# reach of a terminal's Ctrl-C; stop them by hand.
on_signal() {
	log "interrupted; stopping the running job"
	((${#children[@]})) && kill -TERM "${children[@]}" 2>/dev/null
	wait || true
	exit 130
}
trap on_signal INT TERM

if has_peer gocomms; then
	if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
		PATH=$PATH:/usr/local/go/bin
	fi
	command -v go >/dev/null || die "go not found: it is needed to build commnode"
	log "building commnode from $root"
	(cd "$root" && go build -o "$tmp/commnode" ./cmd/commnode) || die "commnode does not build from the tree"
fi
if has_peer mpi; then
	mpicc -O2 -Wall -o "$tmp/mpi_allreduce" "$here/peers/mpi_allreduce.c" || die "building the MPI peer failed"
fi
if has_peer gloo; then
	g++ -O2 -std=c++17 -Wall -o "$tmp/gloo_allreduce" "$here/peers/gloo_allreduce.cc" -lgloo -lpthread ||
		die "building the Gloo peer failed"
fi

# --- results dir and machine ------------------------------------------------

if [[ -z $out ]]; then
	out=$here/results/$(date +%Y-%m-%dT%H%M%S)
	if ((quick)); then out+=-quick; fi
fi
mkdir -p "$out/logs"
: >"$out/failures.txt"
printf '# peer\tprocs\tround\tband\tsize_bytes\ttime_us\talgbw_GBps\tbusbw_GBps\twrong\n' >"$out/runs.tsv"

# The share of time some task waited for a CPU: how busy the machine was.
cpu_pressure() {
	if [[ -r /proc/pressure/cpu ]]; then
		echo "cpu pressure at $1: $(head -1 /proc/pressure/cpu)"
	fi
}

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "command: ${cmdline% }"
	echo "options: rounds=$rounds procs=$procs peers=$peers quick=$quick timeout=${run_timeout}s"
	printf 'band: %s\n' "${bands[@]}"
	echo "nproc: $(nproc)"
	echo "cpu: $cpu_model"
	echo "kernel: $(uname -sr)"
	echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	cpu_pressure start
	if has_peer gocomms; then
		go version
		# The tree may hold uncommitted changes: the binary's hash names
		# what was measured, the commit only what it started from.
		echo "commnode: sha256 $(sha256sum "$tmp/commnode" | cut -c1-16), tree at commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	fi
	if has_peer mpi; then
		mpirun --allow-run-as-root --version 2>/dev/null | head -1
	fi
	if has_peer gloo; then
		dpkg-query -W -f='gloo: ${Package} ${Version}\n' libgloo-dev 2>/dev/null || echo "gloo: (version unknown)"
	fi
	if has_peer torch; then
		/usr/bin/python3 -c 'import sys, torch; print("torch", torch.__version__, "python", sys.version.split()[0])'
	fi
} >"$out/machine.txt"

# --- runs ---------------------------------------------------------------------

# bounded LOG CMD...: runs CMD under the per-run timeout, output to LOG.
bounded() {
	local logf=$1 rc=0
	shift
	timeout -k 10 "$run_timeout" "$@" >>"$logf" 2>&1 &
	children=($!)
	wait "${children[0]}" || rc=$?
	children=()
	return "$rc"
}

free_port() {
	"$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_peer PEER P LOG MINB MAXB FACTOR ITERS WARMUP
run_peer() {
	local peer=$1 p=$2 logf=$3
	shift 3
	case $peer in
	gocomms)
		# `commnode` after -- names the launcher's own binary.
		bounded "$logf" "$tmp/commnode" launch -n "$p" -- commnode bench \
			-b "$1" -e "$2" -f "$3" -n "$4" -w "$5" -timeout "${op_timeout}s" --json
		;;
	mpi)
		# pml ob1 so that the btl choice holds (UCX, when present, would
		# bypass it); tcp,self: no shared memory between the ranks.
		bounded "$logf" mpirun --allow-run-as-root --oversubscribe \
			--mca pml ob1 --mca btl tcp,self -np "$p" "$tmp/mpi_allreduce" "$@"
		;;
	gloo)
		local store r pids=() rc=0
		store=$(mktemp -d "$tmp/gloo-store.XXXXXX")
		for ((r = 0; r < p; r++)); do
			RANK=$r WORLD_SIZE=$p GLOO_STORE=$store GLOO_TIMEOUT_MS=$((op_timeout * 1000)) \
				timeout -k 10 "$run_timeout" "$tmp/gloo_allreduce" "$@" >>"$logf" 2>&1 &
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
			"$here/peers/torch_allreduce.py" "$@"
		;;
	esac
}
# Per-operation bounds (no legitimate op here takes a second): a stalled op
# fails its run with a message well before timeout(1) kills it.
op_timeout=$((run_timeout / 5 + 1))
export TORCH_PEER_TIMEOUT_S=$op_timeout

total=$((${#proc_list[@]} * rounds * ${#bands[@]} * ${#peer_list[@]}))
log "peers: ${peer_list[*]}; processes: ${proc_list[*]}; rounds: $rounds; $total runs"
log "results: $out"
start=$SECONDS
done_runs=0
for p in "${proc_list[@]}"; do
	for ((rnd = 1; rnd <= rounds; rnd++)); do
		for band in "${bands[@]}"; do
			read -r bname minb maxb factor iters warmup <<<"$band"
			for peer in "${peer_list[@]}"; do
				logf=$out/logs/np${p}_r${rnd}_${bname}_${peer}.log
				: >"$logf"
				t0=$SECONDS
				rc=0
				run_peer "$peer" "$p" "$logf" "$minb" "$maxb" "$factor" "$iters" "$warmup" || rc=$?
				"$py" "$here/report.py" rows "$peer" "$p" "$rnd" "$bname" <"$logf" >>"$out/runs.tsv"
				done_runs=$((done_runs + 1))
				status=ok
				if ((rc == 124 || rc == 137)); then
					status="FAILED (exit $rc, timed out)"
				elif ((rc != 0)); then
					status="FAILED (exit $rc)"
				fi
				if ((rc != 0)); then
					echo "np=$p round=$rnd band=$bname peer=$peer: $status; log: logs/${logf##*/}" >>"$out/failures.txt"
				fi
				log "[$done_runs/$total] np=$p round $rnd/$rounds $bname $peer: $((SECONDS - t0))s $status"
			done
		done
	done
done

{
	echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
	cpu_pressure end
	echo "wall time: $((SECONDS - start))s"
} >>"$out/machine.txt"

{
	echo "## TCP all-reduce: gocomms, Open MPI, Gloo, torch.distributed"
	echo
	echo '```'
	cat "$out/machine.txt"
	echo '```'
	echo
	"$py" "$here/report.py" table "$out" $all_sizes
	if [[ -s $out/failures.txt ]]; then
		echo "**Failed runs** (their rows up to the failure are kept):"
		echo
		sed 's/^/- /' "$out/failures.txt"
	fi
} >"$out/summary.md"
cat "$out/summary.md"
log "done in $((SECONDS - start))s; summary: $out/summary.md, raw: $out/runs.tsv, logs: $out/logs/"
