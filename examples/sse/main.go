// Command sse serves an answer streamed token by token as server-sent
// events, behind idemhttp's StreamHandler: the answer is produced once
// per Idempotency-Key, a retry with the same key gets the same events
// (live while the first request streams, replayed after), and a client
// whose connection dropped reconnects with its Last-Event-ID and gets
// the events after it.
//
//	go run ./examples/sse -addr 127.0.0.1:8091
//	curl -N -X POST -H 'Idempotency-Key: "q-1"' -d 'why is the sky blue' 127.0.0.1:8091/answer
//
// The store here is the memory store; the file store and Redis keep
// streams too (Redis shares them between instances).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// Model is a slow producer: it answers a question a token at a time,
// as a language model's API does. Runs counts the answers produced (the
// cost a duplicate must not pay twice).
type Model struct {
	Delay time.Duration
	Runs  atomic.Int64
}

// ServeHTTP streams the answer to the question in the request's body as
// server-sent events.
func (m *Model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.Runs.Add(1)
	q, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	for _, tok := range answer(string(q)) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(m.Delay):
		}
		fmt.Fprintf(w, "event: token\ndata: %s\n\n", tok)
		w.(http.Flusher).Flush()
	}
	fmt.Fprint(w, "event: done\ndata: {}\n\n")
}

// answer is the model's answer to q, as tokens.
func answer(q string) []string {
	return strings.Fields("Because of Rayleigh scattering: air scatters short (blue) wavelengths of sunlight " +
		"more than long ones, so blue light reaches the eye from every part of the sky. You asked: " + q)
}

// newHandler is the endpoint: POST /answer, guarded by the key.
func newHandler(g *idem.Guard, m *Model) (http.Handler, error) {
	mw, err := idemhttp.New(g, idemhttp.WithoutPrincipal(),
		idemhttp.WithCall(idemcall.WithName("example.sse.answer"), idemcall.WithLease(10*time.Second)))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /answer", mw.StreamHandler(m))
	return mux, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sse", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8091", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h, err := newHandler(idem.NewGuard(memstore.New()), &Model{Delay: 150 * time.Millisecond})
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(shut) //nolint:errcheck // exiting anyway
	}()
	fmt.Fprintln(stdout, "listening on", *addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sse:", err)
		os.Exit(1)
	}
}
