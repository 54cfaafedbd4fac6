#!/usr/bin/env bash
# veth.sh: two ranks on two hosts made of network namespaces of this
# machine, joined by a veth pair: TCP over the kernel path a real NIC's
# traffic takes (two network stacks, a device between them), which
# loopback skips. Host a is a user, network and UTS namespace (vetha,
# 10.77.0.1), host b a network namespace inside it (vethb, 10.77.0.2);
# rank 0 runs on a, rank 1 on b, over TCP (GOCOMMS_SOCKET_IFNAME=veth).
# iperf3, where installed, measures one TCP stream between the hosts for
# scale.
#
# Usage: bench/veth.sh [--rounds N] [--commnode BIN] [-- commnode bench flags]
#
# The bench flags default to an all-reduce at 8 B, 64 KiB, 1 MiB and
# 64 MiB (and the powers of 4 between), each op waited for (-z) and then all issued at once. Needs
# unshare, nsenter and ip, and unprivileged user namespaces.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: bench/veth.sh [--rounds N] [--commnode BIN] [-- commnode bench flags]

  --rounds N      runs of each bench (default 3)
  --commnode BIN  the commnode to run (default: built from this tree)
  -h, --help      this help
EOF
}

rounds=3 bin="" tmp=""
while (($#)); do
	case $1 in
	--rounds) need_positive --rounds "${2-}" && rounds=$2 && shift ;;
	--commnode) bin=${2:?--commnode needs a path} && shift ;;
	-h | --help) usage && exit 0 ;;
	--) shift && break ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
	shift
done
for tool in unshare nsenter ip; do
	command -v "$tool" >/dev/null || die "no $tool"
done
make_tmp veth
if [[ -z $bin ]]; then
	build_commnode
	bin=$tmp/commnode
fi
benches=("--op all_reduce -z -b 8 -e 8 -n 2000 -w 100"
	"--op all_reduce -b 8 -e 8 -n 2000 -w 100"
	"--op all_reduce -z -b 64K -e 64M -f 4 -n 20 -w 3"
	"--op all_reduce -b 64K -e 64M -f 4 -n 20 -w 3")
if (($#)); then benches=("$*"); fi

# hosts SCRIPT runs SCRIPT on host a with the pair up; inb runs a command
# on host b.
hosts() {
	unshare --user --map-root-user --net --uts bash -c '
set -e
ip link set lo up
unshare --net --uts sleep 600 &
B=$!
trap "kill $B 2>/dev/null" EXIT
for i in $(seq 200); do
	[ "$(readlink /proc/$B/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
	sleep 0.01
done
ip link add vetha type veth peer name vethb netns $B
ip addr add 10.77.0.1/24 dev vetha
ip link set vetha up
inb() { nsenter -t $B -n -u "$@"; }
inb sh -c "ip link set lo up; ip addr add 10.77.0.2/24 dev vethb; ip link set vethb up"
'"$1"
}

if command -v iperf3 >/dev/null; then
	log "iperf3, one TCP stream from host b to host a"
	hosts 'iperf3 -s -1 -B 10.77.0.1 >/dev/null & S=$!; sleep 0.5
inb iperf3 -c 10.77.0.1 -t 3 | grep -E "sender|receiver"; wait $S'
fi
port=29600
for b in "${benches[@]}"; do
	for round in $(seq "$rounds"); do
		log "round $round: commnode bench $b"
		port=$((port + 1))
		# shellcheck disable=SC2016 # expanded on host a
		hosts '
run() { env RANK=$1 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=10.77.0.1 MASTER_PORT='"$port"' \
	GOCOMMS_SOCKET_IFNAME=veth GOCOMMS_TRANSPORT=tcp '"$bin"' bench '"$b"'; }
run 0 & A=$!
inb bash -c "$(declare -f run); run 1 >/dev/null"
wait $A'
	done
done
