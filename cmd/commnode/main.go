package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	_ "github.com/gocomms/gocomms/nccl" // registers the "nccl" backend
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// A command takes its arguments and output streams and returns the exit
// status: 0 success, 1 failure, 2 usage error.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"demo", "run every collective on local ranks and check the results", demoCommand},
		{"launch", "start N local ranks of a command, torchrun style", launchCommand},
		{"verify", "check every collective, dtype, op and count against a reference", verifyCommand},
		{"bench", "time collectives and check their results, as nccl-tests", benchCommand},
		{"rma", "time one-sided window operations as mpi_rma.c, or --verify them", rmaCommand},
		{"sim", "simulate a collective on virtual time, with faults, over many ranks", simCommand},
		{"info", "show this host, its interfaces and GPUs, and the transports a rank would use", infoCommand},
		{"store", "serve a TCPStore (PyTorch-compatible) until interrupted", storeCommand},
		{"fr-trace", "report what the ranks' flight-record dumps in a directory disagree on", frTraceCommand},
		{"version", "print the module version, VCS revision and Go version", versionCommand},
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" { // help COMMAND: its flags
			return run([]string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "commnode: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: commnode COMMAND [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// parseFlags parses a command's flags: false with the exit status if the
// command is not to run, 0 where help was asked for (-h), else 2.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	case err != nil:
		return 2, false
	}
	return 0, true
}

// flagsSet returns the names of the flags args set on fs, which has
// parsed them.
func flagsSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// commandFlags returns the flag set of a command, which on a usage error
// prints usage, then every flag, to stderr.
func commandFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}
