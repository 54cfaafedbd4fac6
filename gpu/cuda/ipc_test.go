package cuda

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

func TestIPCHandleMarshal(t *testing.T) {
	var h IPCHandle
	for i := range h.b {
		h.b[i] = byte(i * 7)
	}
	data, err := h.MarshalBinary()
	ok(t, err)
	if len(data) != 68 {
		t.Fatalf("MarshalBinary: %d bytes, want 68", len(data))
	}
	var back IPCHandle
	ok(t, back.UnmarshalBinary(data))
	if back != h {
		t.Error("IPCHandle changed in a marshalling round trip")
	}
	var ev IPCEventHandle
	wantErr(t, "a memory handle unmarshalled as an event's", ev.UnmarshalBinary(data), ErrInvalid)
	evData, err := IPCEventHandle{b: h.b}.MarshalBinary()
	ok(t, err)
	wantErr(t, "an event handle unmarshalled as memory's", back.UnmarshalBinary(evData), ErrInvalid)
	ok(t, ev.UnmarshalBinary(evData))
	if ev.b != h.b {
		t.Error("IPCEventHandle changed in a marshalling round trip")
	}
	for _, bad := range [][]byte{nil, data[:67], append(data[:68:68], 0), []byte(strings.Repeat("x", 68))} {
		wantErr(t, fmt.Sprintf("UnmarshalBinary of %d bytes", len(bad)), back.UnmarshalBinary(bad), ErrInvalid)
	}
	if back != h {
		t.Error("a failed UnmarshalBinary changed the handle")
	}
}

// FuzzIPCHandleUnmarshal feeds bytes such as another process might send:
// no input panics, and what is accepted marshals back to itself.
func FuzzIPCHandleUnmarshal(f *testing.F) {
	mem, _ := IPCHandle{}.MarshalBinary()
	ev, _ := IPCEventHandle{}.MarshalBinary()
	f.Add(mem)
	f.Add(ev)
	f.Add([]byte("GCIM"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m IPCHandle
		if m.UnmarshalBinary(data) == nil {
			back, _ := m.MarshalBinary()
			if !bytes.Equal(back, data) {
				t.Fatalf("IPCHandle: %x unmarshals, and marshals back as %x", data, back)
			}
		} else if m != (IPCHandle{}) {
			t.Fatal("a failed IPCHandle.UnmarshalBinary changed the handle")
		}
		var e IPCEventHandle
		if e.UnmarshalBinary(data) == nil {
			back, _ := e.MarshalBinary()
			if !bytes.Equal(back, data) || m.UnmarshalBinary(data) == nil {
				t.Fatalf("IPCEventHandle: %x unmarshals as both kinds, or marshals back as %x", data, back)
			}
		}
	})
}

func TestDeviceIPC(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	m := need{t}.mem(ctx.Alloc(4096))
	h, err := m.IPCHandle()
	ok(t, err)
	if h == (IPCHandle{}) {
		t.Fatal("IPCHandle: the zero handle")
	}
	again, err := m.IPCHandle()
	ok(t, err)
	if again != h {
		t.Error("two IPCHandles of one allocation differ")
	}
	// The driver refuses to map a process's own memory a second time.
	_, err = ctx.OpenIPC(h)
	wantErr(t, "OpenIPC of this process's own handle", err, ResultInvalidContext)

	e := need{t}.event(ctx.NewIPCEvent())
	eh, err := e.IPCHandle()
	ok(t, err)
	if eh == (IPCEventHandle{}) {
		t.Fatal("Event.IPCHandle: the zero handle")
	}
	// An interprocess event works as any other here, without timing.
	s := need{t}.stream(ctx.NewStream())
	ok(t, ctx.Memset(m, 0, 4096, 0))
	ok(t, s.WriteValue32(m, 64, 7))
	ok(t, e.Record(s))
	ok(t, e.Synchronize())
	if done, err := e.Query(); err != nil || !done {
		t.Errorf("Query after Synchronize: %v, %v", done, err)
	}
	out := make([]byte, 4)
	ok(t, ctx.CopyDtoH(out, m, 64))
	if !bytes.Equal(out, []byte{7, 0, 0, 0}) {
		t.Errorf("WriteValue32 before the record wrote %x", out)
	}
	_, err = e.Elapsed(e)
	wantErr(t, "Elapsed of an interprocess event", err, ErrInvalid)

	// Misuse, refused before the driver.
	plain := need{t}.event(ctx.NewEvent())
	_, err = plain.IPCHandle()
	wantErr(t, "IPCHandle of an event without CU_EVENT_INTERPROCESS", err, ErrInvalid)
	empty := need{t}.mem(ctx.Alloc(0))
	_, err = empty.IPCHandle()
	wantErr(t, "IPCHandle of an empty allocation", err, ErrInvalid)
	_, err = ctx.OpenIPC(IPCHandle{})
	wantErr(t, "OpenIPC of the zero handle", err, ErrInvalid)
	_, err = ctx.OpenIPCEvent(IPCEventHandle{})
	wantErr(t, "OpenIPCEvent of the zero handle", err, ErrInvalid)
	ok(t, empty.Close())
	_, err = empty.IPCHandle()
	wantErr(t, "IPCHandle after Close", err, ErrClosed)
	ok(t, plain.Close())
	_, err = plain.IPCHandle()
	wantErr(t, "Event.IPCHandle after Close", err, ErrClosed)
	ok(t, s.Synchronize())
	ok(t, e.Close())
	ok(t, m.Close())
}

