package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/gocomms/gocomms/store/bootstrap"
	"github.com/gocomms/gocomms/store/tcpstore"
)

// storeCommand runs `commnode store`: a standalone TCPStore server, for
// gocomms ranks and PyTorch processes alike, until interrupted; with
// GOCOMMS_STORE_TOKEN set, for gocomms processes given that token only.
func storeCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("store", "usage: commnode store [-host H] [-port P] [-v]", stderr)
	host := fs.String("host", "", "address to listen on (default: $GOCOMMS_STORE_BIND, else the interface address $MASTER_ADDR names, else every interface)")
	port := fs.Int("port", 29500, "port to listen on (0: a free one)")
	var log logFlags
	log.register(fs, "log connections and bad requests")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *port < 0 || *port > 65535 {
		fmt.Fprintln(stderr, "commnode store: -port must be in [0, 65535]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hostSet := false
	fs.Visit(func(f *flag.Flag) { hostSet = hostSet || f.Name == "host" })
	if !hostSet {
		// Bind where the job reaches the store, not every interface.
		*host, _ = os.LookupEnv(bootstrap.BindEnv)
		if master, ok := os.LookupEnv("MASTER_ADDR"); ok && master != "" {
			*host = bootstrap.ListenHost(ctx, strings.Trim(master, "[]"), os.LookupEnv)
		}
	}
	opts, _ := bootstrap.TokenOptions(os.LookupEnv)
	opts = append(opts, tcpstore.WithLogger(log.logger(stderr)))
	srv, err := tcpstore.Listen(ctx, net.JoinHostPort(*host, strconv.Itoa(*port)), opts...)
	if err != nil {
		fmt.Fprintln(stderr, "commnode store:", err)
		return 1
	}
	fmt.Fprintf(stdout, "store: serving at %s\n", srv.Addr())
	<-ctx.Done()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(stderr, "commnode store:", err)
		return 1
	}
	return 0
}
