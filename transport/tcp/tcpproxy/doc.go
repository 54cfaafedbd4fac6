// Package tcpproxy puts a TCP proxy in front of every listener of a
// transport/tcp Network, so that fault-injection tests can reset real
// connections mid-transfer: both ends see their socket aborted, with
// frames half written, as a middlebox or a flapping link would leave
// them.
//
//	nw := tcpproxy.New(tcp.New())
//	... ranks listen and dial through nw; peers dial the proxies ...
//	n := nw.Reset() // aborts every connection carried so far
//
// The proxy forwards bytes untouched, so everything above it, the hello
// included, runs as over the plain Network.
package tcpproxy