func TestDeviceStreamValues(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	s := need{t}.stream(ctx.NewStream())
	m := need{t}.mem(ctx.Alloc(64))
	data := need{t}.mem(ctx.Alloc(16))
	pin := need{t}.host(ctx.AllocHost(16))
	ok(t, ctx.Memset(m, 0, 64, 0))
	ok(t, ctx.CopyHtoD(data, 0, pattern(16, 3)))

	// Each wait is met by the write queued before it, so the copy after
	// them runs; a wait never met would stall it.
	for _, tc := range []struct {
		write uint64
		wait  uint64
		cond  WaitCond
	}{
		{5, 5, WaitEQ},
		{5, 3, WaitGEQ},
		{1, 0xffffffff, WaitGEQ}, // past the wraparound
		{6, 4, WaitAnd},
		{0xfffffff0, 0x0e, WaitNor}, // bit 0 is clear in both
	} {
		clear(pin.Bytes())
		ok(t, s.WriteValue32(m, 8, uint32(tc.write)))
		ok(t, s.WaitValue32(m, 8, uint32(tc.wait), tc.cond))
		ok(t, s.CopyDtoH(pin.Bytes(), data, 0))
		err := s.Synchronize()
		if errors.Is(err, ResultNotSupported) && tc.cond == WaitNor {
			t.Logf("the device cannot wait for NOR: %v", err)
			continue
		}
		ok(t, err)
		if !bytes.Equal(pin.Bytes(), pattern(16, 3)) {
			t.Errorf("32-bit %d %v %d: the copy after the wait did not run", tc.write, tc.cond, tc.wait)
		}
	}
	ok(t, s.WriteValue64(m, 16, 1<<40|3))
	ok(t, s.WaitValue64(m, 16, 1<<40, WaitGEQ))
	ok(t, s.Synchronize())
	out := make([]byte, 8)
	ok(t, ctx.CopyDtoH(out, m, 16))
	if !bytes.Equal(out, []byte{3, 0, 0, 0, 0, 1, 0, 0}) {
		t.Errorf("WriteValue64 wrote %x", out)
	}

	// Misuse, refused before the driver.
	wantErr(t, "WriteValue32 at an unaligned offset", s.WriteValue32(m, 2, 1), ErrInvalid)
	wantErr(t, "WriteValue64 at an unaligned offset", s.WriteValue64(m, 4, 1), ErrInvalid)
	wantErr(t, "WaitValue64 at an unaligned offset", s.WaitValue64(m, 12, 1, WaitEQ), ErrInvalid)
	wantErr(t, "WriteValue32 past the end", s.WriteValue32(m, 64, 1), ErrInvalid)
	wantErr(t, "WriteValue64 over the end", s.WriteValue64(m, 60, 1), ErrInvalid)
	wantErr(t, "WaitValue32 at a negative offset", s.WaitValue32(m, -4, 1, WaitEQ), ErrInvalid)
	wantErr(t, "WaitValue32 with an unknown condition", s.WaitValue32(m, 0, 1, WaitCond(4)), ErrInvalid)
	wantErr(t, "WriteValue32 to nil memory", s.WriteValue32(nil, 0, 1), ErrInvalid)
	if got := WaitCond(9).String(); got != "WaitCond(9)" {
		t.Errorf("WaitCond(9).String() = %q", got)
	}
	other := need{t}.ctx(testDevices(t)[len(testDevices(t))-1].PrimaryContext())
	if other.Device() != ctx.Device() {
		om := need{t}.mem(other.Alloc(8))
		wantErr(t, "WriteValue64 to another context's memory", s.WriteValue64(om, 0, 1), ErrInvalid)
	}
	ok(t, other.Close())
	ok(t, s.Synchronize())

	ok(t, s.Close())
	wantErr(t, "WriteValue32 on a closed stream", s.WriteValue32(m, 0, 1), ErrClosed)
}

