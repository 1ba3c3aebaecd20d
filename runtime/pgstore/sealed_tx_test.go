package pgstore

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestInTxUnderStoredForms: a Guard that seals (or compresses) its records
// completes an InTx call without an error. CompleteInTx writes the record
// in the transaction; the Guard's own Complete after the function must
// present the very bytes committed, although a seal draws a new nonce
// each time. The business write and the record commit together, the
// record is sealed at rest, and duplicates replay it without running.
func TestInTxUnderStoredForms(t *testing.T) {
	pool := poolWith(t, 4)
	ctx := context.Background()
	ring, err := idemseal.New(idemseal.Key{ID: "k1", Secret: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		opts   []idem.Option
		sealed bool
	}{
		{"sealed", []idem.Option{idem.WithSealer(ring)}, true},
		{"sealed and compressed", []idem.Option{idem.WithSealer(ring), idem.WithCompression(1)}, true},
		{"compressed", []idem.Option{idem.WithCompression(1)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, pool)
			acct := business(t, s)
			var outcomes []idem.Outcome
			opts := append([]idem.Option{idem.WithObserver(idem.ObserverFunc(func(e idem.Event) {
				if e.Final {
					outcomes = append(outcomes, e.Outcome)
				}
			}))}, tc.opts...)
			g := idem.NewGuard(s, opts...)
			var runs int
			var key string
			fn := func(ctx context.Context) (string, error) {
				l, _, _ := idem.LeaseFrom(ctx)
				key = l.Key
				return InTx(ctx, s, pgx.TxOptions{}, func(ctx context.Context, tx pgx.Tx) (string, error) {
					runs++
					_, err := tx.Exec(ctx, "UPDATE "+acct+" SET balance = balance - 10 WHERE id = 1")
					return "charged " + string(bytes.Repeat([]byte("x"), 64)), err
				})
			}
			want := "charged " + string(bytes.Repeat([]byte("x"), 64))
			for i := range 3 {
				if v, err := call(ctx, g, &spec, "pay-1", fn); err != nil || v != want {
					t.Fatalf("call %d: %q, %v; want the result and no error", i, v, err)
				}
			}
			if diff := cmp.Diff([]idem.Outcome{idem.OutcomeExecuted, idem.OutcomeReplayed, idem.OutcomeReplayed}, outcomes); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if runs != 1 || balance(t, s, acct) != 90 {
				t.Errorf("runs %d, balance %d: want one charge", runs, balance(t, s, acct))
			}
			rec, err := s.Get(ctx, key)
			if err != nil || rec.State != idemstore.StateCompleted {
				t.Fatalf("record %v, %v: want it completed", rec.State, err)
			}
			if tc.sealed && bytes.Contains(rec.Result, []byte("charged")) {
				t.Errorf("result %q stored in the clear under a sealing Guard", rec.Result)
			}
		})
	}
}
