package tcpstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocomms/gocomms/store/tcpstore"
)

// TestServerDocSamples replays the protocol doc's 1.13 hex samples.
func TestServerDocSamples(t *testing.T) {
	srv := startServer(t)
	r := dialRaw(t, srv)
	r.send(fromHex(t, "00 02 00×7 2f 6b 02 00×7 76 31"))                             // SET "/k"="v1"
	r.roundTrip(fromHex(t, "02 02 00×7 2f 6b"), fromHex(t, "02 00×7 76 31"))         // GET "/k"
	r.roundTrip(fromHex(t, "03 04 00×7 2f 63 6e 74 05 00×7"), fromHex(t, "05 00×7")) // ADD "/cnt" +5
	r.send(fromHex(t, "05 02 00×7 03 00×7 2f 77 31 03 00×7 2f 77 32"))               // WAIT [/w1,/w2]
	r.expectQuiet()
	w := dialRaw(t, srv)
	w.send(q(v1Set).str("/w1").str(""))
	w.sync()
	r.expectQuiet()
	w.send(q(v1Set).str("/w2").str(""))
	r.expect(fromHex(t, "00"))
	r.send(q(v1Set).str("/nk_a").str("x"))
	r.roundTrip(fromHex(t, "08 05 00×7 2f 6e 6b 5f 61"), fromHex(t, "01 00×7")) // DELETE "/nk_a"

	// The constructor's ADD init/ 1, then the 2.x greeting on another
	// connection, answered by the PING echo.
	r.roundTrip(fromHex(t, "03 05 00×7 69 6e 69 74 2f 01 00×7"), fromHex(t, "01 00×7"))
	v2 := dialRaw(t, srv)
	v2.roundTrip(fromHex(t, "00 ce f7 85 3c 0d 34 12 80 00"), fromHex(t, "34 12 80 00"))
}

// TestServerQueries covers every query of both numberings, and that both
// dialects see one store.
func TestServerQueries(t *testing.T) {
	srv := startServer(t)
	v1, v2 := dialRaw(t, srv), dialRaw2(t, srv)

	v1.send(q(v1Set).str("a").str("1"))
	v1.sync()
	v2.roundTrip(q(v2Get).str("a"), reply().str("1"))
	v2.send(q(v2Set).str("b").str(""))
	v2.sync()
	v1.roundTrip(q(v1Get).str("b"), reply().str(""))
	v1.roundTrip(q(v1Check).keys("a", "b"), reply().u8(0))
	v2.roundTrip(q(v2Check).keys("a", "zz"), reply().u8(1))
	v2.roundTrip(q(v2Check).keys(), reply().u8(0))
	v1.roundTrip(q(v1NumKeys), reply().i64(2))
	v2.roundTrip(q(v2NumKeys), reply().i64(2))

	// ADD keeps decimal text and parses the old value like strtoll.
	v1.roundTrip(q(v1Add).str("n").i64(5), reply().i64(5))
	v2.roundTrip(q(v2Add).str("n").i64(3), reply().i64(8))
	v2.roundTrip(q(v2Add).str("n").i64(-10), reply().i64(-2))
	v1.roundTrip(q(v1Get).str("n"), reply().str("-2"))
	v1.send(q(v1Set).str("pad").str(" 7junk"))
	v1.roundTrip(q(v1Add).str("pad").i64(1), reply().i64(8))

	// COMPARE_SET's four cases.
	v1.roundTrip(q(v1CompareSet).str("c").str("x").str("d"), reply().str("x"))
	v2.roundTrip(q(v2CompareSet).str("c").str("").str("d"), reply().str("d"))
	v1.roundTrip(q(v1CompareSet).str("c").str("d").str("e"), reply().str("e"))
	v2.roundTrip(q(v2CompareSet).str("c").str("d").str("f"), reply().str("e"))

	v1.roundTrip(q(v1Delete).str("c"), reply().i64(1))
	v2.roundTrip(q(v2Delete).str("c"), reply().i64(0))

	// APPEND, MULTI_SET and MULTI_GET, in both numberings (≈2.0 clients
	// send them without VALIDATE).
	for _, r := range []*raw{v1, v2} {
		r.send(q(append_).str("log").str("ab"))
		r.send(q(multiSet).i64(2).str("m1").str("x").str("m2").str("y"))
	}
	v1.sync()
	v2.roundTrip(q(multiGet).keys("log", "m2", "m1"), reply().str("abab").str("y").str("x"))
	v1.roundTrip(q(multiGet).keys(), reply())

	// GET of a missing key answers an empty value, as the libuv server.
	v2.roundTrip(q(v2Get).str("missing"), reply().str(""))

	v2.roundTrip(q(ping).u32(7), reply().u32(7))
	v2.roundTrip(q(listKeys), reply().i64(7).str("a").str("b").str("log").str("m1").str("m2").str("n").str("pad"))
}

