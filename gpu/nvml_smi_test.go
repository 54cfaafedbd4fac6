//go:build linux && cgo

package gpu

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// smiFields are what TestNVMLMatchesNvidiaSMI asks nvidia-smi for, in
// the order smiMismatches reads them.
const smiFields = "index,name,uuid,pci.bus_id,memory.total,compute_cap,mig.mode.current"

// TestNVMLMatchesNvidiaSMI compares what Devices reads with what
// nvidia-smi, NVML's own client, prints for each GPU of this host.
func TestNVMLMatchesNvidiaSMI(t *testing.T) {
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		t.Skipf("skip: nvidia-smi is not on PATH: %v", err)
	}
	devs, err := Devices()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("skip: NVML does not work here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(smi, "--query-gpu="+smiFields, "--format=csv,noheader,nounits").CombinedOutput()
	if err != nil {
		t.Fatalf("nvidia-smi --query-gpu=%s: %v\n%s", smiFields, err, out)
	}
	t.Logf("nvidia-smi:\n%s", out)
	for _, line := range Describe(devs) {
		t.Logf("Devices: %s", line)
	}
	for _, m := range smiMismatches(devs, string(out)) {
		t.Error(m)
	}
}

func TestSMIMismatches(t *testing.T) {
	devs := []Device{{
		Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-0a1b2c3d-0000-1111-2222-333344445555",
		PCIBusID: "0000:18:00.0", MemoryBytes: 81559 << 20, ComputeMajor: 9,
	}, {
		Index: 1, Name: "NVIDIA L4", UUID: "GPU-9f", PCIBusID: "00000000:3b:00.0", ComputeMajor: 8,
		ComputeMinor: 9, MIG: true,
	}}
	same := "0, NVIDIA H100 80GB HBM3, GPU-0a1b2c3d-0000-1111-2222-333344445555, 00000000:18:00.0, 81559, 9.0, Disabled\n" +
		"1, NVIDIA L4, GPU-9f, 00000000:3B:00.0, [N/A], 8.9, Enabled\n"
	if m := smiMismatches(devs, same); len(m) != 0 {
		t.Errorf("matching devices: %q", m)
	}
	if m := smiMismatches(devs[:1], "0, NVIDIA H100 80GB HBM3, GPU-0a1b2c3d-0000-1111-2222-333344445555, "+
		"00000000:18:00.0, 81561, 9.0, [N/A]\n"); len(m) != 1 || !strings.Contains(m[0], "memory.total") {
		t.Errorf("memory 2 MiB apart: %q; want one mismatch of memory.total", m)
	}
	if m := smiMismatches(devs[1:], "1, NVIDIA L4, GPU-9f, 00000000:3C:00.0, 22, 8.6, Disabled\n"); len(m) != 4 {
		t.Errorf("PCI bus, memory, compute capability and MIG differ: %q; want 4 mismatches", m)
	}
	if m := smiMismatches(devs, same[:strings.Index(same, "\n")+1]); len(m) != 1 {
		t.Errorf("one GPU of two listed: %q; want one mismatch", m)
	}
}

// smiMismatches compares devs with nvidia-smi's CSV (smiFields, without
// header or units) and describes each difference.
func smiMismatches(devs []Device, out string) []string {
	r := csv.NewReader(strings.NewReader(out))
	r.TrimLeadingSpace = true
	rows, err := r.ReadAll()
	if err != nil {
		return []string{fmt.Sprintf("nvidia-smi's CSV: %v", err)}
	}
	if len(rows) != len(devs) {
		return []string{fmt.Sprintf("nvidia-smi lists %d GPUs, Devices %d", len(rows), len(devs))}
	}
	var diffs []string
	for i, row := range rows {
		if len(row) != strings.Count(smiFields, ",")+1 {
			diffs = append(diffs, fmt.Sprintf("nvidia-smi's line %d: %q; want the fields %s", i, row, smiFields))
			continue
		}
		d := devs[i]
		check := func(field, smi, nvml string) {
			if smi != nvml {
				diffs = append(diffs, fmt.Sprintf("GPU %d %s: nvidia-smi %q, Devices %q", i, field, smi, nvml))
			}
		}
		check("index", row[0], strconv.Itoa(d.Index))
		check("name", row[1], d.Name)
		check("uuid", row[2], d.UUID)
		// nvidia-smi writes an 8-digit domain in upper case, NVML's
		// legacy field a 4-digit one.
		check("pci.bus_id", pciKey(row[3]), pciKey(d.PCIBusID))
		check("compute_cap", row[5], fmt.Sprintf("%d.%d", d.ComputeMajor, d.ComputeMinor))
		mig := "Disabled" // also where the GPU has no MIG mode: nvidia-smi's [N/A]
		if d.MIG {
			mig = "Enabled"
		}
		if notReported(row[6]) {
			row[6] = "Disabled"
		}
		check("mig.mode.current", row[6], mig)
		// In MiB, which nvidia-smi may round where the bytes are not a
		// whole number of them.
		mib, err := strconv.ParseUint(row[4], 10, 64)
		got := d.MemoryBytes >> 20
		switch {
		case notReported(row[4]):
			if d.MemoryBytes != 0 {
				diffs = append(diffs, fmt.Sprintf("GPU %d memory.total: nvidia-smi %s, Devices %d bytes",
					i, row[4], d.MemoryBytes))
			}
		case err != nil:
			diffs = append(diffs, fmt.Sprintf("GPU %d memory.total: %q is not a number of MiB", i, row[4]))
		case got+1 < mib || mib+1 < got:
			diffs = append(diffs, fmt.Sprintf("GPU %d memory.total: nvidia-smi %d MiB, Devices %d bytes (%d MiB)",
				i, mib, d.MemoryBytes, got))
		}
	}
	return diffs
}

// notReported tells nvidia-smi's words for a value the device does not
// give.
func notReported(v string) bool { return v == "[N/A]" || v == "[Not Supported]" }