// TestDeviceStreamPingPong has two streams of one context take turns
// through flags in device memory, each synchronized by its own goroutine,
// as ranks of one process do in a collective: in each round a copies a
// block to x and raises its flag; b waits for it, copies x to y and
// raises its own; a waits for that and copies y out. Each stream waits
// for the other's work between its own, so neither Synchronize returns
// unless both streams run at once.
func TestDeviceStreamPingPong(t *testing.T) {
	const rounds, n = 50, 1<<12 + 24
	ctx := testContext(t, testDevices(t)[0])
	src := need{t}.mem(ctx.Alloc(rounds * n))
	x := need{t}.mem(ctx.Alloc(n))
	y := need{t}.mem(ctx.Alloc(n))
	flags := need{t}.mem(ctx.Alloc(16)) // a's at 0, b's at 8
	out := need{t}.host(ctx.AllocHost(rounds * n))
	a := need{t}.stream(ctx.NewStream())
	b := need{t}.stream(ctx.NewStream())
	want := pattern(rounds*n, 6)
	ok(t, ctx.CopyHtoD(src, 0, want))
	ok(t, ctx.Memset(flags, 0, 16, 0))
	clear(out.Bytes())

	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		errs[0] = func() error {
			for i := range rounds {
				for _, step := range []func() error{
					func() error { return a.CopyDtoD(x, 0, src, i*n, n) },
					func() error { return a.WriteValue64(flags, 0, uint64(i+1)) },
					func() error { return a.WaitValue64(flags, 8, uint64(i+1), WaitGEQ) },
					func() error { return a.CopyDtoH(out.Bytes()[i*n:(i+1)*n], y, 0) },
				} {
					if err := step(); err != nil {
						return err
					}
				}
			}
			return a.Synchronize()
		}()
	})
	wg.Go(func() {
		errs[1] = func() error {
			for i := range rounds {
				for _, step := range []func() error{
					func() error { return b.WaitValue64(flags, 0, uint64(i+1), WaitGEQ) },
					func() error { return b.CopyDtoD(y, 0, x, 0, n) },
					func() error { return b.WriteValue64(flags, 8, uint64(i+1)) },
				} {
					if err := step(); err != nil {
						return err
					}
				}
			}
			return b.Synchronize()
		}()
	})
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("stream %c: %v", 'a'+i, err)
		}
	}
	for i := range rounds {
		if !bytes.Equal(out.Bytes()[i*n:(i+1)*n], want[i*n:(i+1)*n]) {
			t.Errorf("round %d: the block came back changed", i)
		}
	}
	for _, c := range []interface{ Close() error }{a, b, out, flags, y, x, src} {
		ok(t, c.Close())
	}
}

// ipcChildEnv hands TestIPCChild, in a child process, the handles of its
// parent, TestDeviceIPCProcesses: "memory event", each hex.
const ipcChildEnv = "GOCOMMS_CUDA_IPC_CHILD"

// ipcData is the size of each of the two data areas of the shared
// allocation; the flag follows them.
const ipcData = 1<<16 + 8

