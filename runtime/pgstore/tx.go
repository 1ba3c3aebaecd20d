package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// CompleteInTx completes the guarded call running with ctx inside tx, so
// that the function's own writes in tx and the record's completion commit
// or roll back together. Call it from the guarded function, last in the
// transaction, with the value the function is about to return:
//
//	func placeOrder(ctx context.Context, o Order) (Receipt, error) {
//		tx, err := pool.Begin(ctx)
//		...
//		if _, err := tx.Exec(ctx, "INSERT INTO orders ...", ...); err != nil { ... }
//		rc := Receipt{OrderID: o.ID}
//		if err := store.CompleteInTx(ctx, tx, rc); err != nil { return Receipt{}, err }
//		return rc, tx.Commit(ctx)
//	}
//
// (InTx does the begin/commit/retry part for you.) It is the same fenced
// compare-and-set as Complete: if another owner took the key over, it
// returns an error wrapping idem.ErrLeaseLost and the transaction must
// roll back, so the stale owner's business write never lands. The row
// stays locked until tx ends, so no takeover can slip in before commit.
//
// After the function returns the Guard calls Complete as always; the store
// recognises the record as already completed by the same owner and fence
// with the same bytes and returns nil without writing. For that the value
// is encoded with the call's codec (idem.LeaseFrom: the generated codec of
// an idemgen wrapper's result type, else the Guard's).
// If the function returns a different value, the committed bytes stand and
// the Guard reports ErrTxResultMismatch.
func (s *Store) CompleteInTx(ctx context.Context, tx pgx.Tx, v any) error {
	l, codec, ok := idem.LeaseFrom(ctx)
	if !ok {
		return ErrNoLease
	}
	data, err := codec.Marshal(v)
	if err != nil {
		return fmt.Errorf("pgstore: complete in tx %s: encoding result: %w", l.Key, err)
	}
	if data == nil {
		data = []byte{}
	}
	tag, err := tx.Exec(ctx, s.q.completeInTx, l.Key, l.Owner[:], int64(l.Fence), data, micros(l.TTL), s.ts(), s.n.channel)
	if err != nil {
		return s.wrap(ctx, "complete in tx", l.Key, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: %s fence %d", idem.ErrLeaseLost, l.Key, l.Fence)
	}
	s.inTx.Add(inTxKey(l))
	return nil
}

// inTxKey names a lease in Store.inTx.
func inTxKey(l idemstore.Lease) string { return fmt.Sprint(l.Fence, "\x00", l.Key) }

// InTx runs fn in a transaction on the store's pool, completes the guarded
// call running with ctx in that same transaction (CompleteInTx) with fn's
// result, and commits: the business writes fn makes in tx and the record's
// completion take effect together or not at all. Use it as the body of a
// guarded function:
//
//	return pgstore.InTx(ctx, store, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (Receipt, error) {
//		_, err := tx.Exec(ctx, "INSERT INTO orders ...", ...)
//		return Receipt{OrderID: o.ID}, err
//	})
//
// A serialization failure or deadlock (SQLSTATE 40001, 40P01), in fn or at
// commit, rolls back and runs fn again in a new transaction, up to
// WithTxRetries times: fn must do all its database work through tx and be
// safe to re-run after a rollback. Any other error rolls back and is
// returned; the Guard then releases the key (or records the failure under
// on_failure=lock). If COMMIT itself fails ambiguously (the connection
// dropped), the transaction either committed (the record is completed;
// duplicates replay it) or not (the key is released): never half.
func InTx[R any](ctx context.Context, s *Store, opts pgx.TxOptions, fn func(ctx context.Context, tx pgx.Tx) (R, error)) (R, error) {
	var zero R
	if _, _, ok := idem.LeaseFrom(ctx); !ok {
		return zero, ErrNoLease
	}
	for attempt := 0; ; attempt++ {
		r, err := inTxOnce(ctx, s, opts, fn)
		if err == nil {
			return r, nil
		}
		if !IsSerializationFailure(err) || attempt >= s.cfg.txRetries || ctx.Err() != nil {
			if IsSerializationFailure(err) {
				return zero, fmt.Errorf("pgstore: transaction gave up after %d attempts: %w", attempt+1, err)
			}
			return zero, err
		}
		// Back off a little, with jitter, so the transactions that
		// conflicted do not collide again in lockstep.
		d := time.Duration(1<<min(attempt, 6))*time.Millisecond + rand.N(time.Millisecond)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return zero, fmt.Errorf("pgstore: in tx: %w (%w)", ctx.Err(), err)
		}
	}
}

