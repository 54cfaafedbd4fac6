#!/usr/bin/env bash
# rma-compare.sh: one-sided communication between 2 processes of one host,
# side by side: gocomms' RMA windows over shared memory and over TCP
# loopback (commnode rma), against Open MPI's one-sided MPI over shared
# memory (its default osc/rdma, and osc/sm) and over TCP (osc/pt2pt), as
# bench/rma-peers.sh runs it. The table gives put, put_pipelined and get in
# GB/s at 8 B, 64 KiB, 1 MiB and 64 MiB, and the round trip of an 8-byte
# fetch_and_op and compare_and_swap, with the ratio of gocomms to each peer.
#
# Both sides print the same lines (op size_bytes iters time_us GBps wrong)
# from the same sweeps, iteration counts and checks. Implementations run
# one after the other, round after round (A B C D E A B C D E ...), so that
# the load of a shared machine falls on all of them alike; the table gives
# medians over rounds.
#
# Usage: bench/rma-compare.sh [--quick] [--rounds N] [--out DIR] [--timeout S]
# See --help.
set -euo pipefail

usage() {
	cat <<EOF
usage: bench/rma-compare.sh [options]

  --quick      one round, fewer iterations (a smoke test, < 1 min)
  --rounds N   rounds of every implementation (default 5; < 5 min on 2 cores)
  --out DIR    results dir (default bench/results/rma-compare-<date>T<time>[-quick])
  --timeout S  bound on each run in seconds (default 120); a run that hangs
               is killed, noted, and the rest goes on
  -h, --help   this help

Implementations, 2 processes each:
  gocomms-shm  commnode launch -n 2 -- commnode rma ..., GOCOMMS_TRANSPORT=shm
  gocomms-tcp  the same with GOCOMMS_TRANSPORT=tcp (TCP on loopback)
  mpi-shm      bench/peers/mpi_rma.c under mpirun, btl self,vader: Open MPI's
               default one-sided component, osc/rdma (its compare_and_swap
               crashes the target, open-mpi/ompi#11349: that cell says so)
  mpi-shm-sm   the same with --mca osc sm
  mpi-tcp      btl tcp,self with --mca osc pt2pt
The MPI side is bench/rma-peers.sh, called once a round for its transports
shm, shm-sm and tcp (see its --help for the mca flags and why).

In both, rank 0 issues every op on rank 1's window: put is a put and a
flush (complete at the target), put_pipelined ITERS puts and one flush, get
a get (MPI: and a flush), the atomics one uint64 (gocomms: int64) each with
its round trip. Runs per implementation and round (sizes in bytes):
  small  put, put_pipelined, get at 8 and 64 KiB; fetch_and_op
                                   ITERS_SMALL=1000 WARMUP_SMALL=100
  large  put, put_pipelined, get at 1 MiB and 64 MiB
                                   ITERS_LARGE=50 WARMUP_LARGE=5
         (64 MiB runs 16: at most VOLUME=1G is moved per size and op)
  cas    compare_and_swap          ITERS_SMALL, WARMUP_SMALL
  --quick: 200/20, 10/2, VOLUME=256M (64 MiB runs 4)
Every run uses a 64 MiB window and checks what it moved. The five
variables may be set in the environment.
EOF
}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rounds=5
out=
quick=0
run_timeout=120
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--rounds) rounds=${2:?--rounds needs a value}; shift ;;
	--out) out=${2:?--out needs a value}; shift ;;
	--timeout) run_timeout=${2:?--timeout needs a value}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
	shift
done
need_positive --rounds "$rounds"
need_positive --timeout "$run_timeout"

rma_sweep
# rma-peers.sh reads the same five; it must run what gocomms runs.
export ITERS_SMALL=$iters_small WARMUP_SMALL=$warmup_small
export ITERS_LARGE=$iters_large WARMUP_LARGE=$warmup_large VOLUME=$volume

impls=(gocomms-shm gocomms-tcp mpi-shm mpi-shm-sm mpi-tcp)
mpi_transports=shm,shm-sm,tcp
# Per-operation bound inside a gocomms run: a stalled op fails its run with
# a message well before timeout(1) kills it.
op_timeout=$((run_timeout / 5 + 1))

# --- build --------------------------------------------------------------------

make_tmp rma-compare
build_commnode

# --- results dir and machine --------------------------------------------------

