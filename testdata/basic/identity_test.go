package basic

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestRecordIdentity: a generated wrapper's records carry its Spec's
// name, version and signature, and a record at its key that another
// function wrote (another signature under the same name=: another
// module's function, a hand-written idem.Do) is ErrFunctionMismatch,
// never replayed, and the function does not run.
func TestRecordIdentity(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	g := idem.NewGuard(st)
	api := NewIdempotent(g)
	req := InvoiceRequest{CustomerID: "c9", OrderID: "o9", Amount: 7, Due: time.Unix(1e9, 0)}
	if _, err := api.CreateInvoice(ctx, req); err != nil {
		t.Fatal(err)
	}
	key, err := api.CreateInvoiceKey(req)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	h, body, ok, err := idemimpl.SplitRecord(rec.Result)
	if err != nil || !ok {
		t.Fatalf("record without an identity header: ok=%v, %v", ok, err)
	}
	spec := idemSpecCreateInvoice
	want := idemimpl.RecordHeader{Signature: spec.Signature}
	if diff := cmp.Diff(want, h); diff != "" || len(spec.Signature) != 16 {
		t.Fatalf("header (-want +got):\n%s (signature %q)", diff, spec.Signature)
	}

	// The same record as another function with this name would have
	// written it: same key and payload, another signature. The header
	// holds only the signature; its scratch Spec has a name of its own,
	// since in one process a second Spec cannot take spec's.
	other := *spec
	other.Name, other.Signature = spec.Name+".other", "another-function"
	forged := append(headerOf(&other), body...)
	if err := st.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	owner := idemstore.Token{9}
	res, err := st.Claim(ctx, idemstore.ClaimRequest{Key: key, Fingerprint: rec.Fingerprint, Owner: owner, Lease: time.Minute, TTL: time.Hour})
	if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
		t.Fatalf("claim: %v, %v", res.Status, err)
	}
	l := idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
	if err := st.Complete(ctx, l, idemstore.Result{Data: forged}); err != nil {
		t.Fatal(err)
	}
	before := executions.Load()
	got, err := api.CreateInvoice(ctx, req)
	if !errors.Is(err, idem.ErrFunctionMismatch) || got != nil {
		t.Errorf("over another function's record: %v, %v; want ErrFunctionMismatch", got, err)
	}
	if n := executions.Load() - before; n != 0 {
		t.Errorf("ran %d times over another function's record, want 0", n)
	}
}

// headerOf is the identity header the Guard writes for spec's records,
// read back from a record of a scratch guard.
func headerOf(spec *idem.Spec) []byte {
	s := memstore.New()
	c, k := idemimpl.Begin(idem.NewGuard(s), spec)
	k.Key().String("header")
	key, _ := c.StoreKey()
	c, k = idemimpl.Begin(idem.NewGuard(s), spec)
	k.Key().String("header")
	_, _ = idem.Do(context.Background(), c, func(context.Context) (*Invoice, error) { return nil, nil })
	rec, _ := s.Get(context.Background(), key)
	_, body, _, _ := idemimpl.SplitRecord(rec.Result)
	return rec.Result[:len(rec.Result)-len(body)]
}
