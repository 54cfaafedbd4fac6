#!/usr/bin/env bash
# rma-peers.sh: one-sided communication between 2 processes of one host,
# the Open MPI figures gocomms' RMA windows are held against: put and get
# bandwidth at 8 B, 64 KiB, 1 MiB and 64 MiB (a flush after every put or
# get, and puts pipelined under one flush), and the round trip of an 8-byte
# fetch_and_op and compare_and_swap, over shared memory and over TCP.
# bench/peers/mpi_rma.c is the program; see its header for what each op
# times.
#
# Transports run one after the other, round after round (A B A B ...), so
# that the load of a shared machine falls on all of them alike. The tables
# report medians over rounds; the raw lines of every run go to the results
# dir.
#
# Usage: bench/rma-peers.sh [--quick] [--rounds N] [--transports LIST]
#                           [--out DIR] [--timeout S]
# See --help.
set -euo pipefail

all_transports=shm,shm-sm,tcp,tcp-ucx
default_transports=shm,shm-sm,tcp

usage() {
	cat <<EOF
usage: bench/rma-peers.sh [options]

  --quick            one round, fewer iterations (a smoke test, < 1 min)
  --rounds N         rounds of every transport (default 5)
  --transports LIST  comma-separated, from $all_transports
                     (default $default_transports)
  --out DIR          results dir (default
                     bench/results/rma-<date>T<time>[-quick])
  --timeout S        bound on each run in seconds (default 120); a run that
                     hangs is killed, noted, and the rest goes on
  -h, --help         this help

Transports (mpirun -np 2, pml ob1 throughout, so that the btl choice holds):
  shm      --mca btl self,vader: Open MPI's default one-sided component,
           which in Open MPI 4.1 is osc/rdma over btl vader (shared memory,
           CMA for single copies). Its MPI_Compare_and_swap crashes the
           target (a known Open MPI bug, open-mpi/ompi#11349); the run is
           kept, so that a fixed Open MPI shows its number.
  shm-sm   the same with --mca osc sm: the window is one shared segment
           that puts and gets copy into and out of directly; atomics take
           a spin lock in the segment (also what --mca btl tcp,self alone
           gets, see tcp)
  tcp      --mca btl tcp,self --mca osc pt2pt: puts, gets and atomics
           travel as messages over TCP loopback. btl tcp,self alone is not
           enough: the window then goes to osc/sm, in shared memory.
           osc/rdma refuses btl tcp (MPI_Win_allocate fails with
           MPI_ERR_WIN; btl_tcp_flags has put but neither get nor atomics
           in 4.1, and osc_rdma_btls=tcp does not change it). Debian disables
           osc/pt2pt in /etc/openmpi/openmpi-mca-params.conf
           (osc = ^ucx,pt2pt); naming it on the command line overrides that.
  tcp-ucx  --mca osc ucx with UCX_TLS=tcp,self: UCX's own TCP transport
           (not in the default set: 20-400 µs per 8-byte op in trials,
           slower than tcp throughout)
Each run prints the name Open MPI gives its window ("rdma window 3"),
which says which osc component served it; the summary lists them.
(--mca osc_base_verbose 100 in Open MPI 4.1.4 lists the components it
opens, not the one a window gets.)

Runs per transport and round (sizes in bytes; iterations, warm-ups):
  small  put, put_pipelined, get at 8 and 64 KiB; fetch_and_op
                                   ITERS_SMALL=1000 WARMUP_SMALL=100
  large  put, put_pipelined, get at 1 MiB and 64 MiB
                                   ITERS_LARGE=50 WARMUP_LARGE=5
         (64 MiB runs 16: mpi_rma moves at most VOLUME=1G per size and op)
  cas    compare_and_swap          ITERS_SMALL, WARMUP_SMALL
  --quick: 200/20, 10/2, VOLUME=256M (64 MiB runs 4)
All runs use one 64 MiB window (-W 64M) and check what they moved (-c).
The five variables above may be set in the environment.
EOF
}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rounds=5
transports=$default_transports
out=
quick=0
run_timeout=120
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--rounds) rounds=${2:?--rounds needs a value}; shift ;;
	--transports) transports=${2:?--transports needs a value}; shift ;;
	--out) out=${2:?--out needs a value}; shift ;;
	--timeout) run_timeout=${2:?--timeout needs a value}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
	shift
