// Command webhook receives Standard Webhooks deliveries
// (https://www.standardwebhooks.com) and handles each event once: the
// receiver (runtime/idemhook) verifies the signature, then claims the
// delivery's webhook-id, then runs the handler; a retry of a handled
// delivery is answered 200 at once, and a forged one 401 without touching
// the store.
//
//	WEBHOOK_SECRET=whsec_… go run ./examples/webhook -addr 127.0.0.1:8090
//
// The store here is the memory store; any idemstore.Store (Redis, PostgreSQL)
// shares the deduplication between instances.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhook"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// InvoicePaid is the event this endpoint handles.
type InvoicePaid struct {
	Type string `json:"type"`
	Data struct {
		Invoice string `json:"invoice"`
		Amount  int64  `json:"amount"`
	} `json:"data"`
}

// Ledger books paid invoices; a real one writes to a database.
type Ledger struct {
	log *slog.Logger
}

// Book records the payment of one invoice. The receiver runs it once per
// delivery ID.
func (l *Ledger) Book(ctx context.Context, ev InvoicePaid) error {
	if ev.Type != "invoice.paid" {
		return nil // not ours to handle; acknowledged
	}
	l.log.InfoContext(ctx, "booked", "invoice", ev.Data.Invoice, "amount", ev.Data.Amount)
	return nil
}

// newHandler is the endpoint: secrets are the signing secrets in force
// (several during a rotation).
func newHandler(g *idem.Guard, l *Ledger, secrets ...string) (http.Handler, error) {
	v, err := idemhook.NewStandardWebhooks(secrets...)
	if err != nil {
		return nil, err
	}
	rc, err := idemhook.New(g, v, l.Book, idemhook.WithName("example.invoices"))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/invoices", rc)
	return mux, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	secret := os.Getenv("WEBHOOK_SECRET")
	if secret == "" {
		return errors.New("set WEBHOOK_SECRET to the endpoint's signing secret (whsec_…)")
	}
	h, err := newHandler(idem.NewGuard(memstore.New()), &Ledger{log: slog.New(slog.NewTextHandler(stdout, nil))}, secret)
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
		fmt.Fprintln(os.Stderr, "webhook:", err)
		os.Exit(1)
	}
}
