package simulation

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"
)

// HostFit is a topology fitted to the real engine's ranks on one host:
// `commnode bench` all-reduce between processes, against the simulator
// with the fitted values, by bench/calibrate.sh --fit (docs/calibration.md
// has the measurements). The ranks share the host's Cores CPUs: up to
// that many, each has one of its own; past them, a hop costs
// share^HopExponent times as much, plus a wake-up of
// WakeUS·(share−1)^HopExponent, and a port's bandwidth is divided by
// share^BandwidthExponent, share being the ranks per CPU. The simulator
// has no CPUs, so the sharing is folded into the link.
type HostFit struct {
	Name   string `json:"name"`   // the topology: loopback or shm
	Fitted string `json:"fitted"` // when, where and to what
	Cores  int    `json:"cores"`
	// HopUS is a hop's cost in microseconds, up to Cores ranks: the
	// engine's per-step work and the transport's latency, which
	// all-reduce fixes only as a sum; LatencyShare of it is charged after
	// the send port (the wire), the rest before it (the sender's work).
	HopUS        float64 `json:"hop_us"`
	LatencyShare float64 `json:"latency_share"`
	// BandwidthGBps is a rank's port, up to Cores ranks, in GB/s: the
	// CPU's rate for copies, checksums and the reduction, not the
	// kernel's.
	BandwidthGBps     float64 `json:"bandwidth_gbps"`
	HopExponent       float64 `json:"hop_exponent"`
	BandwidthExponent float64 `json:"bandwidth_exponent"`
	// WakeUS is what a hop costs, in microseconds, once a second rank
	// shares each CPU: the peer's process waits for the CPU before it can
	// answer. It grows with the other ranks on the CPU as the hop does.
	// It is the step from Cores ranks to twice as many (an 8-byte
	// all-reduce over TCP on 2 CPUs: 13 µs at 2 ranks, 190 at 4, 550 at
	// 8), which no power of the ranks per CPU alone follows.
	WakeUS float64 `json:"wake_us,omitempty"`
	// RetransmitMS is how long a lost frame waits to be sent again: for
	// TCP, Linux's floor on the retransmission timeout, which loopback's
	// round trips never lift. Not measured: loopback loses nothing.
	RetransmitMS float64 `json:"retransmit_ms"`
	// Error is the geometric mean of |error| over the sizes fitted, by
	// rank count, in percent: what the fit left.
	Error map[string]float64 `json:"error_pct,omitempty"`
}

// Topology is the fit for ranks: one node, every rank on it.
func (f HostFit) Topology(ranks int) Topology {
	share := max(1, float64(ranks)/float64(f.Cores)) // ranks per CPU
	hop := time.Duration((f.HopUS*math.Pow(share, f.HopExponent) + f.WakeUS*math.Pow(share-1, f.HopExponent)) * float64(time.Microsecond))
	latency := time.Duration(float64(hop) * f.LatencyShare)
	l := Link{Latency: latency, Bandwidth: f.BandwidthGBps * 1e9 / math.Pow(share, f.BandwidthExponent)}
	return Topology{
		Nodes:            1,
		Intra:            l,
		NIC:              l, // unused on one node, but it must validate
		Oversubscription: 1,
		Overhead:         hop - latency,
		Retransmit:       time.Duration(f.RetransmitMS * float64(time.Millisecond)),
	}
}

// Validate reports what a fit lacks to make a topology.
func (f HostFit) Validate() error {
	if f.Cores < 1 || !(f.HopUS > 0) || !(f.BandwidthGBps > 0) || !(f.LatencyShare >= 0 && f.LatencyShare <= 1) ||
		!(f.RetransmitMS > 0) || math.IsNaN(f.HopExponent) || math.IsNaN(f.BandwidthExponent) || !(f.WakeUS >= 0) {
		return fmt.Errorf("simulation: host fit %q: want cores ≥ 1, a positive hop, bandwidth and retransmission time, a wake-up of 0 or more, and a latency share in [0, 1]", f.Name)
	}
	return nil
}

// LoadHostFit reads a fit that bench/calibrate.sh --fit wrote.
func LoadHostFit(path string) (HostFit, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return HostFit{}, err
	}
	return parseHostFit(b)
}

func parseHostFit(b []byte) (HostFit, error) {
	var f HostFit
	if err := json.Unmarshal(b, &f); err != nil {
		return HostFit{}, fmt.Errorf("simulation: a host fit: %w", err)
	}
	return f, f.Validate()
}

// The presets, as bench/calibrate.sh --fit last wrote them.
var (
	//go:embed topologies/loopback.json
	loopbackJSON []byte
	//go:embed topologies/shm.json
	shmJSON []byte
)

// mustFit parses an embedded fit: TestPresetFits checks both.
func mustFit(b []byte) HostFit {
	f, err := parseHostFit(b)
	if err != nil {
		panic(err)
	}
	return f
}

var loopbackFit, shmFit = mustFit(loopbackJSON), mustFit(shmJSON)

// Loopback is ranks processes of one machine that talk over loopback
// TCP, as `commnode launch` runs them with GOCOMMS_TRANSPORT=tcp, fitted
// on a 2-CPU virtual machine (topologies/loopback.json): it stands for
// that machine, not for loopback in general.
func Loopback(ranks int) Topology { return loopbackFit.Topology(ranks) }

// SharedMemory is ranks processes of one machine that talk through shared
// memory, `commnode launch`'s default between a host's processes, fitted
// the same way (topologies/shm.json).
func SharedMemory(ranks int) Topology { return shmFit.Topology(ranks) }

// HostFits are the presets' fits, by name.
func HostFits() map[string]HostFit { return map[string]HostFit{"loopback": loopbackFit, "shm": shmFit} }