default_out rma-compare-
mkdir -p "$out/logs" "$out/mpi"
: >"$out/failures.txt"
printf '# impl\tround\top\tsize_bytes\titers\ttime_us\tGBps\twrong\n' >"$out/runs.tsv"
: >"$out/windows.tsv"

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "command: ${cmdline% }"
	echo "options: rounds=$rounds quick=$quick timeout=${run_timeout}s window=$window volume=$volume"
	printf 'band: %s\n' "${bands[@]}"
	echo "nproc: $(nproc)"
	echo "cpu: $(cpu_model)"
	echo "kernel: $(uname -sr)"
	echo "load at start: $(uptime)"
	go version
	echo "commnode: $(build_id "$tmp/commnode")"
	env | grep '^GOCOMMS_' | grep -v '^GOCOMMS_TRANSPORT=' | sort | sed 's/^/environment: /' || true
	mpirun --allow-run-as-root --version 2>/dev/null | head -1 || echo "mpirun: not installed (rma-peers.sh installs it)"
} >"$out/machine.txt"

# --- runs -----------------------------------------------------------------------

# run_gocomms TRANSPORT ROUND: every band over GOCOMMS_TRANSPORT=TRANSPORT.
run_gocomms() {
	local tr=$1 rnd=$2 impl=gocomms-$1 band bname ops minb maxb factor iters warmup logf rc t0
	for band in "${bands[@]}"; do
		read -r bname ops minb maxb factor iters warmup <<<"$band"
		logf=$out/logs/r${rnd}_${impl}_${bname}.log
		: >"$logf"
		t0=$SECONDS
		rc=0
		# `commnode` after -- names the launcher's own binary.
		bounded "$logf" env GOCOMMS_TRANSPORT="$tr" "$tmp/commnode" launch -n 2 -- commnode rma \
			--op "$ops" -b "$minb" -e "$maxb" -f "$factor" -n "$iters" -w "$warmup" \
			-V "$volume" -W "$window" -c 1 -timeout "${op_timeout}s" || rc=$?
		# The launcher puts "[rank 0] " before rank 0's lines.
		sed -n 's/^\[rank 0\] //p' "$logf" | rma_rows "$impl" "$rnd" >>"$out/runs.tsv"
		if ((rc != 0)); then
			why=$(grep -m1 -E 'commnode (rma|launch): ' "$logf" | sed 's/^\[[^]]*\] //' || true)
			echo "round=$rnd impl=$impl band=$bname: $(run_status "$rc")${why:+: $why}; log: logs/${logf##*/}" >>"$out/failures.txt"
		fi
		done_runs=$((done_runs + 1))
		log "[$done_runs/$total] round $rnd/$rounds $impl $bname: $((SECONDS - t0))s $(run_status "$rc") ($((SECONDS - start))s in)"
	done
}

# run_mpi ROUND: rma-peers.sh's transports for one round; its lines join
# runs.tsv under this script's names and round.
run_mpi() {
	local rnd=$1 dir=$out/mpi/round-$1 logf=$out/logs/r$1_mpi.log rc=0 t0=$SECONDS
	: >"$logf"
	bounded "$logf" "$here/rma-peers.sh" --rounds 1 --transports "$mpi_transports" --out "$dir" \
		--timeout "$run_timeout" || rc=$?
	if [[ -f $dir/runs.tsv ]]; then
		awk -F'\t' -v r="$rnd" -v OFS='\t' '!/^#/ {$1 = "mpi-" $1; $2 = r; print}' "$dir/runs.tsv" >>"$out/runs.tsv"
		awk -F'\t' -v OFS='\t' '!/^#/ {print "mpi-" $1, $4}' "$dir/windows.tsv" >>"$out/windows.tsv"
	fi
	if [[ -s $dir/failures.txt ]]; then
		sed -e "s/^round=1 transport=\([a-z-]*\)/round=$rnd impl=mpi-\1/" -e "s|log: logs/|log: mpi/round-$rnd/logs/|" \
			"$dir/failures.txt" >>"$out/failures.txt"
	fi
	if ((rc != 0)) && ! [[ -f $dir/runs.tsv ]]; then
		echo "round=$rnd impl=mpi-*: rma-peers.sh $(run_status "$rc"); log: logs/${logf##*/}" >>"$out/failures.txt"
	fi
	done_runs=$((done_runs + 3 * ${#bands[@]}))
	log "[$done_runs/$total] round $rnd/$rounds mpi-shm, mpi-shm-sm, mpi-tcp (rma-peers.sh): $((SECONDS - t0))s $(run_status "$rc") ($((SECONDS - start))s in)"
}

total=$((rounds * ${#impls[@]} * ${#bands[@]}))
log "implementations: ${impls[*]}; rounds: $rounds; $total runs"
log "results: $out"
start=$SECONDS
done_runs=0
for ((rnd = 1; rnd <= rounds; rnd++)); do
	run_gocomms shm "$rnd"
	run_gocomms tcp "$rnd"
	run_mpi "$rnd"
done
{
	echo "load at end: $(uptime)"
	echo "wall time: $((SECONDS - start))s"
} >>"$out/machine.txt"

# --- table --------------------------------------------------------------------

# failed_in IMPL BAND: how many runs of BAND failed for IMPL.
failed_in() { grep -c "impl=$1 band=$2:" "$out/failures.txt" || true; }

# cell IMPL OP SIZE COL BAND: the median, ± half the range over rounds, or
# why there is none.
cell() {
	local m pct n failed
	read -r m pct n < <(median_of "$1" "$2" "$3" "$4")
	failed=$(failed_in "$1" "$5")
	if ((n == 0)); then
		if ((failed > 0)); then echo "failed ($failed/$rounds)"; else echo "—"; fi
		return
	fi
	printf '%s' "$(num "$m")"
	if ((n > 1)); then printf ' ±%s%%' "$pct"; fi
	if ((failed > 0)); then printf ' (%s/%s failed)' "$failed" "$rounds"; fi
	echo
}

# ratio IMPL PEER OP SIZE COL: gocomms' median over the peer's.
ratio() {
	local g p
	read -r g _ _ < <(median_of "$1" "$3" "$4" "$5")
	read -r p _ _ < <(median_of "$2" "$3" "$4" "$5")
	if [[ $g == - || $p == - ]]; then
		echo "—"
		return
	fi
	awk -v g="$g" -v p="$p" 'BEGIN { if (p > 0) printf "%.3g\n", g / p; else print "—" }'
}

# osc_of IMPL: the component rma-peers.sh's windows reported.
osc_of() {
	local names
	names=$(awk -F'\t' -v t="$1" '$1 == t && $2 != "?" {print $2}' "$out/windows.tsv" | sort -u | paste -sd/ -)
	case $names in
	'') echo "unknown" ;;
	'(none)') echo "osc/sm (windows unnamed)" ;;
	*) echo "osc/${names%% *} (\"$names\")" ;;
	esac
}

human() {
	case $1 in
	8) echo "8 B" ;;
	65536) echo "64 KiB" ;;
	1048576) echo "1 MiB" ;;
	67108864) echo "64 MiB" ;;
	*) echo "$1 B" ;;
	esac
}

