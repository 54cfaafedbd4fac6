package storetest

import (
	"bytes"
	"strconv"
	"sync"
	"testing"

	"github.com/gocomms/gocomms/store"
)

func testSetGet(t *testing.T, s store.Store) {
	setGet(t, s, "k", "v1")
	setGet(t, s, "k", "v2")

	// Empty and binary values are values like any other.
	setGet(t, s, "empty", "")
	wantCheck(t, s, true, "empty")
	setGet(t, s, "binary", string([]byte{0, 1, 0xff, 0, '/', '\n'}))
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	if err := s.Set(testContext(t), "big", big); err != nil {
		t.Fatalf("Set of 1 MiB: %v", err)
	}
	wantGet(t, s, "big", string(big))

	// Keys are opaque: slashes and odd bytes are fine.
	setGet(t, s, "a/b/c", "slashes")
	setGet(t, s, "\x00 key", "odd")
}

// setGet sets key to value and reads it back.
func setGet(t *testing.T, s store.Store, key, value string) {
	t.Helper()
	mustSet(t, s, key, value)
	wantGet(t, s, key, value)
}

func testEmptyKey(t *testing.T, s store.Store) {
	ctx := testContext(t)
	n0, err := s.NumKeys(ctx)
	if err != nil {
		t.Fatalf("NumKeys: %v", err)
	}
	calls := map[string]func() error{
		"Set":        func() error { return s.Set(ctx, "", nil) },
		"Get":        func() error { _, err := s.Get(ctx, ""); return err },
		"Add":        func() error { _, err := s.Add(ctx, "", 1); return err },
		"CompareSet": func() error { _, err := s.CompareSet(ctx, "", nil, []byte("x")); return err },
		"Delete":     func() error { _, err := s.Delete(ctx, ""); return err },
		"Check":      func() error { _, err := s.Check(ctx, "ok", ""); return err },
		"Wait":       func() error { return s.Wait(ctx, "") },
		"Append":     func() error { return s.Append(ctx, "", []byte("x")) },
		"MultiGet":   func() error { _, err := s.MultiGet(ctx, "ok", ""); return err },
		"MultiSet":   func() error { return s.MultiSet(ctx, []string{"ok", ""}, [][]byte{{1}, {2}}) },
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s with an empty key succeeded", name)
		}
	}
	if n, err := s.NumKeys(ctx); err != nil || n != n0 {
		t.Errorf("after rejected calls NumKeys = %d, %v; want %d (the valid key of MultiSet must not be set either)", n, err, n0)
	}
}

func testAdd(t *testing.T, s store.Store) {
	ctx := testContext(t)
	for _, step := range []struct {
		delta, want int64
	}{{5, 5}, {3, 8}, {-10, -2}, {0, -2}} {
		got, err := s.Add(ctx, "counter", step.delta)
		if err != nil {
			t.Fatalf("Add(%d): %v", step.delta, err)
		}
		if got != step.want {
			t.Fatalf("Add(%d) = %d, want %d", step.delta, got, step.want)
		}
	}
	wantGet(t, s, "counter", "-2") // decimal ASCII, as PyTorch stores it

	// A counter may be set as text first.
	mustSet(t, s, "preset", "40")
	if got, err := s.Add(ctx, "preset", 2); err != nil || got != 42 {
		t.Errorf("Add to a key set to \"40\" = %d, %v; want 42", got, err)
	}

	// A value that is not a number is an error, and stays as it was.
	mustSet(t, s, "text", "abc")
	if _, err := s.Add(ctx, "text", 1); err == nil {
		t.Error("Add to a non-numeric value succeeded")
	}
	wantGet(t, s, "text", "abc")
}

func testAddConcurrent(t *testing.T, s store.Store) {
	const workers, adds = 8, 1000
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range adds {
				if _, err := s.Add(ctx, "counter", 1); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Add: %v", err)
	}
	wantGet(t, s, "counter", strconv.Itoa(workers*adds))
	if got, err := s.Add(ctx, "counter", 0); err != nil || got != workers*adds {
		t.Errorf("Add(0) = %d, %v; want %d", got, err, workers*adds)
	}
}

func testCompareSet(t *testing.T, s store.Store) {
	ctx := testContext(t)
	cas := func(key, expected, desired, want string) {
		t.Helper()
		got, err := s.CompareSet(ctx, key, []byte(expected), []byte(desired))
		if err != nil {
			t.Fatalf("CompareSet(%q, %q, %q): %v", key, expected, desired, err)
		}
		if string(got) != want {
			t.Errorf("CompareSet(%q, %q, %q) = %q, want %q", key, expected, desired, got, want)
		}
	}
	// Missing key, non-empty expected: nothing stored, expected returned.
	cas("k", "x", "first", "x")
	wantCheck(t, s, false, "k")
	// Missing key, empty expected: desired stored and returned.
	cas("k", "", "first", "first")
	wantGet(t, s, "k", "first")
	// Present and equal: desired stored and returned.
	cas("k", "first", "second", "second")
	wantGet(t, s, "k", "second")
	// Present and different: unchanged, current value returned.
	cas("k", "first", "third", "second")
	wantGet(t, s, "k", "second")
	// Present, empty expected against a non-empty value: no match.
	cas("k", "", "fourth", "second")
	// Present with an empty value, empty expected: a match.
	mustSet(t, s, "e", "")
	cas("e", "", "filled", "filled")
	wantGet(t, s, "e", "filled")
}

