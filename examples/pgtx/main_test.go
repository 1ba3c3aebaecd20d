package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"

	"github.com/idemgen/idemgen/internal/testenv"
)

// setup returns a pool and a schema of its own, dropped afterwards.
func setup(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, testenv.PostgresURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+testenv.PostgresURL(), "start it (e.g. sudo service postgresql start) or set IDEM_POSTGRES_URL", err)
	t.Cleanup(pool.Close)
	schema := os.Getenv("PGTX_SCHEMA")
	if schema == "" {
		schema = "pgtx_test_" + testenv.RandName()
		t.Cleanup(func() {
			pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
		})
	}
	return pool, schema
}

// TestCrashHelper is the process that crashes: run by TestCrashLeavesNeither.
func TestCrashHelper(t *testing.T) {
	if os.Getenv("PGTX_CRASH") != "1" {
		t.Skip("not a test on its own (no CI dependency): the child process of TestCrashLeavesNeither")
	}
	pool, schema := setup(t)
	shop, err := open(context.Background(), pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	shop.afterWrite = func() { os.Exit(3) }                                                                // the process dies with the transaction open
	shop.PlaceOrder(context.Background(), OrderRequest{OrderID: "o-1", Customer: "ada", AmountCent: 4200}) //nolint:errcheck
	t.Fatal("unreachable: the process should have exited")
}

func countOrders(t *testing.T, pool *pgxpool.Pool, schema string) (n int, fence int64) {
	t.Helper()
	err := pool.QueryRow(context.Background(), "SELECT count(*), coalesce(max(fence), 0) FROM "+
		pgx.Identifier{schema, "orders"}.Sanitize()).Scan(&n, &fence)
	if err != nil {
		t.Fatal(err)
	}
	return n, fence
}

// TestCrashLeavesNeither: a process dies after inserting the order and
// before committing; afterwards there is neither an order nor a completed
// record. A retry is refused while the dead owner's lease lasts, then
// takes over and places the order exactly once; duplicates replay it.
func TestCrashLeavesNeither(t *testing.T) {
	pool, schema := setup(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PGTX_CRASH=1", "PGTX_SCHEMA="+schema)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("crashing process: %v (want exit 3)\n%s", err, out)
	}

	ctx := context.Background()
	shop, err := open(ctx, pool, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer shop.store.Close()
	if n, _ := countOrders(t, pool, schema); n != 0 {
		t.Fatalf("%d orders after the crash: the business write survived without its completion", n)
	}
	var state int
	var result []byte
	if err := pool.QueryRow(ctx, "SELECT state, result FROM "+shop.store.Table()).Scan(&state, &result); err != nil {
		t.Fatal(err)
	}
	if state != int(idemstore.StateInProgress) || result != nil {
		t.Fatalf("record after the crash: state %d result %q, want in progress without a result", state, result)
	}

	req := OrderRequest{OrderID: "o-1", Customer: "ada", AmountCent: 4200}
	var r Receipt
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err = shop.PlaceOrder(ctx, req)
		if !errors.Is(err, idem.ErrInProgress) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead owner's lease never expired")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r.Fence != 2 {
		t.Errorf("retry ran with fence %d, want 2 (a takeover of the crashed owner's fence 1)", r.Fence)
	}
	for range 3 {
		again, err := shop.PlaceOrder(ctx, req)
		if err != nil || again != r {
			t.Fatalf("duplicate: %+v %v, want the replay %+v", again, err, r)
		}
	}
	if n, fence := countOrders(t, pool, schema); n != 1 || fence != 2 {
		t.Fatalf("%d orders (fence %d), want exactly one, written by fence 2", n, fence)
	}
	// A reused order ID with another payload is refused, never replayed.
	if _, err := shop.PlaceOrder(ctx, OrderRequest{OrderID: "o-1", Customer: "eve", AmountCent: 1}); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Fatalf("reused key: %v, want ErrPayloadMismatch", err)
	}
}

// TestMainFlow runs the example's flow against a fresh schema: two calls,
// one order, the second call a replay.
func TestMainFlow(t *testing.T) {
	pool, schema := setup(t)
	var out strings.Builder
	if err := run(context.Background(), &out, pool, schema, "order-42", nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := countOrders(t, pool, schema); n != 1 {
		t.Fatalf("%d orders after two calls, want 1\n%s", n, out.String())
	}
	want := "call 1: {OrderID:order-42 Fence:1 Total:4200}\ncall 2: {OrderID:order-42 Fence:1 Total:4200}\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
