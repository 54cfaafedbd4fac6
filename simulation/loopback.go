package simulation

import (
	"math"
	"time"
)

// The loopback fit (docs/calibration.md has the measurements, and
// bench/calibrate.sh repeats them). The hop's cost, the bandwidth and the
// exponent were fitted together, to all-reduce at 2, 4 and 8 ranks.
const (
	// loopbackCores is the CPU count of the machine the fit was made on:
	// up to that many ranks, each has a CPU of its own.
	loopbackCores = 2
	// loopbackLatency is half the round trip of an 8-byte frame between two
	// transport/tcp connections over loopback (BenchmarkPingPong, 32 µs).
	loopbackLatency = 16 * time.Microsecond
	// loopbackOverhead is the rest of a hop's 186 µs at up to loopbackCores
	// ranks. All-reduce of 8 B to 16 KiB fixes the hop: recursive doubling,
	// one hop at 2 ranks, two at 4, where the bytes cost a ninth of it or
	// less.
	loopbackOverhead = 170 * time.Microsecond
	// loopbackBandwidth is what all-reduce of 1 MiB to 64 MiB fixes (the
	// ring: at 2 ranks each port carries a rank's whole buffer). It is the
	// CPU's rate, checksums, copies and the reduction included, not the
	// kernel's.
	loopbackBandwidth = 770e6
	// loopbackHopExponent is how a hop's cost grows with the ranks each CPU
	// carries: less than in proportion, since much of a hop is waiting,
	// which ranks sharing a CPU overlap.
	loopbackHopExponent = 0.85
	// loopbackRetransmit is Linux's floor on TCP's retransmission timeout
	// (TCP_RTO_MIN), which round trips of microseconds never lift. Not
	// measured: loopback loses nothing.
	loopbackRetransmit = 200 * time.Millisecond
)

// Loopback is ranks processes of one machine that talk over loopback TCP,
// as `commnode launch` runs them: one node, every rank on it. It is fitted
// to `commnode bench` all-reduce (float32, sum, 8 B to 64 MiB, medians
// over rounds) on a 2-CPU virtual machine that other work kept busy, and
// stands for that machine, not for loopback in general.
//
// What the fit found:
//
//   - The simulator charges Overhead before a frame's send port and
//     Latency after it, once per hop of a schedule, so all-reduce fixes
//     only their sum, 186 µs at 2 ranks; Latency is the transport's own
//     share, from its ping-pong. The rest is the engine's per-step work
//     (actors, goroutine wake-ups, garbage collection), not the network.
//   - Bandwidth, 770 MB/s, is bound by the CPU: the transport alone
//     streams 1.1 to 1.5 GB/s on the same machine.
//   - The simulator has no CPUs, and beyond loopbackCores ranks the
//     processes share them: with the 2-rank values, 4 ranks simulate 31%
//     to 64% too fast. Loopback folds the sharing into the link: Bandwidth
//     is divided by the ranks each CPU carries, ranks/loopbackCores, and
//     the hop multiplied by that to the power loopbackHopExponent. The
//     geometric mean of |error| over the data fitted is then under 10% at
//     2, 4 and 8 ranks (9% to 24% on later runs, whose medians moved with
//     the machine's other work by as much), but 33% at 3, whose schedules
//     fold: while one pair of ranks works, the third idles and leaves its
//     CPU to them, and the fixed share charges every step as if all were
//     busy (up to 2.3 times the measured time, at 256 KiB).
func Loopback(ranks int) Topology {
	share := max(1, float64(ranks)/loopbackCores) // ranks per CPU
	hop := math.Pow(share, loopbackHopExponent)
	l := Link{
		Latency:   time.Duration(float64(loopbackLatency) * hop),
		Bandwidth: loopbackBandwidth / share,
	}
	return Topology{
		Nodes:            1,
		Intra:            l,
		NIC:              l, // unused on one node, but it must validate
		Oversubscription: 1,
		Overhead:         time.Duration(float64(loopbackOverhead) * hop),
		Retransmit:       loopbackRetransmit,
	}
}
