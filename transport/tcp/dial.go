package tcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/gocomms/gocomms/transport"
)

// Dial connects to the listener at addr and exchanges the preface, handing
// it hello. A dial to a port where nothing listens fails at once with an
// error wrapping transport.ErrRefused; retrying is the caller's choice.
func (n *Network) Dial(ctx context.Context, addr string, hello []byte) (transport.Conn, error) {
	if n.err != nil {
		return nil, n.err
	}
	if len(hello) > transport.MaxHello {
		return nil, fmt.Errorf("transport/tcp: dial %s: hello of %d bytes exceeds %d", addr, len(hello), transport.MaxHello)
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.dialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: -1, KeepAliveConfig: n.cfg.keepAlive} // -1: off unless Enable
	raw, err := d.DialContext(ctx, "tcp", addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("transport/tcp: %w: %w", err, transport.ErrRefused)
	}
	if err != nil {
		return nil, fmt.Errorf("transport/tcp: %w", err)
	}
	sock := raw.(*net.TCPConn)
	if err := n.cfg.tune(sock); err != nil {
		sock.Close()
		return nil, fmt.Errorf("transport/tcp: dial %s: %w", addr, err)
	}
	if err := dialPreface(ctx, sock, hello); err != nil {
		sock.Close()
		return nil, fmt.Errorf("transport/tcp: dial %s: %w", addr, err)
	}
	return newConn(sock, &n.cfg), nil
}

// dialPreface sends the preface and waits for the acceptor's answer,
// within ctx. Only ctx ends the wait, so that the error says why.
func dialPreface(ctx context.Context, sock *net.TCPConn, hello []byte) error {
	stop := context.AfterFunc(ctx, func() { sock.SetDeadline(aLongTimeAgo) })
	_, err := sock.Write(appendPreface(make([]byte, 0, prefaceLen+len(hello)), hello))
	var ans [answerLen]byte
	if err == nil {
		_, err = io.ReadFull(sock, ans[:])
	}
	if !stop() || ctx.Err() != nil {
		return fmt.Errorf("no answer to the preface: %w", context.Cause(ctx))
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		// Our listeners hang up only when closing, or on a broken preface.
		return fmt.Errorf("listener hung up during the preface: %w: %w", err, transport.ErrRefused)
	case err != nil:
		return fmt.Errorf("preface: %w", err)
	}
	if err := parseAnswer(&ans); err != nil {
		return err
	}
	return sock.SetDeadline(time.Time{})
}
