package gocomms_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocomms/gocomms"
)

// TestLeaversAfterAShrinkBreakNothing: after a shrink, ranks 0 and 2
// finalize both communicators and leave. Rank 1, once it has seen rank 0
// leave, still sends to rank 3 on the shrunk communicator, and no rank
// logs a failure: the agreement that decided the shrink does not take
// over for rank 0, the lowest, when it says goodbye, which would reach
// for rank 2, gone too, and break both communicators on rank 1.
func TestLeaversAfterAShrinkBreakNothing(t *testing.T) {
	events := &eventLog{}
	left := events.await(func(line string) bool {
		return strings.Contains(line, "peer's connection ended") && strings.Contains(line, " comm=local ") &&
			strings.Contains(line, " rank=1 ") && strings.Contains(line, " peer=0 ")
	})
	local(t, 4, func(ctx context.Context, c *gocomms.Comm) error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		s, err := c.Shrink(ctx)
		if err != nil {
			return err
		}
		switch c.Rank() {
		case 1:
			select {
			case <-left:
			case <-ctx.Done():
				return fmt.Errorf("rank 0's leaving never reached rank 1: %w", ctx.Err())
			}
			if err := s.Send(ctx, gocomms.FromSlice([]int64{42}), 3); err != nil {
				return fmt.Errorf("send to rank 3 after ranks 0 and 2 left: %w", err)
			}
		case 3:
			x := []int64{0}
			if err := s.Recv(ctx, gocomms.FromSlice(x), 1); err != nil || x[0] != 42 {
				return fmt.Errorf("receive from rank 1: %d, %v", x[0], err)
			}
		}
		if err := s.Finalize(ctx); err != nil {
			return err
		}
		return c.Finalize(ctx)
	}, gocomms.WithLogger(slog.New(eventHandler{log: events})))
	for _, line := range events.lines() {
		if strings.HasPrefix(line, "WARN") {
			t.Errorf("logged: %s", line)
		}
	}
}

// eventLog keeps what a logger handler saw, one line a record, and tells
// a waiter once a line it looks for comes.
type eventLog struct {
	mu      sync.Mutex
	all     []string
	waiters []eventWaiter
}

type eventWaiter struct {
	match func(string) bool
	ch    chan struct{}
}

func (l *eventLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, line)
	l.waiters = slices.DeleteFunc(l.waiters, func(w eventWaiter) bool {
		if w.match(line) {
			close(w.ch)
			return true
		}
		return false
	})
}

// await returns a channel closed once a line matches.
func (l *eventLog) await(match func(string) bool) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := eventWaiter{match, make(chan struct{})}
	l.waiters = append(l.waiters, w)
	return w.ch
}

func (l *eventLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// eventHandler writes each record to its log as "LEVEL message key=value
// ...", the logger's attributes first.
type eventHandler struct {
	log   *eventLog
	attrs []slog.Attr
}

func (h eventHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h eventHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.log.add(b.String() + " ")
	return nil
}

func (h eventHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return eventHandler{log: h.log, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h eventHandler) WithGroup(string) slog.Handler { return h }
