package tcp

import (
	"fmt"
	"net"
	"strconv"
)

// dialable returns the address peers should dial to reach a listener
// bound to a.
func (n *Network) dialable(a *net.TCPAddr) string {
	port := strconv.Itoa(a.Port)
	if !a.IP.IsUnspecified() {
		return net.JoinHostPort(a.IP.String(), port)
	}
	n.advertiseOnce.Do(func() {
		n.advertise = n.cfg.advertiseHost
		if n.advertise == "" {
			n.advertise = firstIPv4()
		}
	})
	return net.JoinHostPort(n.advertise, port)
}

// firstIPv4 returns the first IPv4 address of an up, non-loopback
// interface that is not link-local, or 127.0.0.1.
func firstIPv4() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "127.0.0.1"
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		for _, ip := range addrsOf(&ifc) {
			if ip.To4() != nil && !ip.IsLinkLocalUnicast() {
				return ip.String()
			}
		}
	}
	return "127.0.0.1"
}

// defaultHost is the host to bind when Listen names none.
func (c *config) defaultHost() (string, error) {
	if c.listenInterface == "" {
		return c.listenHost, nil
	}
	ifc, err := net.InterfaceByName(c.listenInterface)
	if err != nil {
		return "", err
	}
	ips := addrsOf(ifc)
	for _, v4 := range []bool{true, false} {
		for _, ip := range ips {
			if (ip.To4() != nil) == v4 && !ip.IsLinkLocalUnicast() {
				return ip.String(), nil
			}
		}
	}
	return "", fmt.Errorf("interface %s has no usable address", c.listenInterface)
}

// addrsOf lists the IP addresses of ifc.
func addrsOf(ifc *net.Interface) []net.IP {
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			ips = append(ips, ipn.IP)
		}
	}
	return ips
}
