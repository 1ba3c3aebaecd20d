// Package payments is the business layer of the httpapi example: a
// payment is created at most once per (account, merchant reference), and
// the row and the idempotency record commit in one Postgres transaction.
package payments

//go:generate go tool idemgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/pgstore"
)

// PaymentRequest asks to charge an account.
type PaymentRequest struct {
	AccountID string
	// Reference is the merchant's own identifier of the purchase (an order
	// number): the business key. Two requests with one reference are one
	// payment, whatever their Idempotency-Key headers.
	Reference string
	Amount    int64 // minor units
	Currency  string
}

// Payment is a created payment.
type Payment struct {
	ID        string    `json:"id"`
	AccountID string    `json:"account_id"`
	Reference string    `json:"reference"`
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	CreatedAt time.Time `json:"created_at"`
}

// ErrInvalid is a request that can never succeed.
var ErrInvalid = errors.New("invalid payment request")

// Service creates payments in Postgres.
type Service struct {
	pool  *pgxpool.Pool
	store *pgstore.Store
	table string // quoted, schema-qualified payments table

	// SlowEvery and SlowDelay make every SlowEvery-th reference (by hash)
	// take SlowDelay before it is charged: a slow payment gateway, for the
	// end-to-end test's client timeouts.
	SlowEvery uint32
	SlowDelay time.Duration
}

// NewService returns a Service writing to schema.payments; store must be
// the pgstore the Guard uses, over the same database.
func NewService(pool *pgxpool.Pool, store *pgstore.Store, schema string) *Service {
	return &Service{pool: pool, store: store, table: pgx.Identifier{schema, "payments"}.Sanitize()}
}

// Migrate creates the payments table. There is deliberately no unique
// constraint on (account_id, reference): exactly-once is the idempotency
// layer's job here, and a duplicate would show up as a second row.
func (s *Service) Migrate(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.table+` (
		id         text PRIMARY KEY,
		account_id text NOT NULL,
		reference  text NOT NULL,
		amount     bigint NOT NULL,
		currency   text NOT NULL,
		fence      bigint NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now()
	)`)
	return err
}

// CreatePayment charges the account once per merchant reference. The
// payment row and the idempotency record's completion commit in one
// transaction (pgstore.InTx): a crash before COMMIT leaves neither, and the
// retry after the lease runs it again; a crash after leaves both, and the
// retry replays the payment.
//
//idem:name=payments.CreatePayment key=req.AccountID,req.Reference on_duplicate=wait lease=3s ttl=24h
func (s *Service) CreatePayment(ctx context.Context, req PaymentRequest) (*Payment, error) {
	if req.AccountID == "" || req.Reference == "" || req.Amount <= 0 || len(req.Currency) != 3 {
		return nil, fmt.Errorf("%w: reference, a positive amount and a 3-letter currency are required", ErrInvalid)
	}
	if s.SlowEvery > 0 {
		h := fnv.New32a()
		h.Write([]byte(req.Reference))
		if h.Sum32()%s.SlowEvery == 0 {
			select {
			case <-time.After(s.SlowDelay):
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
	}
	return pgstore.InTx(ctx, s.store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (*Payment, error) {
		var id [8]byte
		rand.Read(id[:])
		p := &Payment{ID: "pay_" + hex.EncodeToString(id[:]), AccountID: req.AccountID,
			Reference: req.Reference, Amount: req.Amount, Currency: req.Currency}
		fence, _ := idem.FenceFrom(ctx)
		err := tx.QueryRow(ctx, `INSERT INTO `+s.table+` (id, account_id, reference, amount, currency, fence)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
			p.ID, p.AccountID, p.Reference, p.Amount, p.Currency, int64(fence)).Scan(&p.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("inserting payment: %w", err)
		}
		p.CreatedAt = p.CreatedAt.UTC()
		return p, nil
	})
}

// Get returns an account's payment.
func (s *Service) Get(ctx context.Context, accountID, id string) (*Payment, error) {
	p := &Payment{}
	err := s.pool.QueryRow(ctx, `SELECT id, account_id, reference, amount, currency, created_at FROM `+s.table+`
		WHERE id = $1 AND account_id = $2`, id, accountID).
		Scan(&p.ID, &p.AccountID, &p.Reference, &p.Amount, &p.Currency, &p.CreatedAt)
	if err != nil {
		return nil, err
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return p, nil
}
