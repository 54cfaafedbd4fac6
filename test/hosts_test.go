//go:build linux

package test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// twoHosts makes two hosts of this machine and runs a job of four ranks
// on them, two each. Host a is a user, network and UTS namespace; host b
// is a network and UTS namespace inside it. A veth pair joins them,
// vetha 10.77.0.1 and vethb 10.77.0.2. Host a also has a decoy veth pair,
// made first so that it is the first interface that is not loopback:
// without GOCOMMS_SOCKET_IFNAME a rank would advertise its address, which
// host b cannot reach. Each host's ranks reach each other through shared
// memory (nvl names a host by its boot id and network namespace) and the
// other host's over TCP. The script prints what commnode info says on
// each host, then each rank's output after a line "== rank R exit S".
const twoHosts = `
set -e
hostname hosta
ip link set lo up
unshare --net --uts sleep 120 &
B=$!
trap 'kill $B 2>/dev/null' EXIT
for i in $(seq 200); do
	[ "$(readlink /proc/$B/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
	sleep 0.01
done
ip link add decoy0 type veth peer name decoy1
ip addr add 10.99.0.1/24 dev decoy0
ip link set decoy0 up
ip link set decoy1 up
ip link add vetha type veth peer name vethb netns $B
ip addr add 10.77.0.1/24 dev vetha
ip link set vetha up
inb() { nsenter -t $B -n -u "$@"; }
inb sh -c 'hostname hostb; ip link set lo up; ip addr add 10.77.0.2/24 dev vethb; ip link set vethb up'
echo "a default: $($COMMNODE info | grep 'tcp address')"
echo "a ifname: $(GOCOMMS_SOCKET_IFNAME=veth $COMMNODE info | grep 'tcp address')"
echo "b ifname: $(inb env GOCOMMS_SOCKET_IFNAME=veth $COMMNODE info | grep 'tcp address')"
set +e
job() {
	port=$1
	shift
	for r in 0 1 2 3; do
		run=""
		[ $r -ge 2 ] && run=inb
		$run env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) LOCAL_WORLD_SIZE=2 \
			MASTER_ADDR=10.77.0.1 MASTER_PORT=$port GOCOMMS_SOCKET_IFNAME=veth \
			$COMMNODE "$@" >$OUT/$r.out 2>&1 &
		eval "p$r=\$!"
	done
	fail=0
	for r in 0 1 2 3; do
		eval "wait \$p$r"
		s=$?
		[ $s -ne 0 ] && fail=1
		echo "== rank $r exit $s"
		cat $OUT/$r.out
	done
	return $fail
}
`

// TestTwoHostsOnOneMachine runs verify and the hierarchical all-reduce on
// four ranks over two hosts made of network namespaces, as across
// machines: TCP between the hosts, over the interface
// GOCOMMS_SOCKET_IFNAME names, shared memory within each. It skips where
// namespaces cannot be made (unshare missing, unprivileged user
// namespaces off) or veth pairs cannot.
func TestTwoHostsOnOneMachine(t *testing.T) {
	for _, tool := range []string{"unshare", "nsenter", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "--net", "--uts", "ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1").CombinedOutput(); err != nil {
		t.Skipf("cannot make a user and network namespace with a veth pair here (unprivileged user namespaces off?): %v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	script := twoHosts + `
job 29500 verify -timeout 20s || exit 1
job 29501 bench --op all_reduce --algo hierarchical --dtype int32 -b 4 -e 1M -f 16 -n 2 -w 1 -c 1 -timeout 20s
`
	cmd := exec.CommandContext(ctx, "unshare", "--user", "--map-root-user", "--net", "--uts", "sh", "-c", script)
	out := t.TempDir()
	cmd.Env = append(os.Environ(), "COMMNODE="+commnode, "OUT="+out)
	b, err := cmd.CombinedOutput()
	text := string(b)
	if err != nil {
		t.Fatalf("job on two hosts: %v\n%s", err, text)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`a default: tcp address +10\.99\.0\.1 \(decoy0\)`),
		regexp.MustCompile(`a ifname: tcp address +10\.77\.0\.1 \(vetha\), listening on it alone: .*GOCOMMS_SOCKET_IFNAME="veth"`),
		regexp.MustCompile(`b ifname: tcp address +10\.77\.0\.2 \(vethb\)`),
		regexp.MustCompile(`verify: \d+ cases on 4 ranks, all correct`),
		regexp.MustCompile(`# all_reduce by hierarchical`),
		regexp.MustCompile(`# Out of bounds values : 0 OK`),
	} {
		if !want.MatchString(text) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if strings.Contains(text, "level=WARN") {
		t.Errorf("a clean job on two hosts logged a warning:\n%s", text)
	}
}
