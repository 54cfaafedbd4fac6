package gpu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gocomms/gocomms/internal/spans"
)

// Device is one NVIDIA GPU as NVML reports it.
type Device struct {
	Index        int    // NVML's index, as nvidia-smi numbers the GPUs
	Name         string // "NVIDIA H100 80GB HBM3"
	UUID         string // "GPU-…", stable across reboots; CUDA_VISIBLE_DEVICES accepts it
	PCIBusID     string // "00000000:18:00.0"
	MemoryBytes  uint64 // total memory; 0 where NVML does not report it
	ComputeMajor int    // CUDA compute capability: 9.0 for Hopper
	ComputeMinor int
	MIG          bool     // MIG mode is on: the GPU is split into instances
	NVLinks      []NVLink // the links NVML supports on this GPU, by link number
}

// NVLink is one NVLink of a Device.
type NVLink struct {
	Link         int    // the link's number on its device
	Active       bool   // the link is up
	PeerPCIBusID string // the PCI bus of the other end (a GPU or an NVSwitch); "" when inactive or not reported
}

// Describe gives one line per device: its index, name, UUID, PCI bus,
// memory, compute capability, MIG when on, and where its active NVLinks
// go: to another of devs by index, else to the peer's PCI bus (an
// NVSwitch, or a GPU not in devs).
//
//	0 NVIDIA H100 80GB HBM3 (GPU-…, PCI 00000000:18:00.0), 79.6 GiB, compute 9.0; NVLink: gpu 1 (links 0-3,5), 1 inactive
func Describe(devs []Device) []string {
	byBus := make(map[string]int, len(devs))
	for _, d := range devs {
		byBus[pciKey(d.PCIBusID)] = d.Index
	}
	lines := make([]string, len(devs))
	for i, d := range devs {
		var b strings.Builder
		fmt.Fprintf(&b, "%d %s (%s, PCI %s)", d.Index, d.Name, d.UUID, d.PCIBusID)
		if d.MemoryBytes > 0 {
			fmt.Fprintf(&b, ", %.1f GiB", float64(d.MemoryBytes)/(1<<30))
		}
		fmt.Fprintf(&b, ", compute %d.%d", d.ComputeMajor, d.ComputeMinor)
		if d.MIG {
			b.WriteString(", MIG")
		}
		b.WriteString("; ")
		b.WriteString(describeLinks(d.NVLinks, byBus))
		lines[i] = b.String()
	}
	return lines
}

// describeLinks groups a device's active links by peer, in the order of
// each peer's first link, and counts the inactive ones.
func describeLinks(links []NVLink, byBus map[string]int) string {
	if len(links) == 0 {
		return "no NVLink"
	}
	type group struct {
		peer  string
		links []int
	}
	var groups []*group
	byPeer := map[string]*group{}
	inactive := 0
	for _, l := range links {
		if !l.Active {
			inactive++
			continue
		}
		peer := "unknown peer"
		if l.PeerPCIBusID != "" {
			peer = l.PeerPCIBusID
			if idx, ok := byBus[pciKey(l.PeerPCIBusID)]; ok {
				peer = "gpu " + strconv.Itoa(idx)
			}
		}
		g := byPeer[peer]
		if g == nil {
			g = &group{peer: peer}
			byPeer[peer] = g
			groups = append(groups, g)
		}
		g.links = append(g.links, l.Link)
	}
	parts := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		word := "link"
		if len(g.links) > 1 {
			word = "links"
		}
		parts = append(parts, fmt.Sprintf("%s (%s %s)", g.peer, word, spans.Format(g.links, ",")))
	}
	if inactive > 0 {
		parts = append(parts, fmt.Sprintf("%d inactive", inactive))
	}
	return "NVLink: " + strings.Join(parts, ", ")
}

// pciKey normalizes a PCI bus ID for comparison: NVML's legacy form gives
// the domain 4 hex digits and its current form 8, and hex may be in
// either case.
func pciKey(busID string) string {
	var domain, bus, dev, fn uint64
	if n, _ := fmt.Sscanf(busID, "%x:%x:%x.%x", &domain, &bus, &dev, &fn); n == 4 {
		return fmt.Sprintf("%x:%x:%x.%x", domain, bus, dev, fn)
	}
	return strings.ToLower(busID)
}
