package bootstrap

import (
	"context"
	"net"
)

// BindEnv names the address the store's host binds, overriding the one
// ListenHost derives from MASTER_ADDR; "0.0.0.0" or "::" binds every
// interface.
const BindEnv = "GOCOMMS_STORE_BIND"

// ListenHost returns the host a store reached at masterHost should listen
// on: the interface address that masterHost names, so that the store is
// reachable where the job reaches it and nowhere else (loopback for a
// loopback MASTER_ADDR). BindEnv, when lookup finds it, wins. An address
// that is not this host's, or a name that resolves to none of its
// addresses or only to loopback although it is not "localhost" (Debian
// maps a host's own name to 127.0.1.1, while other hosts resolve it to its
// real address), gives "", every interface, as binding more narrowly could
// lock out the job's other hosts.
func ListenHost(ctx context.Context, masterHost string, lookup func(string) (string, bool)) string {
	if v, ok := lookup(BindEnv); ok {
		return v
	}
	local := localIPs()
	if ip := net.ParseIP(masterHost); ip != nil {
		if ip.IsLoopback() || local[ip.String()] {
			return masterHost
		}
		return "" // a NAT's or a floating address, say
	}
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, masterHost)
	if err != nil || len(ips) == 0 {
		return ""
	}
	allLoopback := true
	for _, ip := range ips {
		if !ip.IP.IsLoopback() {
			allLoopback = false
			if local[ip.IP.String()] {
				return ip.IP.String()
			}
		}
	}
	if allLoopback && masterHost == "localhost" {
		return ips[0].IP.String()
	}
	return ""
}

// localIPs is the set of this host's interface addresses.
func localIPs() map[string]bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	set := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			set[n.IP.String()] = true
		}
	}
	return set
}
