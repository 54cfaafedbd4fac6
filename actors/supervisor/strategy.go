package supervisor

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/gocomms/gocomms/actors"
)

// Policy bounds restarts. The zero Policy stops a child on its first failure.
type Policy struct {
	MaxRestarts int           // restarts allowed within Window; beyond, the child is stopped
	Window      time.Duration // failures older than this are forgotten; 0 = never forgotten
	Backoff     time.Duration // delay before the first restart; doubles per failure in the window
	MaxBackoff  time.Duration // cap on the delay; 0 = no cap
}

// DefaultLinkPolicy restarts a link six times within a minute, backing off
// from 10ms: a link reconnects through an outage of about 600ms, and a peer
// that stays unreachable longer is given up as failed.
var DefaultLinkPolicy = Policy{MaxRestarts: 6, Window: time.Minute, Backoff: 10 * time.Millisecond, MaxBackoff: time.Second}

// Strategy is a deterministic one-for-one supervisor strategy.
type Strategy struct {
	rt     *actors.Runtime
	policy Policy
	// Temporary, when set, names children that are never restarted but
	// stopped at their first failure: actors whose work cannot be replayed,
	// such as a collective halfway through its schedule.
	Temporary func(child *actor.PID) bool

	mu       sync.Mutex // a guardian strategy is shared by many parents
	children map[string]*budget
}

// New returns a Strategy reading rt's clock.
func New(rt *actors.Runtime, p Policy) *Strategy {
	return &Strategy{rt: rt, policy: p}
}

// HandleFailure implements actor.SupervisorStrategy.
func (s *Strategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, message any) {
	if s.Temporary != nil && s.Temporary(child) {
		s.rt.Logger.Warn("temporary actor failed; stopping it", "child", child.Id, "reason", fmt.Sprint(reason))
		sup.StopChildren(child)
		return
	}
	s.mu.Lock()
	b := s.children[child.Id]
	if b == nil {
		b = &budget{policy: s.policy}
		if s.children == nil {
			s.children = map[string]*budget{} // made by the first failure: most strategies see none
		}
		s.children[child.Id] = b
	}
	restart, delay := b.fail(s.rt.Clock.Now())
	if !restart {
		delete(s.children, child.Id)
	}
	s.mu.Unlock()

	log := s.rt.Logger.With("child", child.Id, "reason", fmt.Sprint(reason), "message", fmt.Sprintf("%T", message))
	switch {
	case !restart:
		log.Warn("actor failed too often; stopping it")
		sup.StopChildren(child)
	case delay == 0:
		log.Info("actor failed; restarting it")
		sup.RestartChildren(child)
	default:
		log.Info("actor failed; restarting it after backoff", "backoff", delay)
		s.rt.Clock.AfterFunc(delay, func() { sup.RestartChildren(child) })
	}
}

// budget counts one child's failures in a sliding window of clock time.
type budget struct {
	policy   Policy
	failures []time.Time
}

// fail records a failure at now and says whether to restart, and after how long.
func (b *budget) fail(now time.Time) (restart bool, delay time.Duration) {
	if w := b.policy.Window; w > 0 {
		b.failures = slices.DeleteFunc(b.failures, func(t time.Time) bool { return now.Sub(t) >= w })
	}
	b.failures = append(b.failures, now)
	n := len(b.failures)
	if n > b.policy.MaxRestarts {
		return false, 0
	}
	delay = b.policy.Backoff
	for i := 1; i < n && delay > 0; i++ {
		delay *= 2
		if b.policy.MaxBackoff > 0 && delay >= b.policy.MaxBackoff {
			delay = b.policy.MaxBackoff
			break
		}
	}
	return true, delay
}
