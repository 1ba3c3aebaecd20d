package generics

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
	amodel "github.com/idemgen/idemgen/testdata/generics/a/model"
	bmodel "github.com/idemgen/idemgen/testdata/generics/b/model"
	"github.com/idemgen/idemgen/testdata/generics/sdk"
)

// The type argument is part of the key: one order's placed and cancelled
// events are two calls; the same event twice is one.
func TestTypeArgumentIsPartOfTheKey(t *testing.T) {
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			x := NewIdempotent(g.g)
			ctx := context.Background()
			tests := []struct {
				name string
				call func() (int64, error)
				same bool // a replay of the first call
			}{
				{"first", func() (int64, error) { return IdempotentPublish(x, ctx, OrderPlaced{"o-1"}) }, false},
				{"same event again", func() (int64, error) { return IdempotentPublish(x, ctx, OrderPlaced{"o-1"}) }, true},
				{"other type, same ID", func() (int64, error) { return IdempotentPublish(x, ctx, OrderCancelled{"o-1"}) }, false},
				{"other ID", func() (int64, error) { return IdempotentPublish(x, ctx, OrderPlaced{"o-2"}) }, false},
				{"as the interface type", func() (int64, error) { return IdempotentPublish[Event](x, ctx, OrderPlaced{"o-1"}) }, false},
			}
			var first int64
			for i, tt := range tests {
				got, err := tt.call()
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if i == 0 {
					first = got
					continue
				}
				if (got == first) != tt.same {
					t.Errorf("%s: result %d, first %d: replay = %v, want %v", tt.name, got, first, got == first, tt.same)
				}
			}
		})
	}
}

// The Key companion agrees with the wrapper, and a nil interface type
// argument is a value of its own (no panic).
func TestGenericKeyCompanion(t *testing.T) {
	x := NewIdempotent(newGuard(t))
	keys := map[string]string{}
	add := func(name string, k string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for other, k2 := range keys {
			if k2 == k {
				t.Errorf("%s and %s share the key %s", name, other, k)
			}
		}
		keys[name] = k
	}
	k, err := IdempotentPublishKey(x, OrderPlaced{"o-1"})
	add("placed", k, err)
	k, err = IdempotentPublishKey(x, OrderCancelled{"o-1"})
	add("cancelled", k, err)
	k, err = IdempotentPublishKey[Event](x, nil)
	add("nil event", k, err)
	k, err = IdempotentPublishKey[Event](x, OrderPlaced{"o-1"})
	add("placed as Event", k, err)
	k, err = IdempotentTallyKey(x, 5)
	add("tally int 5", k, err)
	k, err = IdempotentTallyKey(x, int64(5))
	add("tally int64 5", k, err)
	k, err = IdempotentTallyKey(x, Cents(5))
	add("tally Cents 5", k, err)
	k, err = IdempotentTallyKey(x, Cents(6))
	add("tally Cents 6", k, err)
	again, err := IdempotentTallyKey(x, Cents(6))
	if err != nil || again != k {
		t.Errorf("the same call has two keys: %s, %s (%v)", k, again, err)
	}
}

// Basic-kind constraints: the value and the type argument both count.
func TestTallyByKind(t *testing.T) {
	x := NewIdempotent(newGuard(t))
	ctx := context.Background()
	before := runs.Load()
	for range 2 {
		for _, f := range []func() (int64, error){
			func() (int64, error) { return IdempotentTally(x, ctx, 5) },
			func() (int64, error) { return IdempotentTally(x, ctx, int64(5)) },
			func() (int64, error) { return IdempotentTally(x, ctx, Cents(5)) },
			func() (int64, error) { return IdempotentTally(x, ctx, Cents(-5)) },
		} {
			if _, err := f(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := runs.Load() - before; n != 4 {
		t.Errorf("ran %d times, want 4 (each distinct call once)", n)
	}
}

// key=id: the message (of unconstrained type) is not keyed; the ID and
// the type argument are.
func TestKeyNamesAConcreteParameter(t *testing.T) {
	x := NewIdempotent(newGuard(t))
	ctx := context.Background()
	a, err := IdempotentSend(x, ctx, "m-1", "hello")
	if err != nil {
		t.Fatal(err)
	}
	b, err := IdempotentSend(x, ctx, "m-1", "other text")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("same ID and type argument ran twice (%d, %d)", a, b)
	}
	c, err := IdempotentSend(x, ctx, "m-1", 42)
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Error("Send[int] replayed Send[string]'s result")
	}
	if _, err := IdempotentSend(x, ctx, "", 1); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("empty ID: err = %v, want ErrInvalidKey", err)
	}
}