func inTxOnce[R any](ctx context.Context, s *Store, opts pgx.TxOptions, fn func(context.Context, pgx.Tx) (R, error)) (R, error) {
	var zero R
	tx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return zero, s.wrap(ctx, "begin", "", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	r, err := fn(ctx, tx)
	if err != nil {
		return zero, err
	}
	if err := s.CompleteInTx(ctx, tx, r); err != nil {
		return zero, err
	}
	if err := tx.Commit(ctx); err != nil {
		return zero, s.wrap(ctx, "commit", "", err)
	}
	return r, nil
}

// IsSerializationFailure reports whether err is a serialization failure
// or a deadlock: a transaction Postgres aborted that may succeed if run
// again.
func IsSerializationFailure(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// StepInTx runs fn as the step name of the guarded call running with ctx
// (see idem.Step) in a transaction on the store's pool, and records the
// step's result in that same transaction before it commits: the business
// writes fn makes in tx and the step's recovery point take effect together
// or not at all. So a takeover after a crash finds either both (the step
// replays its recorded result without running) or neither (the step runs
// again, its writes never having landed). Use it inside the guarded
// function, with the Guard over s:
//
//	ch, err := pgstore.StepInTx(ctx, store, pgx.TxOptions{}, "debit", func(ctx context.Context, tx pgx.Tx) (Debit, error) {
//		var d Debit
//		err := tx.QueryRow(ctx, "UPDATE accounts SET balance = balance - $1 ... RETURNING ...", ...).Scan(&d.ID)
//		return d, err
//	})
//
// The step is recorded by the same fenced statement as SaveStep, run in
// tx: if another owner took the key over, the step returns an error
// wrapping idem.ErrLeaseLost and the transaction rolls back, so a stale
// owner's writes never land; the call's row stays locked until tx ends,
// so no takeover slips in before commit. A step the call recorded before
// (a resumed call) returns its result without running fn or opening a
// transaction. A serialization failure or deadlock in fn runs fn again in
// a new transaction, up to WithTxRetries times, as InTx does; fn must do
// all its database work through tx. If COMMIT fails, the error is
// returned and the step's writes and record either both committed or
// neither did.
func StepInTx[T any](ctx context.Context, s *Store, opts pgx.TxOptions, name string, fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var zero T
	p := &stepTx{s: s, name: name}
	defer func() {
		if p.tx != nil {
			p.tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // the step's error is the one to report
		}
	}()
	v, err := idem.Step(context.WithValue(ctx, stepTxKey{}, p), name, func(ctx context.Context) (T, error) {
		for attempt := 0; ; attempt++ {
			tx, err := s.pool.BeginTx(ctx, opts)
			if err != nil {
				return zero, s.wrap(ctx, "begin", "", err)
			}
			r, err := fn(ctx, tx)
			if err == nil {
				p.tx = tx // SaveStep records the step in it; committed below
				return r, nil
			}
			tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // fn's error is the one to report
			if !IsSerializationFailure(err) || attempt >= s.cfg.txRetries || ctx.Err() != nil {
				if IsSerializationFailure(err) {
					return zero, fmt.Errorf("pgstore: step %q: transaction gave up after %d attempts: %w", name, attempt+1, err)
				}
				return zero, err
			}
			d := time.Duration(1<<min(attempt, 6))*time.Millisecond + rand.N(time.Millisecond)
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return zero, fmt.Errorf("pgstore: step %q in tx: %w (%w)", name, ctx.Err(), err)
			}
		}
	})
	if err != nil || p.tx == nil {
		return v, err // fn failed, the step was not recorded (rolled back), or it replayed
	}
	// p.saved is false only when the Guard's store is not s: the step is
	// recorded already, outside tx, and its writes must land too.
	tx := p.tx
	p.tx = nil
	if err := tx.Commit(ctx); err != nil {
		return zero, s.wrap(ctx, "commit step "+name, "", err)
	}
	return v, nil
}

// stepTxKey carries a StepInTx's open transaction to SaveStep.
type stepTxKey struct{}

// stepTx is a StepInTx in progress: the transaction fn ran in, which
// SaveStep of the step name on s records the step in.
type stepTx struct {
	s     *Store
	name  string
	tx    pgx.Tx
	saved bool
}
