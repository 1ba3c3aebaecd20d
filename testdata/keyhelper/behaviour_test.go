package keyhelper

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// The Key helpers return the keys the wrappers' calls claimed in the
// store, with the Guard's options (prefix, HMAC) applied.
func TestKeyHelpersAreTheClaimedKeys(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []idem.Option
	}{
		{"defaults", nil},
		{"prefix_hmac", []idem.Option{idem.WithKeyPrefix("tenant-a/"), idem.WithHMAC([]byte("secret"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			g := idem.NewGuard(store, tc.opts...)
			api, ledger := NewIdempotent(g), NewIdempotentLedger(&Ledger{}, g)
			at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			if _, err := api.Charge(ctx, Request{Tenant: "t1", Amount: 5}); err != nil {
				t.Fatal(err)
			}
			if err := ledger.Post(ctx, "acct", 1, 2); err != nil {
				t.Fatal(err)
			}
			if err := api.Apply(ctx, Event{ID: "e1", User: "u1", At: at}); err != nil {
				t.Fatal(err)
			}
			var claimed []string
			if err := store.List(ctx, "", func(r idemstore.Record) error {
				claimed = append(claimed, r.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			keys := []string{
				must(t)(api.ChargeKey(Request{Tenant: "t1", Amount: 5})),
				must(t)(ledger.PostKey("acct", 1, 2)),
				must(t)(api.ApplyKey(Event{ID: "e1", User: "u1", At: at})),
			}
			sort.Strings(claimed)
			want := append([]string(nil), keys...)
			sort.Strings(want)
			if diff := cmp.Diff(want, claimed); diff != "" {
				t.Fatalf("Key helpers vs claimed keys (-helpers +claimed):\n%s", diff)
			}
			// The key is the key= material: the fingerprinted amount does not change it.
			if k := must(t)(api.ChargeKey(Request{Tenant: "t1", Amount: 6})); k != keys[0] {
				t.Errorf("amount changed the key: %s vs %s", k, keys[0])
			}
			if k := must(t)(api.ChargeKey(Request{Tenant: "t2", Amount: 5})); k == keys[0] {
				t.Errorf("another tenant, same key %s", k)
			}
			// Computing a key runs nothing.
			if n := runs.Load(); n != 3*int64(1+indexOf(tc.name)) {
				t.Errorf("ran %d times", n)
			}
		})
	}
}

// A key the wrapper would refuse is refused by its Key helper too.
func TestKeyHelperInvalid(t *testing.T) {
	api := NewIdempotent(idem.NewGuard(memstore.New()))
	if _, err := api.ApplyKey(Event{ID: "", User: "u"}); !errors.Is(err, idem.ErrInvalidKey) {
		t.Errorf("empty event ID: %v, want ErrInvalidKey", err)
	}
}

func indexOf(name string) int {
	if name == "defaults" {
		return 0
	}
	return 1
}

func must(t *testing.T) func(string, error) string {
	return func(s string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}
