#!/usr/bin/env bash
# calibrate.sh: the simulator against the real engine on this machine.
# Times all-reduce (float32, sum) with `commnode bench` between real
# processes over loopback TCP (or, with --transport shm, shared memory),
# simulates the same sizes with `commnode sim --topology loopback` (shm),
# and prints per rank count a table of size, measured and simulated time
# and the error, closed by the geometric mean of |error|. With --fit it
# first fits the topology to what it measured, writes it to
# simulation/topologies/, and simulates with the fit.
# docs/calibration.md explains the method and the fit.
#
# The machine may be shared: every rank count runs once per round, round
# after round, so that load falls on all of them alike, and the table
# reports medians over rounds with their spread. The simulator is
# deterministic and runs once per size.
#
# Usage: bench/calibrate.sh [--quick] [--rounds N] [--procs 2,4] [--out DIR]
# See --help.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: bench/calibrate.sh [options]

  --quick        one round, sizes 8 B, 4 KiB, 256 KiB, 4 MiB (a smoke test)
  --rounds N     rounds of measurement (default 5)
  --procs LIST   rank counts, comma-separated (default 2,4; the preset
                 was fitted at 2, 4 and 8, and misses 3 by far)
  --transport T  tcp (default) or shm: what the ranks talk over, and the
                 topology they are simulated on (loopback or shm)
  --fit          fit that topology to the measurements and write it to
                 simulation/topologies/TOPOLOGY.json (rebuild to use it)
  --out DIR      keep the raw output of every run there (default: discarded)
  -h, --help     this help

Sizes: 8 B and every power of 4 from 16 B to 64 MiB, in two bands:
  small  8 B .. 64 KiB     100 iterations, 100 warm-ups
  large  256 KiB .. 64 MiB  10 iterations, 10 warm-ups
EOF
}

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rounds=5
procs=2,4
out=
quick=0
transport=tcp
fit=0
while (($#)); do
	case $1 in
	--quick) quick=1 ;;
	--rounds) rounds=${2:?--rounds needs a value}; shift ;;
	--procs) procs=${2:?--procs needs a value}; shift ;;
	--out) out=${2:?--out needs a value}; shift ;;
	--transport) transport=${2:?--transport needs a value}; shift ;;
	--fit) fit=1 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
	shift
done
need_positive --rounds "$rounds"
case $transport in
tcp) topology=loopback ;;
shm) topology=shm ;;
*) usage >&2; die "--transport $transport: want tcp or shm" ;;
esac
parse_procs "$procs" "all-reduce over a network needs at least 2 ranks"

# Bands: "minb maxb factor iters warmup". An op takes hundreds of
# microseconds at small sizes, so they get many iterations; up to a few
# hundred milliseconds at 64 MiB, so those get few. A process's first
# operations run slower than the rest (16 B took half as long again after
# 10 warm-ups as after 300), so the small band warms up as long as it
# times: the simulator models the steady state. The large band warms up
# as long as it times too: over shared memory a slot's pages fault on its
# first payloads (256 KiB between 2 processes: 1.5 ms, then 0.2-0.5 ms
# for four more operations, then 53 µs).
if ((quick)); then
	rounds=1
	bands=("8 4096 512 100 100" "262144 4194304 16 10 10")
else
	bands=("8 65536 2 100 100" "262144 67108864 4 10 10")
fi

# --- build --------------------------------------------------------------------

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gocomms-calibrate.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
build_commnode
raw=${out:-$tmp/raw}
mkdir -p "$raw"

# The share of time some task waited for a CPU: how busy the machine was.
load() {
	local p=
	[[ -r /proc/pressure/cpu ]] && p=", cpu pressure $(head -1 /proc/pressure/cpu)"
	echo "load average $(cut -d' ' -f1-3 /proc/loadavg)$p"
}
echo "# all-reduce, float32, sum: commnode bench over $transport against commnode sim --topology $topology"
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs ($(cpu_model)), $(uname -sr)"
echo "# commnode $(build_id "$tmp/commnode")"
echo "# rounds $rounds, ranks $procs; at start: $(load)"

# --- measure ------------------------------------------------------------------

