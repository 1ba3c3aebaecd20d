// Command pgtx shows transactional completion with the Postgres store: the
// guarded function writes an order and completes its idempotency record in
// one transaction, so a crash between the two leaves neither, and a retry
// (after the crashed owner's lease) places the order exactly once.
//
//	go run ./examples/pgtx                 # place an order, then replay it
//	go run ./examples/pgtx -crash          # die between the write and the completion
//	go run ./examples/pgtx                 # the retry: runs once the lease has expired
//
// It reads IDEM_POSTGRES_URL (default postgres://127.0.0.1:5432/test).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// OrderRequest is what a client (or a redelivered message) sends.
type OrderRequest struct {
	OrderID    string // the caller's idempotency key
	Customer   string
	AmountCent int64
}

// Receipt is PlaceOrder's result, replayed to duplicates.
type Receipt struct {
	OrderID string `json:"order_id"`
	Fence   uint64 `json:"fence"`
	Total   int64  `json:"total"`
}

// placeOrderSpec is what idemgen would generate from
//
//	//idem:key=req.OrderID lease=1s ttl=24h
var placeOrderSpec = idem.Spec{Name: "examples/pgtx.PlaceOrder", Lease: time.Second, TTL: 24 * time.Hour}

// Shop places orders.
type Shop struct {
	g      *idem.Guard
	store  *pgstore.Store
	orders string // qualified orders table
	// afterWrite runs between the business write and the completion: the
	// place where a crash hurts most. Tests and -crash set it.
	afterWrite func()
}

// PlaceOrder is the idempotent wrapper (hand-written here; idemgen writes
// the same code): key = OrderID, the whole request fingerprinted so a
// reused OrderID with another payload is refused.
func (s *Shop) PlaceOrder(ctx context.Context, req OrderRequest) (Receipt, error) {
	c, k := idemimpl.Begin(s.g, &placeOrderSpec)
	k.Key().ID(req.OrderID)
	p := k.Payload()
	p.String(req.OrderID)
	p.String(req.Customer)
	p.Int(req.AmountCent)
	return idem.Do(ctx, c, func(ctx context.Context) (Receipt, error) { return s.placeOrder(ctx, req) })
}

// placeOrder is the business function. Its insert and the record's
// completion commit in one transaction (pgstore.InTx).
func (s *Shop) placeOrder(ctx context.Context, req OrderRequest) (Receipt, error) {
	return pgstore.InTx(ctx, s.store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (Receipt, error) {
		fence, _ := idem.FenceFrom(ctx)
		if _, err := tx.Exec(ctx, "INSERT INTO "+s.orders+" (id, customer, amount_cents, fence) VALUES ($1, $2, $3, $4)",
			req.OrderID, req.Customer, req.AmountCent, int64(fence)); err != nil {
			return Receipt{}, err
		}
		if s.afterWrite != nil {
			s.afterWrite()
		}
		return Receipt{OrderID: req.OrderID, Fence: fence, Total: req.AmountCent}, nil
	})
}

// open migrates the schema and returns a shop over it.
func open(ctx context.Context, pool *pgxpool.Pool, schema string) (*Shop, error) {
	if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
		return nil, err
	}
	orders := pgx.Identifier{schema, "orders"}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+orders+
		" (id text PRIMARY KEY, customer text NOT NULL, amount_cents bigint NOT NULL, fence bigint NOT NULL)"); err != nil {
		return nil, err
	}
	store, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
	if err != nil {
		return nil, err
	}
	return &Shop{g: idem.NewGuard(store), store: store, orders: orders}, nil
}

func main() {
	crash := flag.Bool("crash", false, "exit between the order insert and the completion")
	schema := flag.String("schema", "pgtx_example", "schema for the records and orders tables")
	order := flag.String("order", "order-42", "order ID (the idempotency key)")
	flag.Parse()
	url := os.Getenv("IDEM_POSTGRES_URL")
	if url == "" {
		url = "postgres://127.0.0.1:5432/test"
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	var afterWrite func()
	if *crash {
		afterWrite = func() {
			fmt.Println("order inserted, crashing before the commit")
			os.Exit(3)
		}
	}
	if err := run(ctx, os.Stdout, pool, *schema, *order, afterWrite); err != nil {
		log.Fatal(err)
	}
}

// run places the order twice: the first call runs (or takes over a
// crashed attempt), the second replays.
func run(ctx context.Context, w io.Writer, pool *pgxpool.Pool, schema, order string, afterWrite func()) error {
	shop, err := open(ctx, pool, schema)
	if err != nil {
		return err
	}
	defer shop.store.Close()
	shop.afterWrite = afterWrite
	req := OrderRequest{OrderID: order, Customer: "ada", AmountCent: 4200}
	for i := range 2 {
		r, err := shop.PlaceOrder(ctx, req)
		if errors.Is(err, idem.ErrInProgress) {
			fmt.Fprintln(w, "a previous attempt still holds the lease; retry in a second")
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "call %d: %+v\n", i+1, r)
	}
	return nil
}
