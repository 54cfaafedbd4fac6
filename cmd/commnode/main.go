package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: commnode demo [-ranks N]")
		return 2
	}
	switch args[0] {
	case "demo":
		fs := flag.NewFlagSet("demo", flag.ContinueOnError)
		fs.SetOutput(stderr)
		ranks := fs.Int("ranks", 4, "in-process ranks")
		timeout := fs.Duration("timeout", time.Minute, "bound on the whole demo")
		verbose := fs.Bool("v", false, "log engine events to stderr")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		level := slog.LevelWarn
		if *verbose {
			level = slog.LevelDebug
		}
		logger := slog.New(tint.NewHandler(stderr, &tint.Options{Level: level}))
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		defer cancel()
		if err := demo(ctx, *ranks, logger, stdout); err != nil {
			fmt.Fprintln(stderr, "commnode demo:", err)
			return 1
		}
		return 0
	default:
		fmt.Fprintf(stderr, "commnode: unknown command %q\n", args[0])
		return 2
	}
}