# measured.tsv: ranks, size, time (µs), one row per size per run.
: >"$raw/measured.tsv"
start=$SECONDS
for ((rnd = 1; rnd <= rounds; rnd++)); do
	for p in "${proc_list[@]}"; do
		for band in "${bands[@]}"; do
			read -r minb maxb factor iters warmup <<<"$band"
			logf=$raw/bench_np${p}_r${rnd}_${minb}.log
			# `commnode` after -- names the launcher's own binary. -z: the
			# time of one operation, as the simulator's; median_us, the
			# median op, as on a machine with nothing else on it.
			GOCOMMS_TRANSPORT=$transport "$tmp/commnode" launch -n "$p" -timeout 5m -- commnode bench -z \
				-b "$minb" -e "$maxb" -f "$factor" -n "$iters" -w "$warmup" --json >"$logf" 2>&1 ||
				die "np=$p round $rnd: commnode bench failed; its output: $logf$([[ -n $out ]] || echo ' (pass --out to keep it)')"
			sed -n 's/^\[rank 0\] {.*"size":\([0-9]*\),.*"median_us":\([0-9.e+-]*\),.*/\1\t\2/p' "$logf" |
				sed "s/^/$p\t/" >>"$raw/measured.tsv"
		done
		log "round $rnd/$rounds, $p ranks: done at $((SECONDS - start))s"
	done
done
echo "# at end of measurement: $(load), $((SECONDS - start))s"

# --- medians ------------------------------------------------------------------

# Medians over rounds (sorted, the middle one or the mean of the middle
# two); spread is (max - min) / median.
sort -k1,1n -k2,2n -k3,3g "$raw/measured.tsv" | awk -F'\t' '
	function flush() {
		if (n) print ranks "\t" size "\t" ((n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) "\t" v[1] "\t" v[n]
	}
	$1 != ranks || $2 != size { flush(); ranks = $1; size = $2; n = 0 }
	{ v[++n] = $3 }
	END { flush() }' >"$raw/medians.tsv"

# --- fit ----------------------------------------------------------------------

# The fit goes where the preset is read from, and the simulation below
# reads it from there: the binary built before holds the old one.
simtopo=$topology
if ((fit)); then
	simtopo=$root/simulation/topologies/$topology.json
	log "fitting $topology to $(wc -l <"$raw/medians.tsv") medians"
	(cd "$root" && go run ./bench/fit -in "$raw/medians.tsv" -name "$topology" -cores "$(nproc)" \
		-describe "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(cpu_model)), commnode bench over $transport, $rounds rounds, ranks $procs" \
		-out "$simtopo") || die "the fit failed"
	log "wrote $simtopo"
fi

# --- simulate -----------------------------------------------------------------

# Table rows: 8 B and the powers of 4 (nccl-tests' smallest size, and an
# even spread over the sweep); the small band measures the sizes between
# too, and they are dropped here.
shown() { (($1 == 8 || (($1 & ($1 - 1)) == 0 && ($1 & 0x5555555555555555) != 0))); }
: >"$raw/simulated.tsv"
for p in "${proc_list[@]}"; do
	for size in $(cut -f2 "$raw/measured.tsv" | sort -un); do
		shown "$size" || continue
		simf=$raw/sim_np${p}_${size}.json
		"$tmp/commnode" sim --ranks "$p" --topology "$simtopo" --op all_reduce --dtype float32 \
			--bytes "$size" --json >"$simf" 2>&1 || die "commnode sim failed at $p ranks, $size B; its output: $simf"
		t=$(sed -n 's/^ *"sim_time_us": \([0-9.e+-]*\),$/\1/p' "$simf")
		[[ -n $t ]] || die "no sim_time_us in the output of commnode sim at $p ranks, $size B"
		printf '%s\t%s\t%s\n' "$p" "$size" "$t" >>"$raw/simulated.tsv"
	done
done

# --- report -------------------------------------------------------------------

awk -F'\t' '
	function human(b) {
		if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
		if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
		return b " B"
	}
	function close_table() {
		if (!rows) return
		printf "\ngeometric mean of |error|, %d ranks: %.1f%% (largest %.1f%%) over %d sizes\n", ranks, exp(logsum / rows), worst, rows
	}
	FNR == NR { sim[$1 "\t" $2] = $3; next }
	!(($1 "\t" $2) in sim) { next }
	$1 != ranks {
		close_table()
		ranks = $1; rows = 0; logsum = 0; worst = 0
		printf "\n## %d ranks\n\n", ranks
		print "| size | measured µs | simulated µs | error % | spread % |"
		print "|---:|---:|---:|---:|---:|"
	}
	{
		m = $3; s = sim[$1 "\t" $2]; e = (s - m) / m * 100; a = (e < 0) ? -e : e
		printf "| %s | %.1f | %.1f | %+.1f | %.0f |\n", human($2), m, s, e, ($5 - $4) / m * 100
		rows++
		logsum += log(a > 0.01 ? a : 0.01) # an exact match would be log(0)
		if (a > worst) worst = a
	}
	END { close_table() }' "$raw/simulated.tsv" "$raw/medians.tsv"
echo
echo "# at end: $(load), $((SECONDS - start))s"
[[ -z $out ]] || log "raw runs in $out"