done
need_positive --rounds "$rounds"
need_positive --timeout "$run_timeout"
IFS=, read -ra transport_list <<<"$transports"
((${#transport_list[@]})) || die "--transports: nothing to run"
for t in "${transport_list[@]}"; do
	[[ ,$all_transports, == *,$t,* ]] || die "unknown transport '$t' (from $all_transports)"
done

rma_sweep

# mca_args TRANSPORT: mpirun's arguments for TRANSPORT, one a line.
mca_args() {
	case $1 in
	shm) printf '%s\n' --mca pml ob1 --mca btl self,vader ;;
	shm-sm) printf '%s\n' --mca pml ob1 --mca btl self,vader --mca osc sm ;;
	tcp) printf '%s\n' --mca pml ob1 --mca btl tcp,self --mca osc pt2pt ;;
	tcp-ucx) printf '%s\n' --mca pml ob1 --mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self ;;
	esac
}

# --- Open MPI: install it if missing, build the peer -------------------------

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	apt_install '' openmpi-bin libopenmpi-dev
fi

make_tmp rma

mpicc -O2 -Wall -o "$tmp/mpi_rma" "$here/peers/mpi_rma.c" || die "building bench/peers/mpi_rma.c failed"

# --- results dir and machine ------------------------------------------------

default_out rma-
mkdir -p "$out/logs"
: >"$out/failures.txt"
printf '# transport\tround\top\tsize_bytes\titers\ttime_us\tGBps\twrong\n' >"$out/runs.tsv"
printf '# transport\tround\tband\twindow_name\n' >"$out/windows.tsv"

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "command: ${cmdline% }"
	echo "options: rounds=$rounds transports=$transports quick=$quick timeout=${run_timeout}s window=$window volume=$volume"
	printf 'band: %s\n' "${bands[@]}"
	echo "nproc: $(nproc)"
	echo "cpu: $(cpu_model)"
	echo "kernel: $(uname -sr)"
	echo "load at start: $(uptime)"
	echo "mpi_rma: $(build_id "$tmp/mpi_rma")"
	mpirun --allow-run-as-root --version 2>/dev/null | head -1
	echo "osc components (ompi_info):$(ompi_info 2>/dev/null | sed -n 's/^ *MCA osc: \([a-z0-9_]*\) .*/ \1/p' | tr -d '\n')"
	for conf in /etc/openmpi/openmpi-mca-params.conf "${HOME:-/root}/.openmpi/mca-params.conf"; do
		if [[ -r $conf ]]; then
			grep -E '^[[:space:]]*(osc|btl|pml)[[:space:]]*=' "$conf" | sed "s|^|$conf: |" || true
		fi
	done
	env | grep -E '^(OMPI_MCA_|UCX_)' | sort | sed 's/^/environment: /' || true
} >"$out/machine.txt"

# --- runs ---------------------------------------------------------------------

total=$((rounds * ${#transport_list[@]} * ${#bands[@]}))
log "transports: ${transport_list[*]}; rounds: $rounds; $total runs"
log "results: $out"
start=$SECONDS
done_runs=0
for ((rnd = 1; rnd <= rounds; rnd++)); do
	for t in "${transport_list[@]}"; do
		mapfile -t args < <(mca_args "$t")
		for band in "${bands[@]}"; do
			read -r bname ops minb maxb factor iters warmup <<<"$band"
			logf=$out/logs/r${rnd}_${t}_${bname}.log
			: >"$logf"
			t0=$SECONDS
			rc=0
			bounded "$logf" mpirun --allow-run-as-root --oversubscribe "${args[@]}" -np 2 \
				"$tmp/mpi_rma" --op "$ops" -b "$minb" -e "$maxb" -f "$factor" -n "$iters" -w "$warmup" \
				-V "$volume" -W "$window" -c || rc=$?
			# Result lines start with an op's name; Open MPI's own lines
			# start with '[' or '-'.
			rma_rows "$t" "$rnd" <"$logf" >>"$out/runs.tsv"
			name=$(sed -n 's/^# window name: //p' "$logf" | head -1)
			printf '%s\t%s\t%s\t%s\n' "$t" "$rnd" "$bname" "${name:-?}" >>"$out/windows.tsv"
			done_runs=$((done_runs + 1))
			status=$(run_status "$rc")
			if ((rc != 0)); then
				why=$(grep -m1 -E 'Signal: |MPI_ERR|^mpi_rma: ' "$logf" | sed 's/^\[[^]]*\] //' || true)
				echo "round=$rnd transport=$t band=$bname: $status${why:+: $why}; log: logs/${logf##*/}" >>"$out/failures.txt"
			fi
			elapsed=$((SECONDS - start))
			log "[$done_runs/$total] round $rnd/$rounds $t $bname: $((SECONDS - t0))s $status (${elapsed}s in)"
		done
	done
done
{
	echo "load at end: $(uptime)"
	echo "wall time: $((SECONDS - start))s"
} >>"$out/machine.txt"

# --- tables -------------------------------------------------------------------

# dur US: a time in µs, or in ms from 1000 µs up.
dur() {
	awk -v x="$1" 'BEGIN { if (x >= 1000) print "ms", x / 1000; else print "µs", x }' | {
		read -r unit v
		echo "$(num "$v") $unit"
	}
}

# spread PCT COUNT: " ±PCT%" when more than one round.
spread() { if (($2 > 1)); then printf ' ±%s%%' "$1"; fi; }

# failed_in TRANSPORT BAND: how many runs of BAND failed on TRANSPORT.
failed_in() { grep -c "transport=$1 band=$2:" "$out/failures.txt" || true; }

# osc_of TRANSPORT: the window names its runs reported, and the component
# they stand for.
osc_of() {
	local names
	names=$(awk -F'\t' -v t="$1" '$1 == t && $4 != "?" {print $4}' "$out/windows.tsv" | sort -u | paste -sd/ -)
	case $names in
	'') echo "osc unknown (no run got so far)" ;;
	'(none)') echo "osc/sm (windows unnamed: the one component here that names none)" ;;
	*) echo "osc/${names%% *} (window name \"$names\")" ;;
	esac
}

