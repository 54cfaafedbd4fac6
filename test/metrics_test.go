//go:build unix

package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestHTTPEndpoints runs a four-rank bench with --http on a free port per
// rank and stops rank 3 with SIGSTOP: the others' /readyz turns 503
// naming the operation they wait in, and each one's /metrics, parsed as
// Prometheus reads it, counts the operations its flight record shows
// ended before it: all of them but the stuck one. Once rank 3 goes on,
// they are ready again.
func TestHTTPEndpoints(t *testing.T) {
	const n = 4
	port := strconv.Itoa(freePort(t))
	addrs := make(chan [2]string, n)
	cmds := make([]*exec.Cmd, n)
	for r := range cmds {
		cmd := exec.Command(commnode, "bench", "-b", "1K", "-e", "1K", "-n", "100000000", "-w", "1", "-z",
			"--http", "127.0.0.1:0", "--stuck-after", "300ms", "--silence", "1m", "--timeout", "1m")
		cmd.Env = append(os.Environ(), "RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
			"LOCAL_WORLD_SIZE="+strconv.Itoa(n), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
		go func() {
			serves := regexp.MustCompile(`rank (\d+) serves http://([^/]+)/`)
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				if m := serves.FindStringSubmatch(lines.Text()); m != nil {
					addrs <- [2]string{m[1], m[2]}
				}
			}
		}()
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	urls := make([]string, n)
	for got := range n {
		select {
		case a := <-addrs:
			r, _ := strconv.Atoi(a[0])
			urls[r] = "http://" + a[1]
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d ranks said where they serve within 10s", got)
		}
	}
	// Every rank has run all-reduces: the job runs.
	for r, u := range urls {
		waitFor(t, 10*time.Second, fmt.Sprintf("rank %d counting all-reduces", r), func() bool {
			return opsOf(t, u)["all_reduce"] > 0
		})
	}

	if err := cmds[3].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The others wait in an all-reduce or, rank 3 stopped early enough,
	// in the barrier after the warm-up.
	stuck := regexp.MustCompile(`: (all_reduce|barrier) #(\d+) \(op_id \d+, \w+\) in flight for`)
	for r, u := range urls[:3] {
		var body string
		waitFor(t, 10*time.Second, fmt.Sprintf("rank %d unready naming the stuck operation", r), func() bool {
			var code int
			code, body = fetch(t, u+"/readyz")
			return code == http.StatusServiceUnavailable && stuck.MatchString(body)
		})
		m := stuck.FindStringSubmatch(body)
		name := m[1]
		seq, _ := strconv.Atoi(m[2])
		ops := opsOf(t, u)
		ended := 0.0
		for op, v := range ops {
			if op != "in_flight" {
				ended += v
			}
		}
		// Operations 0 to seq-1 ended; seq is in flight.
		if ended != float64(seq) || ops["in_flight"] != 1 {
			t.Errorf("rank %d: %v operations ended and %v in flight, stuck at #%d: want %d and 1: %v", r, ended, ops["in_flight"], seq, seq, ops)
		}
		_, flight := fetch(t, u+"/debug/flight")
		var dump struct {
			Dropped int `json:"dropped"`
			Entries []struct {
				Seq   int    `json:"seq"`
				Op    string `json:"op"`
				State string `json:"state"`
			} `json:"entries"`
		}
		if err := json.Unmarshal([]byte(flight), &dump); err != nil {
			t.Fatalf("rank %d: /debug/flight: %v: %.300s", r, err, flight)
		}
		done := dump.Dropped
		for _, e := range dump.Entries {
			if e.State == "completed" {
				done++
			}
		}
		last := dump.Entries[len(dump.Entries)-1]
		if float64(done) != ended || last.Seq != seq || last.Op != name || last.State != "started" {
			t.Errorf("rank %d: the flight record has %d operations ended and ends with %s #%d %s; /metrics %v ended, /readyz %s #%d stuck",
				r, done, last.Op, last.Seq, last.State, ended, name, seq)
		}
	}

	if err := cmds[3].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "rank 0 ready again after SIGCONT", func() bool {
		code, _ := fetch(t, urls[0]+"/readyz")
		return code == http.StatusOK
	})
	if code, _ := fetch(t, urls[3]+"/healthz"); code != http.StatusOK {
		t.Errorf("rank 3's /healthz: %d", code)
	}
}

// opsOf scrapes url's /metrics and returns the operations of the job's
// communicator that ended, by operation, and those in flight under
// "in_flight"; it fails on errors counted.
func opsOf(t *testing.T, url string) map[string]float64 {
	t.Helper()
	code, body := fetch(t, url+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("%s/metrics: %d %s", url, code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s/metrics: %v", url, err)
	}
	ops := map[string]float64{}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, m := range fams["gocomms_operations_total"].GetMetric() {
		if label(m, "comm") == "commnode" {
			ops[label(m, "op")] += m.GetCounter().GetValue()
		}
	}
	for _, m := range fams["gocomms_operations_in_flight"].GetMetric() {
		ops["in_flight"] += m.GetGauge().GetValue()
	}
	for _, m := range fams["gocomms_operation_errors_total"].GetMetric() {
		if v := m.GetCounter().GetValue(); v > 0 {
			t.Errorf("%s/metrics: %v errors of %s", url, v, m)
		}
	}
	return ops
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	// Generous: four ranks and the other packages' tests share two
	// cores, and a rank answered later than 5 s there once.
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, limit)
		}
	}
}
