// Package osyield lets other processes' threads run: a goroutine that
// polls memory another process writes yields its thread to them between
// polls, since the process it waits for may need the core when ranks
// outnumber cores. runtime.Gosched yields only to this process's
// goroutines.
package osyield