label() {
	case $1 in
	shm) echo "shm (default osc)" ;;
	shm-sm) echo "shm, --mca osc sm" ;;
	tcp) echo "tcp, --mca osc pt2pt" ;;
	tcp-ucx) echo "tcp, osc ucx, UCX_TLS=tcp,self" ;;
	esac
}

{
	echo "## One-sided MPI between 2 processes of one host: ${transports//,/, }"
	echo
	echo '```'
	cat "$out/machine.txt"
	echo '```'
	echo
	echo "Which component served each transport's windows:"
	echo
	for t in "${transport_list[@]}"; do
		echo "- $t: $(osc_of "$t"); mpirun $(mca_args "$t" | paste -sd' ' -)"
	done
	echo
	echo "Put and get: GB/s (time per op), median of $rounds round(s)$( ((rounds > 1)) && echo '; ± is half the range over rounds, as a share of the median')."
	echo "put and get flush after every op (remote completion each time); put_pipelined flushes once after all of a size's puts."
	echo
	echo "| transport | op | 8 B | 64 KiB | 1 MiB | 64 MiB |"
	echo "|---|---|---|---|---|---|"
	for t in "${transport_list[@]}"; do
		first=$(label "$t")
		for op in put put_pipelined get; do
			row="| $first | $op |"
			for size in 8 65536 1048576 67108864; do
				read -r bw bw_pct n < <(median_of "$t" "$op" "$size" 7)
				read -r us _ _ < <(median_of "$t" "$op" "$size" 6)
				if ((n == 0)); then
					row+=" — |"
				else
					row+=" $(num "$bw") GB/s ($(dur "$us"))$(spread "$bw_pct" "$n") |"
				fi
			done
			echo "$row"
			first=
		done
	done
	echo
	echo "8-byte atomics (uint64): µs per op, each a round trip completed by MPI_Win_flush, median of $rounds round(s)."
	echo
	echo "| transport | fetch_and_op (MPI_SUM) | compare_and_swap |"
	echo "|---|---|---|"
	for t in "${transport_list[@]}"; do
		row="| $(label "$t") |"
		for pair in fetch_and_op:small compare_and_swap:cas; do
			read -r us pct n < <(median_of "$t" "${pair%%:*}" 8 6)
			failed=$(failed_in "$t" "${pair#*:}")
			if ((n > 0)); then
				row+=" $(dur "$us")$(spread "$pct" "$n")"
				((failed == 0)) || row+=" ($failed of $rounds runs failed)"
				row+=" |"
			elif ((failed > 0)); then
				row+=" failed in $failed of $rounds runs |"
			else
				row+=" — |"
			fi
		done
		echo "$row"
	done
	echo
	echo "Checks (-c: bytes put and got, values fetched, the words left at the target): $(checked_lines)."
	failed_runs lines gap
} >"$out/summary.md"
cat "$out/summary.md"
log "done in $((SECONDS - start))s; summary: $out/summary.md, raw: $out/runs.tsv, logs: $out/logs/"
