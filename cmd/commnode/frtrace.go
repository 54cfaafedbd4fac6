package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gocomms/gocomms"
	"github.com/gocomms/gocomms/cmd/commnode/internal/frtrace"
)

const frTraceUsage = "usage: commnode fr-trace [--json] [-prefix P] DIR"

// maxDumpFile bounds a file fr-trace reads: 2000 entries of every
// communicator of a rank fit many times over.
const maxDumpFile = 256 << 20

// frTraceCommand runs `commnode fr-trace DIR`: it reads the flight records
// every rank wrote to DIR (TORCHCOMM_FR_DUMP_TEMP_FILE=DIR/PREFIX) and
// reports what the ranks disagree on. It exits 0 once it has a report, 1
// when DIR holds no flight record, 2 on a usage error.
func frTraceCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("fr-trace", frTraceUsage, stderr)
	jsonOut := fs.Bool("json", false, "print the report as one JSON object")
	prefix := fs.String("prefix", "", "read only the files whose names start with this (the base of TORCHCOMM_FR_DUMP_TEMP_FILE)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, frTraceUsage)
		return 2
	}
	dumps, err := readDumps(fs.Arg(0), *prefix, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "commnode fr-trace:", err)
		return 1
	}
	rep := frtrace.Analyze(dumps)
	if *jsonOut {
		err = json.NewEncoder(stdout).Encode(rep)
	} else {
		err = frtrace.Write(stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(stderr, "commnode fr-trace:", err)
		return 1
	}
	return 0
}

// readDumps parses every file of dir whose name starts with prefix,
// leaving out hidden files (a dump being written) and, with a warning,
// files that hold no flight record.
func readDumps(dir, prefix string, stderr io.Writer) ([]gocomms.FlightDump, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var dumps []gocomms.FlightDump
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasPrefix(name, ".") || !strings.HasPrefix(name, prefix) {
			continue
		}
		some, err := readDumpFile(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintf(stderr, "commnode fr-trace: skipping %s: %v\n", name, err)
			continue
		}
		dumps = append(dumps, some...)
	}
	if len(dumps) == 0 {
		return nil, fmt.Errorf("no flight record in %s", dir)
	}
	return dumps, nil
}

func readDumpFile(path string) ([]gocomms.FlightDump, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > maxDumpFile {
		return nil, fmt.Errorf("%d bytes, more than a flight record", st.Size())
	}
	return frtrace.Parse(io.LimitReader(f, maxDumpFile))
}