// TestDeviceIPCProcesses shares memory and an event with a child process,
// which reads what the parent wrote, writes its own, and raises a flag in
// the shared memory that the parent's stream waits for; then it records
// the event after a second write, and the parent's stream waits for that.
// The child says on standard output which step it reached, and the parent
// on the child's standard input: the child runs the work that meets a
// wait only once the parent has queued the wait.
func TestDeviceIPCProcesses(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	m := need{t}.mem(ctx.Alloc(2*ipcData + 8))
	ok(t, ctx.Memset(m, 0, m.Len(), 0))
	ok(t, ctx.CopyHtoD(m, 0, pattern(ipcData, 1)))
	e := need{t}.event(ctx.NewIPCEvent())
	h, err := m.IPCHandle()
	ok(t, err)
	eh, err := e.IPCHandle()
	ok(t, err)
	hb, _ := h.MarshalBinary()
	eb, _ := eh.MarshalBinary()

	cmd := exec.Command(os.Args[0], "-test.run=^TestIPCChild$", "-test.v", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), ipcChildEnv+"="+hex.EncodeToString(hb)+" "+hex.EncodeToString(eb))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	ok(t, err)
	stdin, err := cmd.StdinPipe()
	ok(t, err)
	// A child still waiting for the parent's word when it fails ends at
	// once, not at its deadline.
	defer stdin.Close()
	ok(t, cmd.Start())
	var log strings.Builder
	lines := bufio.NewScanner(stdout)
	// next reads the child's output up to the line that says it reached
	// step.
	next := func(step string) {
		t.Helper()
		for lines.Scan() {
			log.WriteString(lines.Text() + "\n")
			if lines.Text() == "ipc child: "+step {
				return
			}
		}
		_ = cmd.Wait()
		t.Fatalf("the child ended before %s:\n%s%s", step, log.String(), stderr.String())
	}
	// tell tells the child that the parent reached step.
	tell := func(step string) {
		t.Helper()
		if _, err := io.WriteString(stdin, "ipc parent: "+step+"\n"); err != nil {
			t.Fatalf("telling the child %s: %v", step, err)
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("child's output:\n%s%s", log.String(), stderr.String())
		}
	}()

	s := need{t}.stream(ctx.NewStream())
	pin := need{t}.host(ctx.AllocHost(ipcData))
	next("opened")
	ok(t, s.WaitValue64(m, 2*ipcData, 1, WaitEQ))
	ok(t, s.CopyDtoH(pin.Bytes(), m, ipcData))
	// The child raises the flag only once told: until then the wait
	// holds the copy back.
	if done, err := s.Query(); done || err != nil {
		t.Fatalf("Stream.Query before the flag: %v, %v; want the stream held by its wait", done, err)
	}
	tell("waiting for the flag")
	ok(t, s.Synchronize())
	if !bytes.Equal(pin.Bytes(), pattern(ipcData, 2)) {
		t.Error("after the child's flag, its data is not in the shared memory")
	}
	next("recorded")
	ok(t, s.Wait(e))
	ok(t, s.CopyDtoH(pin.Bytes(), m, 0))
	// A GPU may have run the child's record already, but the fake driver
	// runs it only when the child synchronizes: a query runs the parent's
	// stream as far as it can go meanwhile, which is not past the wait.
	_, err = s.Query()
	ok(t, err)
	tell("waiting for the event")
	ok(t, s.Synchronize())
	if !bytes.Equal(pin.Bytes(), pattern(ipcData, 3)) {
		t.Error("after the child's event, its second write is not in the shared memory")
	}
	ok(t, e.Synchronize())
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(log.String(), "--- PASS: TestIPCChild") {
		t.Error("TestIPCChild did not pass in the child")
	}
	if strings.Contains(stderr.String(), "fakecuda: leak") {
		t.Error("the child released a context with objects still live in it")
	}
	ok(t, s.Close())
	ok(t, e.Close())
	ok(t, m.Close())
}

