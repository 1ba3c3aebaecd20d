package pointerpath

import (
	"context"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

func TestPointerPath(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	mk := func(tenant string, amount int) *Request {
		return &Request{Account: &Account{Base: Base{tenant}, ID: 1, Owner: &Person{Email: "e"}}, Amount: amount}
	}
	api.Transfer(ctx, mk("t", 1))
	api.Transfer(ctx, mk("t", 1))
	if _, err := api.Transfer(ctx, mk("t", 2)); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Errorf("same key, other amount: %v", err)
	}
	// The promoted Tenant is part of the key: another tenant is another call.
	if _, err := api.Transfer(ctx, mk("u", 2)); err != nil {
		t.Fatal(err)
	}
	// nil pointers on the path do not panic: they are part of the key.
	if _, err := api.Transfer(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Transfer(ctx, &Request{Account: &Account{ID: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 4 {
		t.Fatalf("ran %d times, want 4", n)
	}
	k1, err := api.TransferKey(mk("t", 1))
	if err != nil {
		t.Fatal(err)
	}
	k2, err := api.TransferKey(mk("u", 1))
	if err != nil {
		t.Fatal(err)
	}
	if k1 == k2 {
		t.Errorf("tenants t and u share the key %s", k1)
	}
}

func TestPromotedThroughPointer(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	acct := func(tenant, by, trace string) Account {
		a := Account{Base: Base{tenant}, ID: 7}
		if by != "" {
			a.Audit = &Audit{By: by, Trace: trace}
		}
		return a
	}
	first, err := api.Touch(ctx, acct("t", "ann", "trace-1"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Note != "fresh" || first.Count != 1 {
		t.Fatalf("first call: %+v", first)
	}
	// Same tenant and actor, another trace (excluded): a replay, without
	// the omitted note.
	again, err := api.Touch(ctx, acct("t", "ann", "trace-2"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Count != 1 || again.Note != "" || again.Tenant != "t" {
		t.Errorf("replay: %+v, want count 1, no note, tenant t", again)
	}
	// Another tenant, or another actor: other calls.
	for _, a := range []Account{acct("u", "ann", ""), acct("t", "bob", "")} {
		if _, err := api.Touch(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// A nil embedded *Audit does not panic: it is a nil in the key, a
	// call of its own, replayed like any other.
	for range 2 {
		if _, err := api.Touch(ctx, acct("t", "", "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := touches.Load(); n != 4 {
		t.Errorf("ran %d times, want 4", n)
	}
	kNil, err := api.TouchKey(acct("t", "", ""))
	if err != nil {
		t.Fatal(err)
	}
	kEmpty, err := api.TouchKey(acct("t", "", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if kNil != kEmpty {
		t.Errorf("acct(t, \"\", x) has no Audit either: keys %s and %s differ", kNil, kEmpty)
	}
	a := acct("t", "", "")
	a.Audit = &Audit{}
	kZero, err := api.TouchKey(a)
	if err != nil {
		t.Fatal(err)
	}
	if kZero == kNil {
		t.Errorf("a nil *Audit and an empty one share the key %s", kZero)
	}
}