// Instances of generic types key by their fields (this package's Opt)
// or their method (the SDK's Opt); results of instance types replay equal.
func TestInstances(t *testing.T) {
	base := func() InvoiceRequest {
		return InvoiceRequest{Customer: "c-1", Amount: Some[int64](1200), Memo: Opt[string]{}, Coupon: sdk.Some("SPRING")}
	}
	tests := []struct {
		name   string
		change func(*InvoiceRequest)
		same   bool
	}{
		{"same request", func(*InvoiceRequest) {}, true},
		{"other amount", func(r *InvoiceRequest) { r.Amount = Some[int64](1201) }, false},
		{"absent amount", func(r *InvoiceRequest) { r.Amount = Opt[int64]{} }, false},
		{"zero amount, present", func(r *InvoiceRequest) { r.Amount = Some[int64](0) }, false},
		{"memo present and empty", func(r *InvoiceRequest) { r.Memo = Some("") }, false},
		{"other coupon", func(r *InvoiceRequest) { r.Coupon = sdk.Some("WINTER") }, false},
		{"no coupon", func(r *InvoiceRequest) { r.Coupon = sdk.Opt[string]{} }, false},
	}
	x := NewIdempotent(newGuard(t))
	k0, err := x.CreateInvoiceKey(base())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base()
			tt.change(&r)
			k, err := x.CreateInvoiceKey(r)
			if err != nil {
				t.Fatal(err)
			}
			if (k == k0) != tt.same {
				t.Errorf("same key = %v, want %v", k == k0, tt.same)
			}
		})
	}
	for _, g := range guards(t) {
		t.Run("replay/"+g.store, func(t *testing.T) {
			x := NewIdempotent(g.g)
			ctx := context.Background()
			page, opt, err := x.CreateInvoice(ctx, base())
			if err != nil {
				t.Fatal(err)
			}
			page2, opt2, err := x.CreateInvoice(ctx, base())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(page, page2); diff != "" {
				t.Errorf("Page[Invoice] replay differs (-first +replay):\n%s", diff)
			}
			if diff := cmp.Diff(opt, opt2, cmp.AllowUnexported(sdk.Opt[int64]{})); diff != "" {
				t.Errorf("sdk.Opt[int64] replay differs (-first +replay):\n%s", diff)
			}
			if v, ok := opt2.Value(); !ok || v == 0 {
				t.Errorf("replayed Opt = %v, %v", v, ok)
			}
		})
	}
}