// TestIPCChild is TestDeviceIPCProcesses's child; it skips unless run as
// that.
func TestIPCChild(t *testing.T) {
	arg := os.Getenv(ipcChildEnv)
	if arg == "" {
		t.Skip("skip: run by TestDeviceIPCProcesses in a child process")
	}
	hexMem, hexEvent, _ := strings.Cut(arg, " ")
	var h IPCHandle
	var eh IPCEventHandle
	b, err := hex.DecodeString(hexMem)
	ok(t, err)
	ok(t, h.UnmarshalBinary(b))
	b, err = hex.DecodeString(hexEvent)
	ok(t, err)
	ok(t, eh.UnmarshalBinary(b))

	parent := bufio.NewReader(os.Stdin)
	// await waits for the parent to say that it reached step.
	await := func(step string) {
		t.Helper()
		line, err := parent.ReadString('\n')
		if err != nil || line != "ipc parent: "+step+"\n" {
			t.Fatalf("waiting for the parent's %q, read %q: %v", step, line, err)
		}
	}

	ctx := testContext(t, testDevices(t)[0])
	m, err := ctx.OpenIPC(h)
	ok(t, err)
	if m.Len() != 2*ipcData+8 {
		t.Fatalf("the opened memory holds %d bytes, want %d", m.Len(), 2*ipcData+8)
	}
	_, err = m.IPCHandle()
	wantErr(t, "IPCHandle of opened memory", err, ErrInvalid)
	e, err := ctx.OpenIPCEvent(eh)
	ok(t, err)
	got := make([]byte, ipcData)
	ok(t, ctx.CopyDtoH(got, m, 0))
	if !bytes.Equal(got, pattern(ipcData, 1)) {
		t.Fatal("the opened memory does not hold what the parent wrote")
	}
	s := need{t}.stream(ctx.NewStream())
	pin := need{t}.host(ctx.AllocHost(ipcData))
	fmt.Println("ipc child: opened")
	await("waiting for the flag")
	copy(pin.Bytes(), pattern(ipcData, 2))
	ok(t, s.CopyHtoD(m, ipcData, pin.Bytes()))
	ok(t, s.WriteValue64(m, 2*ipcData, 1))
	ok(t, s.Synchronize())

	copy(pin.Bytes(), pattern(ipcData, 3))
	ok(t, s.CopyHtoD(m, 0, pin.Bytes()))
	ok(t, e.Record(s))
	fmt.Println("ipc child: recorded")
	await("waiting for the event")
	ok(t, s.Synchronize()) // where the fake driver runs the write and the record
	ok(t, e.Close())
	ok(t, m.Close())
	wantErr(t, "second Close of opened memory", m.Close(), ErrClosed)
}

// TestDeviceMemOps queues writes and waits in batches: a wait in one
// stream's batch holds the write after it until another stream's batch
// meets it, a batch longer than one driver call keeps its order, and
// misuse is refused before anything is queued.
func TestDeviceMemOps(t *testing.T) {
	ctx := testContext(t, testDevices(t)[0])
	n := need{t}
	a, b := n.stream(ctx.NewStream()), n.stream(ctx.NewStream())
	const words = 600 // three driver calls' worth
	m := n.mem(ctx.Alloc(8 * words))
	ok(t, ctx.Memset(m, 0, 8*words, 0))

	// a waits for word 0 to reach 2, then writes 7 to word 1; b writes
	// word 0, first 1 then 2.
	ok(t, a.MemOps([]MemOp{{Mem: m, Off: 0, Value: 2, Wait: true, Cond: WaitGEQ}, {Mem: m, Off: 8, Value: 7}}))
	ok(t, b.MemOps([]MemOp{{Mem: m, Off: 0, Value: 1}, {Mem: m, Off: 0, Value: 2}}))
	ok(t, b.Synchronize())
	ok(t, a.Synchronize())
	got := make([]byte, 16)
	ok(t, ctx.CopyDtoH(got, m, 0))
	if v := binary.LittleEndian.Uint64(got[8:]); v != 7 {
		t.Errorf("the write after the wait left %d, want 7", v)
	}

	// Every word written twice, in order: the second value stays.
	var ops []MemOp
	for pass := range uint64(2) {
		for w := range words {
			ops = append(ops, MemOp{Mem: m, Off: 8 * w, Value: uint64(w)<<8 | pass})
		}
	}
	ok(t, a.MemOps(ops))
	ok(t, a.Synchronize())
	all := make([]byte, 8*words)
	ok(t, ctx.CopyDtoH(all, m, 0))
	for w := range words {
		if v := binary.LittleEndian.Uint64(all[8*w:]); v != uint64(w)<<8|1 {
			t.Fatalf("word %d is %#x after the batch, want %#x", w, v, uint64(w)<<8|1)
		}
	}

	// A bad operation anywhere refuses the whole batch.
	write := MemOp{Mem: m, Off: 0, Value: 99}
	for _, tc := range []struct {
		what string
		bad  MemOp
	}{
		{"an unaligned word", MemOp{Mem: m, Off: 4, Value: 1}},
		{"a word past the end", MemOp{Mem: m, Off: 8 * words, Value: 1}},
		{"an unknown condition", MemOp{Mem: m, Wait: true, Cond: WaitCond(4)}},
		{"nil memory", MemOp{Value: 1}},
	} {
		wantErr(t, tc.what, a.MemOps([]MemOp{write, tc.bad}), ErrInvalid)
	}
	ok(t, a.Synchronize())
	ok(t, ctx.CopyDtoH(got[:8], m, 0))
	if v := binary.LittleEndian.Uint64(got); v == 99 {
		t.Error("a refused batch queued its first write")
	}
	ok(t, a.MemOps(nil))
}
