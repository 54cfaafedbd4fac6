package actorstest

import (
	"sort"
	"sync"
	"time"
)

// Clock is a manual actors.Clock: time moves only when a test calls Advance,
// which runs the callbacks that fall due, in deadline order.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	nextID int
	timers map[int]timer
}

type timer struct {
	at time.Time
	id int
	f  func()
}

// NewClock returns a Clock reading start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, timers: map[int]timer{}}
}

// Now implements actors.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements actors.Clock.
func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID
	c.nextID++
	c.timers[id] = timer{at: c.now.Add(d), id: id, f: f}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[id]
		delete(c.timers, id)
		return ok
	}
}

// Pending reports how many callbacks are armed.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves time forward by d and runs the callbacks now due, outside
// the lock, in deadline order (ties in arming order).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []timer
	for id, t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t)
			delete(c.timers, id)
		}
	}
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool {
		if !due[i].at.Equal(due[j].at) {
			return due[i].at.Before(due[j].at)
		}
		return due[i].id < due[j].id
	})
	for _, t := range due {
		t.f()
	}
}
