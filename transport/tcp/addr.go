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
			ch, _ := ChooseHost("") // the empty list always has a choice
			n.advertise = ch.IP.String()
		}
	})
	return net.JoinHostPort(n.advertise, port)
}

// defaultHost is the host to bind when Listen names none.
func (c *config) defaultHost() (string, error) {
	spec := c.interfaces
	if c.listenInterface != "" {
		spec = "=" + c.listenInterface
	}
	if spec == "" {
		return c.listenHost, nil
	}
	ch, err := ChooseHost(spec)
	if err != nil {
		return "", fmt.Errorf("interfaces %q: %w", spec, err)
	}
	return ch.IP.String(), nil
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
