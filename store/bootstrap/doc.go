// Package bootstrap connects a process to its job's rendezvous store, at
// the address package launcher read from the environment, hosting it on
// rank 0 when no launcher does, and shares one connection among the
// communicators of the process.
package bootstrap
