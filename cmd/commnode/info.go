package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/gpu"
	"github.com/gocomms/gocomms/gpu/cuda"
	"github.com/gocomms/gocomms/launcher"
	"github.com/gocomms/gocomms/nccl"
	"github.com/gocomms/gocomms/nvl"
	"github.com/gocomms/gocomms/transport/tcp"
)

// infoCommand runs `commnode info`: what this host offers (its GPUs
// among it) and what a rank started here would use.
func infoCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("info", "usage: commnode info", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	host, _ := os.Hostname()
	fmt.Fprintf(w, "host\t%s (%s/%s, %d CPUs)\n", host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	if id, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		fmt.Fprintf(w, "boot id\t%s\n", strings.TrimSpace(string(id)))
	}
	fmt.Fprintf(w, "backends\t%s\n", strings.Join(gocomms.Backends(), ", "))
	for _, line := range interfaces() {
		fmt.Fprintf(w, "interface\t%s\n", line)
	}
	fmt.Fprintf(w, "shared memory\t%s\n", sharedMemory("/dev/shm"))
	devs, err := gpu.Devices()
	switch {
	case errors.Is(err, gpu.ErrUnavailable):
		fmt.Fprintf(w, "gpus\tnone: %v\n", err)
	case err != nil:
		fmt.Fprintf(w, "gpus\tunknown: %v\n", err)
	}
	for _, line := range gpu.Describe(devs) {
		fmt.Fprintf(w, "gpu\t%s\n", line)
	}
	fmt.Fprintf(w, "cuda driver\t%s\n", cudaLine(cuda.Open()))
	fmt.Fprintf(w, "nccl\t%s\n", ncclLine(nccl.Locate()))
	if env, err := launcher.FromEnv(os.LookupEnv); err == nil {
		fmt.Fprintf(w, "rank\t%d of %d (from %s variables)\n", env.Rank, env.Size, env.Source)
		who := "rank 0 hosts it"
		if env.AgentStore {
			who = "the launcher hosts it"
		}
		fmt.Fprintf(w, "store\t%s (%s)\n", env.StoreAddr, who)
	} else {
		fmt.Fprintf(w, "rank\tnone: %v\n", err)
	}
	if v, ok := os.LookupEnv("GOCOMMS_PORT_RANGE"); ok {
		fmt.Fprintf(w, "port range\t%s\n", v)
	}
	ifname, set := os.LookupEnv("GOCOMMS_SOCKET_IFNAME")
	ifcs, err := tcp.HostInterfaces()
	if err != nil {
		fmt.Fprintf(w, "tcp address\tunknown: %v\n", err)
	} else {
		fmt.Fprintf(w, "tcp address\t%s\n", tcpAddress(ifname, set, ifcs))
	}
	fmt.Fprintf(w, "transports\t%s; in-process within one process (RunLocal)\n", transports(os.Getenv("GOCOMMS_TRANSPORT")))
	if err := w.Flush(); err != nil {
		return 1
	}
	return 0
}

// cudaLine says which CUDA the driver (libcuda.so.1) runs and how many
// devices it sees, or, in the driver's own words, why it cannot be used.
func cudaLine(drv *cuda.Driver, err error) string {
	if err != nil {
		return "none: " + err.Error()
	}
	major, minor := drv.Version()
	devs, err := drv.Devices()
	if err != nil {
		return fmt.Sprintf("CUDA %d.%d; devices unknown: %v", major, minor, err)
	}
	return fmt.Sprintf("CUDA %d.%d, %d devices", major, minor, len(devs))
}

// ncclLine says which NCCL the nccl backend loads, from where, or where
// it looked.
func ncclLine(f nccl.Found, err error) string {
	if err != nil {
		return strings.TrimPrefix(err.Error(), "nccl: ")
	}
	return fmt.Sprintf("%s (%s, found through %s)", f.Version, f.Path, f.Via)
}

// transports says which transport a rank would use for which peers under
// GOCOMMS_TRANSPORT=mode.
func transports(mode string) string {
	shm := "shared memory (nvl) to peers on this host"
	if nvl.Host() == "" {
		shm = "no shared memory here (Linux's /proc is needed)"
	}
	switch mode {
	case "", "auto":
		return shm + ", tcp to the others (GOCOMMS_TRANSPORT=auto)"
	case "shm":
		return shm + " only (GOCOMMS_TRANSPORT=shm)"
	case "tcp":
		return "tcp to every peer (GOCOMMS_TRANSPORT=tcp)"
	}
	return fmt.Sprintf("none: GOCOMMS_TRANSPORT=%q is not auto, shm or tcp", mode)
}

// tcpAddress says which address a rank would advertise for TCP links
// among ifcs, on which interface, where it listens, and why, under
// GOCOMMS_SOCKET_IFNAME=spec (set says whether it is set at all).
func tcpAddress(spec string, set bool, ifcs []tcp.Interface) string {
	env := "GOCOMMS_SOCKET_IFNAME unset"
	if set {
		env = fmt.Sprintf("GOCOMMS_SOCKET_IFNAME=%q", spec)
	}
	f := tcp.ParseIfnames(spec)
	ch, err := tcp.Choose(f, ifcs)
	if err != nil {
		return fmt.Sprintf("none: %v (%s): a rank fails to listen", err, env)
	}
	on, bind := ch.Interface, "listening on every interface"
	if on == "" {
		on = "no interface"
	}
	if !f.Empty() {
		bind = "listening on it alone"
	}
	return fmt.Sprintf("%s (%s), %s: %s (%s)", ch.IP, on, bind, ch.Why, env)
}

// interfaces lists the up interfaces with their addresses.
func interfaces() []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return []string{"unknown: " + err.Error()}
	}
	var lines []string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		strs := make([]string, len(addrs))
		for i, a := range addrs {
			strs[i] = a.String()
		}
		lines = append(lines, fmt.Sprintf("%s mtu %d %s", ifc.Name, ifc.MTU, strings.Join(strs, " ")))
	}
	return lines
}
