package tcp

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// Ifnames says which network interfaces a process may use, written as
// NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME are: a comma-separated list of
// name prefixes ("eth,ib"); a leading "^" excludes what the list names
// ("^docker,lo"); a leading "=" makes the names exact ("=eth0"); "^="
// excludes exact names. The empty list names no preference: see Choose.
type Ifnames struct {
	exclude, exact bool
	names          []string
}

// ParseIfnames parses an interface list; empty entries are ignored.
func ParseIfnames(spec string) Ifnames {
	var f Ifnames
	spec = strings.TrimSpace(spec)
	spec, f.exclude = strings.CutPrefix(spec, "^")
	spec, f.exact = strings.CutPrefix(spec, "=")
	for n := range strings.SplitSeq(spec, ",") {
		if n = strings.TrimSpace(n); n != "" {
			f.names = append(f.names, n)
		}
	}
	return f
}

// Empty reports whether f names no interface: the default choice applies.
func (f Ifnames) Empty() bool { return len(f.names) == 0 }

// Match reports whether f allows the interface called name; an empty f
// allows every one.
func (f Ifnames) Match(name string) bool {
	if f.Empty() {
		return true
	}
	named := false
	for _, n := range f.names {
		if f.exact && name == n || !f.exact && strings.HasPrefix(name, n) {
			named = true
			break
		}
	}
	return named != f.exclude
}

// Interface is what the choice of an address reads of a network interface.
type Interface struct {
	Name     string
	Up       bool
	Loopback bool
	Addrs    []net.IP
}

// HostInterfaces lists this host's network interfaces in the kernel's
// order.
func HostInterfaces() ([]Interface, error) {
	ifcs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(ifcs))
	for i := range ifcs {
		ifc := &ifcs[i]
		out = append(out, Interface{Name: ifc.Name, Up: ifc.Flags&net.FlagUp != 0, Loopback: ifc.Flags&net.FlagLoopback != 0, Addrs: addrsOf(ifc)})
	}
	return out, nil
}

// Choice is the address a process listens on and advertises, the
// interface it belongs to, and why that one.
type Choice struct {
	Interface string // "" when no interface has an address: IP is 127.0.0.1
	IP        net.IP
	Why       string
}

// ErrNoInterface is what Choose returns when the list names no up
// interface with a usable address.
var ErrNoInterface = errors.New("transport/tcp: no interface matches")

// Choose picks the address to listen on and advertise among ifcs, as NCCL
// does: the first up interface, in ifcs' order, that f allows and that has
// a usable address, IPv4 before IPv6 (a link-local address is unusable: it
// needs a zone). With an empty f, the first up interface that is neither
// loopback nor a docker bridge, else a docker bridge, else loopback, else
// 127.0.0.1: a host's other hosts reach it on its real network.
func Choose(f Ifnames, ifcs []Interface) (Choice, error) {
	if !f.Empty() {
		var up []string
		for _, ifc := range ifcs {
			if !ifc.Up {
				continue
			}
			up = append(up, ifc.Name)
			if ip := usable(ifc.Addrs); ip != nil && f.Match(ifc.Name) {
				return Choice{Interface: ifc.Name, IP: ip, Why: "the first up interface the list allows"}, nil
			}
		}
		return Choice{}, fmt.Errorf("%w with a usable address (up: %s)", ErrNoInterface, strings.Join(up, ", "))
	}
	for _, tier := range []struct {
		allow func(Interface) bool
		why   string
	}{
		{func(i Interface) bool { return !i.Loopback && !strings.HasPrefix(i.Name, "docker") }, "the first up interface neither loopback nor docker"},
		{func(i Interface) bool { return !i.Loopback }, "no other interface: the first docker bridge"},
		{func(Interface) bool { return true }, "no other interface: loopback"},
	} {
		for _, ifc := range ifcs {
			if ip := usable(ifc.Addrs); ifc.Up && ip != nil && tier.allow(ifc) {
				return Choice{Interface: ifc.Name, IP: ip, Why: tier.why}, nil
			}
		}
	}
	return Choice{IP: net.IPv4(127, 0, 0, 1), Why: "no interface has an address"}, nil
}

// usable returns the first IPv4 address of addrs, else the first IPv6
// one that is not link-local, else nil.
func usable(addrs []net.IP) net.IP {
	for _, v4 := range []bool{true, false} {
		for _, ip := range addrs {
			if (ip.To4() != nil) == v4 && !ip.IsLinkLocalUnicast() && !ip.IsUnspecified() {
				return ip
			}
		}
	}
	return nil
}

// ChooseHost is Choose over this host's interfaces, for the list spec.
func ChooseHost(spec string) (Choice, error) {
	ifcs, err := HostInterfaces()
	if err != nil {
		return Choice{}, fmt.Errorf("transport/tcp: listing interfaces: %w", err)
	}
	return Choose(ParseIfnames(spec), ifcs)
}
