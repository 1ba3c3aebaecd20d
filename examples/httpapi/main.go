// Command httpapi is a small payments API made safe to retry: the
// Idempotency-Key middleware (runtime/idemhttp) replays a retried request's
// response, and the generated wrapper of payments.Service.CreatePayment
// creates each payment once per merchant reference, committing the payment
// row and its idempotency record in one Postgres transaction.
//
//	go run ./examples/httpapi -addr 127.0.0.1:8080 -postgres postgres://127.0.0.1:5432/test
//
//	curl -i -X POST localhost:8080/payments \
//	  -H 'Authorization: Bearer sk_test_acme' \
//	  -H 'Idempotency-Key: "5f1c…"' \
//	  -d '{"reference":"order-1001","amount":4200,"currency":"EUR"}'
//
// See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/examples/httpapi/payments"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httpapi:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("httpapi", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	pgURL := fs.String("postgres", envOr("IDEM_POSTGRES_URL", "postgres://127.0.0.1:5432/test"), "PostgreSQL URL")
	schema := fs.String("schema", "httpapi", "Postgres schema for the payments and idempotency tables (created if missing)")
	lease := fs.Duration("lease", 3*time.Second, "Idempotency-Key lease: how soon a crashed request's key frees up")
	slowEvery := fs.Uint("slow-every", 0, "make every n-th reference (by hash) slow, 0 = none (testing)")
	slowDelay := fs.Duration("slow-delay", time.Second, "how slow a slow reference is")
	if err := fs.Parse(args); err != nil {
		return err
	}

	pool, err := pgxpool.New(ctx, *pgURL)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{*schema}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: creating schema: %w", err)
	}
	if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(*schema)); err != nil {
		return err
	}
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(*schema), pgstore.WithSweeper(time.Hour))
	if err != nil {
		return err
	}
	defer store.Close()
	g := idem.NewGuard(store, idem.WithObserver(idem.ObserverFunc(func(e idem.Event) {
		if e.Outcome == idem.OutcomeStoreError || e.Outcome == idem.OutcomeLeaseLost {
			slog.Warn("idempotency", "func", e.Func, "outcome", e.Outcome, "key", e.Key, "err", e.Err)
		}
	})))

	svc := payments.NewService(pool, store, *schema)
	svc.SlowEvery, svc.SlowDelay = uint32(*slowEvery), *slowDelay
	if err := svc.Migrate(ctx); err != nil {
		return fmt.Errorf("postgres: payments table: %w", err)
	}
	mw, err := idemhttp.New(g,
		idemhttp.WithPrincipal(payments.Authenticate),
		idemhttp.WithCall(idemcall.WithName("httpapi.requests")),
		idemhttp.WithCall(idemcall.WithLease(*lease)),
		idemhttp.WithFingerprintHeaders("Content-Type"),
		idemhttp.WithMaxRequestBytes(64<<10),
	)
	if err != nil {
		return err
	}
	api := payments.NewAPI(payments.NewIdempotentService(svc, g))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mw.Handler(api.Routes()), ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