func testDeleteCheckNumKeys(t *testing.T, s store.Store) {
	ctx := testContext(t)
	// Count relative to the start: a store may hold keys of its own.
	n0, err := s.NumKeys(ctx)
	if err != nil {
		t.Fatalf("NumKeys: %v", err)
	}
	wantNum := func(want int64) {
		t.Helper()
		if n, err := s.NumKeys(ctx); err != nil || n != n0+want {
			t.Errorf("NumKeys = %d, %v; want %d", n, err, n0+want)
		}
	}
	wantCheck(t, s, true) // no keys: trivially all present
	wantCheck(t, s, false, "a")
	mustSet(t, s, "a", "1")
	mustSet(t, s, "b", "2")
	wantNum(2)
	wantCheck(t, s, true, "a", "b")
	wantCheck(t, s, false, "a", "b", "c")

	if ok, err := s.Delete(ctx, "a"); err != nil || !ok {
		t.Errorf("Delete of a present key = %v, %v; want true", ok, err)
	}
	if ok, err := s.Delete(ctx, "a"); err != nil || ok {
		t.Errorf("Delete of a deleted key = %v, %v; want false", ok, err)
	}
	wantCheck(t, s, false, "a")
	wantCheck(t, s, true, "b")
	wantNum(1)
	mustSet(t, s, "a", "again")
	wantGet(t, s, "a", "again")
	wantNum(2)
}

func testAppend(t *testing.T, s store.Store) {
	ctx := testContext(t)
	if err := s.Append(ctx, "log", []byte("a")); err != nil {
		t.Fatalf("Append to a missing key: %v", err)
	}
	for _, part := range []string{"b", "", "cd"} {
		if err := s.Append(ctx, "log", []byte(part)); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	wantGet(t, s, "log", "abcd")

	// Append creates a key, so it releases a waiter.
	wait := goGet(ctx, s, "late")
	if err := s.Append(ctx, "late", []byte("x")); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if r := receive(t, "Get", wait); r.err != nil || string(r.value) != "x" {
		t.Errorf("Get released by Append = %q, %v; want \"x\"", r.value, r.err)
	}
}

func testMultiGetSet(t *testing.T, s store.Store) {
	ctx := testContext(t)
	keys := []string{"x", "y", "z"}
	if err := s.MultiSet(ctx, keys, [][]byte{[]byte("1"), []byte(""), []byte("3")}); err != nil {
		t.Fatalf("MultiSet: %v", err)
	}
	got, err := s.MultiGet(ctx, "z", "x", "y", "x")
	if err != nil {
		t.Fatalf("MultiGet: %v", err)
	}
	if want := []string{"3", "1", "", "1"}; len(got) != len(want) {
		t.Fatalf("MultiGet returned %d values, want %d", len(got), len(want))
	} else {
		for i := range want {
			if string(got[i]) != want[i] {
				t.Errorf("MultiGet value %d = %q, want %q", i, got[i], want[i])
			}
		}
	}
	if err := s.MultiSet(ctx, []string{"a", "b"}, [][]byte{[]byte("1")}); err == nil {
		t.Error("MultiSet with more keys than values succeeded")
	}
	if err := s.MultiSet(ctx, nil, nil); err != nil {
		t.Errorf("MultiSet of nothing: %v", err)
	}
	if vs, err := s.MultiGet(ctx); err != nil || len(vs) != 0 {
		t.Errorf("MultiGet of nothing = %q, %v", vs, err)
	}

	// MultiGet waits for every key.
	ch := make(chan result, 1)
	go func() {
		vs, err := s.MultiGet(ctx, "x", "late")
		var joined []byte
		if err == nil {
			joined = bytes.Join(vs, []byte(","))
		}
		ch <- result{joined, err}
	}()
	mustSet(t, s, "late", "L")
	if r := receive(t, "MultiGet", ch); r.err != nil || string(r.value) != "1,L" {
		t.Errorf("MultiGet waiting for a late key = %q, %v; want \"1,L\"", r.value, r.err)
	}
}

// testValuesAreCopies: neither the caller's slices nor the returned ones
// alias the store's.
func testValuesAreCopies(t *testing.T, s store.Store) {
	ctx := testContext(t)
	in := []byte("original")
	if err := s.Set(ctx, "k", in); err != nil {
		t.Fatal(err)
	}
	in[0] = 'X'
	wantGet(t, s, "k", "original")

	out, err := s.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	out[0] = 'X'
	wantGet(t, s, "k", "original")

	vs, err := s.MultiGet(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	vs[0][0] = 'X'
	wantGet(t, s, "k", "original")

	desired := []byte("desired")
	got, err := s.CompareSet(ctx, "k", []byte("original"), desired)
	if err != nil {
		t.Fatal(err)
	}
	desired[0] = 'X'
	got[1] = 'X'
	wantGet(t, s, "k", "desired")

	part := []byte("-tail")
	if err := s.Append(ctx, "k", part); err != nil {
		t.Fatal(err)
	}
	part[0] = 'X'
	wantGet(t, s, "k", "desired-tail")

	values := [][]byte{[]byte("m1")}
	if err := s.MultiSet(ctx, []string{"m"}, values); err != nil {
		t.Fatal(err)
	}
	values[0][0] = 'X'
	wantGet(t, s, "m", "m1")

	// Deleting the key does not take back a value already returned.
	keep, err := s.Get(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "m"); err != nil {
		t.Fatal(err)
	}
	if string(keep) != "m1" {
		t.Errorf("a returned value changed to %q after Delete", keep)
	}
}
