package simulation

import "time"

// skewedClock is a rank's clock under a Skew fault: from virtual time from
// on, it runs rate times as fast as the loop's.
type skewedClock struct {
	loop *Loop
	from time.Duration
	rate float64
}

// Now reads the rank's clock.
func (c *skewedClock) Now() time.Time {
	now := c.loop.Elapsed()
	if now > c.from {
		now = c.from + time.Duration(float64(now-c.from)*c.rate)
	}
	return c.loop.epoch.Add(now)
}

// AfterFunc runs f once the rank's clock has advanced by d.
func (c *skewedClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	if c.loop.Elapsed() >= c.from {
		d = time.Duration(float64(d) / c.rate)
	}
	return c.loop.AfterFunc(d, f)
}
