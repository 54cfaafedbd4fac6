package actors

import (
	"log/slog"
	"math/rand/v2" // nondeterministic: the real runtime seeds from entropy
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// NewRuntime returns the real runtime: wall clock, a pool of worker
// goroutines for mailbox turns, mailboxes that do not allocate per
// message, an entropy-seeded random source, and logger (nil discards).
func NewRuntime(logger *slog.Logger) *Runtime {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return logger.With("component", "actors")
	}))
	return New(Actors{System: sys, Dispatcher: newPool(), Mailbox: newMailbox}, wallClock{},
		&lockedRand{r: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}, // nondeterministic: entropy seed
		logger)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() } // nondeterministic: the real clock

func (wallClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop // nondeterministic: the real clock
}

// lockedRand serialises a source shared by actors on many goroutines.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Uint64()
}