// TestServerWaits covers WAIT's release rules and CANCEL_WAIT.
func TestServerWaits(t *testing.T) {
	srv := startServer(t)
	w, r := dialRaw2(t, srv), dialRaw2(t, srv)

	// Present keys answer at once; missing ones when the last is written,
	// a key listed twice once, and by any write that creates a key.
	w.send(q(v2Set).str("here").str(""))
	w.roundTrip(q(v2Wait).keys("here"), reply().u8(0))
	w.send(q(v2Wait).keys("k1", "k2", "k1", "here"))
	w.expectQuiet()
	r.roundTrip(q(v2Add).str("k1").i64(1), reply().i64(1))
	w.expectQuiet()
	r.roundTrip(q(v2CompareSet).str("k2").str("").str("v"), reply().str("v"))
	w.expect(reply().u8(0))

	// A waiting connection keeps being answered.
	w.send(q(v2Wait).keys("later"))
	w.roundTrip(q(ping).u32(1), reply().u32(1))
	r.send(q(append_).str("later").str("x"))
	w.expect(reply().u8(0))

	// CANCEL_WAIT answers WAIT_CANCELED, after the STOP_WAITING of a wait
	// released first; a cancelled wait is not released later.
	w.roundTrip(q(cancelWait), reply().u8(1))
	w.send(q(v2Wait).keys("gone"))
	w.roundTrip(q(cancelWait), reply().u8(1))
	r.send(q(v2Set).str("gone").str(""))
	r.sync()
	w.expectQuiet()
	w.send(q(v2Wait).keys("raced"))
	r.send(q(multiSet).i64(1).str("raced").str(""))
	r.sync()
	w.roundTrip(q(cancelWait), reply().u8(0).u8(1))

	// Disconnecting drops a connection's registrations.
	gone := dialRaw(t, srv)
	gone.send(q(v1Wait).keys("never"))
	waitFor(t, func() bool { return tcpstore.Registrations(srv) == 1 })
	gone.nc.Close()
	waitFor(t, func() bool { return tcpstore.Registrations(srv) == 0 })
}

// TestServerBarrierAndQueues covers the 2.x queries that only the libuv
// server has.
func TestServerBarrierAndQueues(t *testing.T) {
	srv := startServer(t)
	a, b, c := dialRaw2(t, srv), dialRaw2(t, srv), dialRaw2(t, srv)

	a.send(q(barrier).str("bar").i64(3))
	b.send(q(barrier).str("bar").i64(3))
	waitFor(t, func() bool { return tcpstore.Registrations(srv) == 2 })
	a.expectQuiet()
	c.roundTrip(q(barrier).str("bar").i64(3), reply().u8(0))
	a.expect(reply().u8(0))
	b.expect(reply().u8(0))
	c.roundTrip(q(v2Get).str("bar"), reply().str("3"))

	// A cancelled barrier arrival still counts.
	a.send(q(barrier).str("bar2").i64(2))
	a.roundTrip(q(cancelWait), reply().u8(1))
	b.roundTrip(q(barrier).str("bar2").i64(2), reply().u8(0))

	// Queues live apart from keys; a push releases one waiter.
	a.roundTrip(q(queuePop).str("q"), reply().i64(0))
	a.send(q(v2Wait).keys("q"))
	b.send(q(v2Wait).keys("q"))
	waitFor(t, func() bool { return tcpstore.Registrations(srv) == 2 })
	c.send(q(queuePush).str("q").str("first"))
	c.send(q(queuePush).str("q").str("second"))
	a.expect(reply().u8(0))
	b.expect(reply().u8(0))
	c.roundTrip(q(queueLen).str("q"), reply().i64(2))
	c.roundTrip(q(v2Check).keys("q"), reply().u8(0))
	c.roundTrip(q(v2NumKeys), reply().i64(2)) // bar and bar2
	c.roundTrip(q(queuePop).str("q"), reply().i64(2).str("first"))
	c.roundTrip(q(queuePop).str("q"), reply().i64(1).str("second"))
	c.roundTrip(q(v2Check).keys("q"), reply().u8(1))
}

// TestServerRejects: bad input closes that connection, unanswered, and
// leaves the store and everyone else alone.
func TestServerRejects(t *testing.T) {
	srv := startServer(t, tcpstore.WithLimits(tcpstore.Limits{MaxKeyLen: 16, MaxValueLen: 64, MaxKeys: 4}))
	bystander := dialRaw2(t, srv)
	bystander.send(q(v2Set).str("text").str("abc"))
	bystander.sync()

	for name, m := range map[string]msg{
		"unknown 1.x query":   q(13),
		"unknown 2.x query":   q(v2Validate).u32(magic).u8(19),
		"query 0xff":          q(0xff),
		"WATCH_KEY":           q(v1WatchKey).str("k"),
		"bad magic":           q(v2Validate).u32(magic).u8(v2Validate).u32(1),
		"2.x query on 1.x":    q(ping).u32(1),
		"HTTP":                msg("GET / HTTP/1.1\r\n\r\n"),
		"long key":            q(v1Set).str("0123456789abcdefX").str(""),
		"long value":          q(v1Set).str("k").str(string(make([]byte, 65))),
		"huge length":         q(v1Get).i64(-1),
		"SET past 2^62":       q(v1Set).i64(1 << 62),
		"too many keys":       q(v1Check).keys("a", "b", "c", "d", "e"),
		"negative count":      q(multiSet).i64(-1),
		"over request budget": q(multiSet).i64(2).str("k").str(string(make([]byte, 64))).str("k2").str(string(make([]byte, 20))),
		"empty key":           q(v1Set).str("").str("v"),
		"ADD non-numeric":     q(v1Add).str("text").i64(1),
		"ADD overflow":        q(v1Set).str("big").str("9223372036854775807").u8(v1Add).str("big").i64(1),
	} {
		t.Run(name, func(t *testing.T) {
			r := dialRaw(t, srv)
			r.send(m)
			r.expectClosed()
			bystander.roundTrip(q(v2Get).str("text"), reply().str("abc"))
		})
	}
	bystander.roundTrip(q(v2Get).str("big"), reply().str("9223372036854775807"))
}

// waitFor polls cond, for tests that must know a peer's request has
// arrived; it fails the test after testTimeout.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met in time")
		case <-time.After(time.Millisecond):
		}
	}
}