band_of() {
	case $1:$2 in
	compare_and_swap:*) echo cas ;;
	*:8 | *:65536) echo small ;;
	*) echo large ;;
	esac
}

# row OP SIZE COL: one table row, COL 7 (GB/s) or 6 (µs).
row() {
	local op=$1 size=$2 col=$3 b
	b=$(band_of "$op" "$size")
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$op" "$(human "$size")" \
		"$(cell gocomms-shm "$op" "$size" "$col" "$b")" \
		"$(cell mpi-shm "$op" "$size" "$col" "$b")" "$(ratio gocomms-shm mpi-shm "$op" "$size" "$col")" \
		"$(cell mpi-shm-sm "$op" "$size" "$col" "$b")" "$(ratio gocomms-shm mpi-shm-sm "$op" "$size" "$col")" \
		"$(cell gocomms-tcp "$op" "$size" "$col" "$b")" \
		"$(cell mpi-tcp "$op" "$size" "$col" "$b")" "$(ratio gocomms-tcp mpi-tcp "$op" "$size" "$col")"
}

{
	echo "## One-sided communication between 2 processes of one host: gocomms and Open MPI"
	echo
	echo '```'
	cat "$out/machine.txt"
	echo '```'
	echo
	echo "Medians of $rounds round(s)$( ((rounds > 1)) && echo '; ± is half the range over rounds, as a share of the median'). g/p is gocomms' median over the peer's to its left: gocomms shm against each MPI shm, gocomms tcp against MPI tcp."
	echo "Open MPI's windows: mpi-shm $(osc_of mpi-shm), mpi-shm-sm $(osc_of mpi-shm-sm), mpi-tcp $(osc_of mpi-tcp)."
	echo
	echo "Put and get, GB/s (g/p above 1: gocomms moves more). put flushes after each op, put_pipelined once after all; get completes each op."
	echo
	echo "| op | size | gocomms shm | MPI shm, osc/rdma | g/p | MPI shm, osc/sm | g/p | gocomms tcp | MPI tcp, osc/pt2pt | g/p |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for op in put put_pipelined get; do
		for size in 8 65536 1048576 67108864; do
			row "$op" "$size" 7
		done
	done
	echo
	echo "8-byte atomics, µs per op, each a round trip (g/p above 1: gocomms takes longer)."
	echo
	echo "| op | size | gocomms shm | MPI shm, osc/rdma | g/p | MPI shm, osc/sm | g/p | gocomms tcp | MPI tcp, osc/pt2pt | g/p |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for op in fetch_and_op compare_and_swap; do
		row "$op" 8 6
	done
	echo
	echo "Checks (bytes put and got, values fetched, the words left at the target): $(checked_lines)."
	failed_runs lines gap
} >"$out/summary.md"
cat "$out/summary.md"
log "done in $((SECONDS - start))s; summary: $out/summary.md, raw: $out/runs.tsv, logs: $out/logs/ and $out/mpi/"
