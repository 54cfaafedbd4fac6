# shellcheck shell=bash
# lib.sh: what the scripts of bench/ share. A script sources it right after
# `set -euo pipefail`, before it reads its arguments:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# It sets prog (the script's name), here (bench/), root (the tree above
# it) and cmdline (the script's command line, quoted), and defines the
# helpers below. Some of them read the script's globals: tmp, out, quick,
# run_timeout, children.

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# Sourced without arguments, this file sees the script's own.
cmdline="bench/$prog${*:+ $(printf '%q ' "$@")}"

log() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# need_positive FLAG VALUE: dies unless VALUE is a positive integer.
need_positive() {
	[[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"
}

# parse_procs LIST WHY: proc_list from --procs' LIST; dies, saying WHY,
# where a count is below 2.
parse_procs() {
	local n
	[[ $1 =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--procs must be like 2,4, not '$1'"
	IFS=, read -ra proc_list <<<"$1"
	for n in "${proc_list[@]}"; do
		((n >= 2)) || die "--procs: $2"
	done
}

# apt_install HINT PKG...: installs the packages with apt-get, as root or
# through sudo; dies, adding HINT, when that fails.
apt_install() {
	local hint=$1 sudo=()
	shift
	((EUID == 0)) || sudo=(sudo)
	log "installing $* (apt-get)"
	# A fresh machine may have stale package lists: update once and retry.
	if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null; then
		"${sudo[@]}" apt-get update >/dev/null || true
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null ||
			die "apt-get install $* failed$hint"
	fi
}

# make_tmp NAME: tmp, a directory removed at exit, and the traps that stop
# the running job (children) on Ctrl-C or SIGTERM.
make_tmp() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/gocomms-$1.XXXXXX")
	children=()
	trap cleanup EXIT
	trap on_signal INT TERM
}
cleanup() { rm -rf "$tmp"; }
# Ranks started under timeout(1) run in their own process groups, out of
# reach of a terminal's Ctrl-C; stop them by hand.
on_signal() {
	log "interrupted; stopping the running job"
	((${#children[@]})) && kill -TERM "${children[@]}" 2>/dev/null
	wait || true
	exit 130
}

# build_commnode: $tmp/commnode, built from the tree.
build_commnode() {
	if ! command -v go >/dev/null && [[ -x /usr/local/go/bin/go ]]; then
		PATH=$PATH:/usr/local/go/bin
	fi
	command -v go >/dev/null || die "go not found: it is needed to build commnode"
	log "building commnode from $root"
	(cd "$root" && go build -o "$tmp/commnode" ./cmd/commnode) || die "commnode does not build from the tree"
}

# default_out PREFIX: out, unless given, is results/PREFIX<date>T<time>,
# with -quick after it under --quick.
default_out() {
	if [[ -z $out ]]; then
		out=$here/results/$1$(date +%Y-%m-%dT%H%M%S)
		if ((quick)); then out+=-quick; fi
	fi
}

cpu_model() { sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1; }

# build_id FILE: what FILE was built from. The tree may hold uncommitted
# changes: the binary's hash names what was measured, the commit only what
# it started from.
build_id() {
	echo "sha256 $(sha256sum "$1" | cut -c1-16), tree at commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
}

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

# run_status RC: what a run's exit status says.
run_status() {
	if (($1 == 124 || $1 == 137)); then
		echo "FAILED (exit $1, timed out)"
	elif (($1 != 0)); then
		echo "FAILED (exit $1)"
	else
		echo ok
	fi
}

# failed_runs WHAT [GAP]: the failures, under a heading, when there are
# any; a blank line before them when GAP is given.
failed_runs() {
	[[ -s $out/failures.txt ]] || return 0
	if [[ -n ${2:-} ]]; then echo; fi
	echo "**Failed runs** (their $1 up to the failure are kept):"
	echo
	sed 's/^/- /' "$out/failures.txt"
}

# --- the RMA scripts: rma-peers.sh and rma-compare.sh ---------------------

# rma_sweep: the iteration counts, volume and bands both RMA scripts run,
# from ITERS_SMALL, WARMUP_SMALL, ITERS_LARGE, WARMUP_LARGE and VOLUME in
# the environment, and quick. Bands: "name ops minb maxb factor iters
# warmup". The table sizes 8 B and 64 KiB, 1 MiB and 64 MiB come in pairs
# a factor apart.
rma_sweep() {
	local v
	iters_small=${ITERS_SMALL:-1000} warmup_small=${WARMUP_SMALL:-100}
	iters_large=${ITERS_LARGE:-50} warmup_large=${WARMUP_LARGE:-5}
	volume=${VOLUME:-1G}
	if ((quick)); then
		rounds=1
		iters_small=${ITERS_SMALL:-200} warmup_small=${WARMUP_SMALL:-20}
		iters_large=${ITERS_LARGE:-10} warmup_large=${WARMUP_LARGE:-2}
		volume=${VOLUME:-256M}
	fi
	for v in "$iters_small" "$iters_large"; do
		[[ $v =~ ^[1-9][0-9]*$ ]] || die "ITERS_* must be positive integers"
	done
	for v in "$warmup_small" "$warmup_large"; do
		[[ $v =~ ^[0-9]+$ ]] || die "WARMUP_* must be integers >= 0"
	done
	[[ $volume =~ ^[0-9]+[KMG]?$ ]] || die "VOLUME must be bytes with an optional K, M or G, not '$volume'"
	bands=("small put,put_pipelined,get,fetch_and_op 8 65536 8192 $iters_small $warmup_small"
		"large put,put_pipelined,get 1048576 67108864 64 $iters_large $warmup_large"
		"cas compare_and_swap 8 8 2 $iters_small $warmup_small")
	window=64M
}

# rma_rows NAME ROUND: runs.tsv's rows from the result lines on stdin
# (op size_bytes iters time_us GBps wrong), under NAME and ROUND.
rma_rows() {
	awk -v t="$1" -v r="$2" -v OFS='\t' \
		'$1 ~ /^(put|put_pipelined|get|fetch_and_op|compare_and_swap)$/ && NF == 6 {print t, r, $1, $2, $3, $4, $5, $6}'
}

# median_of NAME OP SIZE COL: "median halfrange_pct count" of column COL
# (6: time_us, 7: GBps) of runs.tsv's rows for NAME, OP and SIZE; "- - 0"
# when there are none.
median_of() {
	awk -F'\t' -v t="$1" -v o="$2" -v s="$3" -v c="$4" '$1 == t && $3 == o && $4 == s {print $c}' "$out/runs.tsv" |
		sort -g |
		awk '{v[NR] = $1}
			END {
				if (NR == 0) { print "- - 0"; exit }
				m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
				printf "%.6g %.0f %d\n", m, (m > 0 ? 50 * (v[NR] - v[1]) / m : 0), NR
			}'
}

# num X: X with three significant digits, no exponent down to 0.0001.
num() {
	awk -v x="$1" 'BEGIN {
		if (x >= 100) printf "%.0f", x; else if (x >= 10) printf "%.1f", x
		else if (x >= 1) printf "%.2f", x; else if (x >= 0.001) printf "%.3g", x
		else printf "%.2g", x }'
}

# checked_lines: "W wrong in N checked lines" over runs.tsv.
checked_lines() {
	awk -F'\t' '!/^#/ && $8 != "-" {s += $8; n++} END {printf "%d wrong in %d checked lines", s, n}' "$out/runs.tsv"
}
