// Command testbackend is the backend the zero502 lb acceptance suite and bench/lb.sh put behind
// the load balancer: the lab's backend.py in Go, plus what our tests need to prove more than the
// lab checks (per-path request counters, a sick switch, a backend that drops a request after
// reading it, a body that trickles).
//
//	go run ./infra/lb/testbackend --port 9001 --name a
//
// Endpoints (every response carries X-Backend: NAME unless the connection is dropped):
//
//	GET  /                 200 "NAME\n" (500 while sick)
//	GET  /health           200 "ok" (503 while sick)
//	GET  /sick, /well      make the backend sick / well again (call them directly, not via the LB)
//	GET  /hang?s=30        silent for s seconds (default 30), then 200
//	GET  /slow?ms=N&id=X   sleeps N ms, then 200 "X\n"
//	GET  /big?size=N&framing=length|chunked|close
//	                       N bytes (default 1 MiB) of a deterministic pattern; X-Body-Sha256 says
//	                       its sha256; framed by Content-Length, chunked, or closing the connection
//	GET  /slowbody?chunks=N&every=D&size=B
//	                       a chunked body of N chunks of B bytes, one every D (default 16 × 250ms × 1 KiB)
//	GET  /headers?hop=1    JSON of what arrived (method, uri, proto, host, remote address, headers);
//	                       hop=1 also sends hop-by-hop headers in the response
//	POST /upload           JSON {"length":N,"sha256":"…"} of the request body
//	ANY  /drop             reads the request (and body), counts it, then closes the connection
//	                       without answering: a backend dying mid-request
//	GET  /stats            JSON {"name","sick","requests":{"METHOD /path":count}} (not counted itself)
//
// On start it prints one JSON line {"name","addr"} to stdout, so a caller that passed --port 0
// learns the port.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/zero502/zero502/infra/stopsignal"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "testbackend:", err)
		os.Exit(1)
	}
}

func run() error {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 0, "port to listen on (0: any free port, printed on stdout)")
	name := flag.String("name", "", "backend name, in the body of / and in X-Backend (default: host:port)")
	idle := flag.Duration("idle-timeout", 75*time.Second, "how long an idle keep-alive connection is kept")
	flag.Parse()
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("--port %d: must be 0..65535", *port)
	}
	if *idle <= 0 {
		return fmt.Errorf("--idle-timeout %s: must be positive", *idle)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return fmt.Errorf("listen on %s:%d: %w (is the port free?)", *host, *port, err)
	}
	addr := ln.Addr().String()
	if *name == "" {
		*name = addr
	}
	b := newBackend(*name)
	line, _ := json.Marshal(map[string]string{"name": *name, "addr": addr})
	fmt.Println(string(line))

	srv := &http.Server{
		Handler:           b,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       *idle,
		ErrorLog:          slog.NewLogLogger(slog.NewTextHandler(os.Stderr, nil), slog.LevelWarn),
	}
	ctx, stop := stopsignal.Context(context.Background())
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
