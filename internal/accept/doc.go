// Package accept holds what the socket servers of gocomms share: an accept
// loop that outlasts transient failures, and the set of connections a
// server hangs up on when it closes. transport.Backlog and tcpstore.Server
// are built on them.
package accept
