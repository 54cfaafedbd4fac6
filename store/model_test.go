package store_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/gocomms/gocomms/store"
)

// TestMemoryModel runs random sequences of calls against a Memory, bare and
// behind a prefix, and compares every answer with a plain map. Calls that
// could wait use a cancelled context, so a missing key is an error.
func TestMemoryModel(t *testing.T) {
	for name, wrap := range map[string]func(store.Store) store.Store{
		"bare":   func(s store.Store) store.Store { return s },
		"prefix": func(s store.Store) store.Store { return store.WithPrefix(s, "p") },
	} {
		t.Run(name, func(t *testing.T) { rapid.Check(t, func(t *rapid.T) { checkModel(t, wrap(store.NewMemory())) }) })
	}
}

func checkModel(t *rapid.T, s store.Store) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	model := map[string][]byte{}

	key := rapid.SampledFrom([]string{"a", "b", "c", "a/b"})
	value := rapid.OneOf(
		rapid.StringMatching(`-?[0-9]{0,3}`), // counters, some invalid
		rapid.StringMatching(`[a-z]{0,3}`),
	).AsAny()
	bytesOf := func(t *rapid.T, label string) []byte { return []byte(value.Draw(t, label).(string)) }

	t.Repeat(map[string]func(*rapid.T){
		"set": func(t *rapid.T) {
			k, v := key.Draw(t, "key"), bytesOf(t, "value")
			if err := s.Set(ctx, k, v); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		},
		"add": func(t *rapid.T) {
			k, d := key.Draw(t, "key"), rapid.Int64Range(-1000, 1000).Draw(t, "delta")
			got, err := s.Add(ctx, k, d)
			cur, ok := refCounter(model, k)
			if !ok {
				if err == nil {
					t.Fatalf("Add to %q holding %q succeeded", k, model[k])
				}
				return
			}
			if err != nil || got != cur+d {
				t.Fatalf("Add(%q, %d) = %d, %v; want %d", k, d, got, err, cur+d)
			}
			model[k] = []byte(strconv.FormatInt(cur+d, 10))
		},
		"compareSet": func(t *rapid.T) {
			k, exp, des := key.Draw(t, "key"), bytesOf(t, "expected"), bytesOf(t, "desired")
			got, err := s.CompareSet(ctx, k, exp, des)
			if err != nil {
				t.Fatal(err)
			}
			cur, ok := model[k]
			want := cur
			switch {
			case !ok && len(exp) > 0:
				want = exp
			case !ok || bytes.Equal(cur, exp):
				model[k], want = des, des
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("CompareSet(%q, %q, %q) = %q, want %q", k, exp, des, got, want)
			}
		},
		"delete": func(t *rapid.T) {
			k := key.Draw(t, "key")
			got, err := s.Delete(ctx, k)
			_, want := model[k]
			if err != nil || got != want {
				t.Fatalf("Delete(%q) = %v, %v; want %v", k, got, err, want)
			}
			delete(model, k)
		},
		"append": func(t *rapid.T) {
			k, v := key.Draw(t, "key"), bytesOf(t, "value")
			if err := s.Append(ctx, k, v); err != nil {
				t.Fatal(err)
			}
			model[k] = append(bytes.Clone(model[k]), v...)
		},
		"multiSet": func(t *rapid.T) {
			ks := rapid.SliceOfN(key, 0, 3).Draw(t, "keys")
			vs := make([][]byte, len(ks))
			for i := range vs {
				vs[i] = bytesOf(t, "value")
			}
			if err := s.MultiSet(ctx, ks, vs); err != nil {
				t.Fatal(err)
			}
			for i, k := range ks {
				model[k] = vs[i]
			}
		},
		"get": func(t *rapid.T) {
			k := key.Draw(t, "key")
			got, err := s.Get(cancelled, k)
			want, ok := model[k]
			if !ok {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Get(%q) of a missing key = %q, %v; want Canceled", k, got, err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Get(%q) = %q, %v; want %q", k, got, err, want)
			}
		},
		"multiGet": func(t *rapid.T) {
			ks := rapid.SliceOfN(key, 0, 3).Draw(t, "keys")
			got, err := s.MultiGet(cancelled, ks...)
			for _, k := range ks {
				if _, ok := model[k]; !ok {
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("MultiGet(%q) with %q missing = %v", ks, k, err)
					}
					return
				}
			}
			if err != nil {
				t.Fatalf("MultiGet(%q): %v", ks, err)
			}
			for i, k := range ks {
				if !bytes.Equal(got[i], model[k]) {
					t.Fatalf("MultiGet(%q)[%d] = %q, want %q", ks, i, got[i], model[k])
				}
			}
		},
		"": func(t *rapid.T) {
			n, err := s.NumKeys(ctx)
			if err != nil || n != int64(len(model)) {
				t.Fatalf("NumKeys = %d, %v; want %d", n, err, len(model))
			}
			for _, k := range []string{"a", "b", "c", "a/b"} {
				_, want := model[k]
				if got, err := s.Check(ctx, k); err != nil || got != want {
					t.Fatalf("Check(%q) = %v, %v; want %v", k, got, err, want)
				}
			}
		},
	})
}

// refCounter reads a counter the simple way: a missing key is 0, and the
// value must start with an optionally signed decimal number (the generated
// values never start with white space).
func refCounter(model map[string][]byte, k string) (int64, bool) {
	v, ok := model[k]
	if !ok {
		return 0, true
	}
	end := 0
	if end < len(v) && v[end] == '-' {
		end++
	}
	for end < len(v) && '0' <= v[end] && v[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(string(v[:end]), 10, 64)
	return n, err == nil
}
