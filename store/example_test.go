package store_test

import (
	"context"
	"fmt"

	"github.com/gocomms/gocomms/store"
)

func ExampleMemory() {
	ctx := context.Background()
	s := store.NewMemory()
	defer s.Close()

	// Ranks count themselves in; the counter reads as decimal text.
	s.Add(ctx, "joined", 1)
	n, _ := s.Add(ctx, "joined", 1)
	v, _ := s.Get(ctx, "joined")
	fmt.Println(n, string(v))

	// CompareSet elects whoever comes first; the others learn the winner.
	first, _ := s.CompareSet(ctx, "leader", nil, []byte("rank 1"))
	second, _ := s.CompareSet(ctx, "leader", nil, []byte("rank 2"))
	fmt.Println(string(first), "/", string(second))
	// Output:
	// 2 2
	// rank 1 / rank 1
}

func ExampleWithPrefix() {
	ctx := context.Background()
	base := store.NewMemory()
	defer base.Close()

	a, b := store.WithPrefix(base, "comm-a"), store.WithPrefix(base, "comm-b")
	a.Set(ctx, "rank/0", []byte("10.0.0.1:29500"))
	b.Set(ctx, "rank/0", []byte("10.0.0.2:29500"))

	va, _ := a.Get(ctx, "rank/0")
	ok, _ := base.Check(ctx, "comm-b/rank/0")
	n, _ := a.NumKeys(ctx) // counts the whole store, as in PyTorch
	fmt.Println(string(va), ok, n)
	// Output: 10.0.0.1:29500 true 2
}
