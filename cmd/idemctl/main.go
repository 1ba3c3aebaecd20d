// Command idemctl inspects and repairs idempotency records in a Redis,
// PostgreSQL or file store: list, show, release (fenced), delete, stats,
// cleanup. See docs/OPERATIONS.md and `idemctl -h`.
//
//	idemctl -store redis://127.0.0.1:6379/0 list -older 1h    # owners running an hour or more
//	idemctl -store postgres://db/app?schema=idem show idem:billing.Charge:v0:9f…
//	idemctl -store file:///var/lib/app/idem release idem:billing.Charge:v0:9f…
//
// Exit status: 0 ok, 1 error, 2 key not found.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/idemgen/idemgen/cmd/idemctl/internal/idemctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := idemctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