// Values of a type parameter inside an instance (Page[S]) and a variadic
// []S are keyed through the constraint (~string).
func TestTypeParameterInsideInstance(t *testing.T) {
	type Code string
	x := NewIdempotent(newGuard(t))
	next := "n"
	tests := []struct {
		name string
		key  func() (string, error)
	}{
		{"strings", func() (string, error) { return IdempotentSaveKey(x, Page[string]{Items: []string{"a"}}) }},
		{"codes", func() (string, error) { return IdempotentSaveKey(x, Page[Code]{Items: []Code{"a"}}) }},
		{"no items", func() (string, error) { return IdempotentSaveKey(x, Page[string]{}) }},
		{"empty items", func() (string, error) { return IdempotentSaveKey(x, Page[string]{Items: []string{}}) }},
		{"next", func() (string, error) { return IdempotentSaveKey(x, Page[string]{Items: []string{"a"}, Next: &next}) }},
		{"variadic", func() (string, error) { return IdempotentSaveKey(x, Page[string]{Items: []string{"a"}}, "b") }},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		k, err := tt.key()
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[k]; ok {
			t.Errorf("%s and %s share a key", tt.name, other)
		}
		seen[k] = tt.name
	}
	if err := IdempotentSave(x, context.Background(), Page[string]{Items: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
}

// A single-type constraint keys the value as that type; a constraint with
// MarshalText keys through it; floats are canonical (-0 is 0).
func TestConstraintShapes(t *testing.T) {
	x := NewIdempotent(newGuard(t))
	tests := []struct {
		name string
		a, b func() (string, error)
		same bool
	}{
		{"same order",
			func() (string, error) { return IdempotentPlaceKey(x, Order{"o-1", 2}) },
			func() (string, error) { return IdempotentPlaceKey(x, Order{"o-1", 2}) }, true},
		{"other quantity",
			func() (string, error) { return IdempotentPlaceKey(x, Order{"o-1", 2}) },
			func() (string, error) { return IdempotentPlaceKey(x, Order{"o-1", 3}) }, false},
		{"same SKU text",
			func() (string, error) { return IdempotentStockKey(x, SKU{"acme", "a1"}, 1) },
			func() (string, error) { return IdempotentStockKey(x, SKU{"acme", "a1"}, 1) }, true},
		{"other SKU",
			func() (string, error) { return IdempotentStockKey(x, SKU{"acme", "a1"}, 1) },
			func() (string, error) { return IdempotentStockKey(x, SKU{"acme", "a2"}, 1) }, false},
		{"negative zero quantity",
			func() (string, error) { return IdempotentStockKey(x, SKU{"acme", "a1"}, 0) },
			func() (string, error) { return IdempotentStockKey(x, SKU{"acme", "a1"}, math.Copysign(0, -1)) }, true},
		{"SKU vs its pointer type argument",
			func() (string, error) { return IdempotentStockKey(x, SKU{"acme", "a1"}, 1) },
			func() (string, error) { return IdempotentStockKey(x, &SKU{"acme", "a1"}, 1) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.a()
			if err != nil {
				t.Fatal(err)
			}
			b, err := tt.b()
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tt.same {
				t.Errorf("same key = %v, want %v", a == b, tt.same)
			}
		})
	}
	// A nil pointer type argument is the nil marker (its value-receiver
	// MarshalText would panic on it), apart from every SKU.
	var nilSKU *SKU
	k1, err := IdempotentStockKey(x, nilSKU, 1)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := IdempotentStockKey(x, &SKU{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if k1 == k2 {
		t.Error("a nil *SKU and a zero *SKU share a key")
	}
}

// Instances over two packages' types of one short name get helpers of
// their own: each keys and stores its own fields.
func TestInstancesOfSameNamedTypes(t *testing.T) {
	x := NewIdempotent(newGuard(t))
	a := Page[amodel.Invoice]{Items: []amodel.Invoice{{Number: "n-1"}}}
	b := Page[bmodel.Invoice]{Items: []bmodel.Invoice{{Cents: 100}}}
	k1, err := x.ImportKey(a, b)
	if err != nil {
		t.Fatal(err)
	}
	b2 := Page[bmodel.Invoice]{Items: []bmodel.Invoice{{Cents: 101}}}
	k2, err := x.ImportKey(a, b2)
	if err != nil {
		t.Fatal(err)
	}
	a2 := Page[amodel.Invoice]{Items: []amodel.Invoice{{Number: "n-2"}}}
	k3, err := x.ImportKey(a2, b)
	if err != nil {
		t.Fatal(err)
	}
	if k1 == k2 || k1 == k3 || k2 == k3 {
		t.Errorf("keys collide: %s %s %s", k1, k2, k3)
	}
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			x := NewIdempotent(g.g)
			first, err := x.Import(context.Background(), a, b)
			if err != nil {
				t.Fatal(err)
			}
			again, err := x.Import(context.Background(), a, b)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, again); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
		})
	}
}
