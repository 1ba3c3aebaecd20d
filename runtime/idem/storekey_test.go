package idem_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// claimedKeys lists the keys of the records in a memory store.
func claimedKeys(t *testing.T, s *memstore.Store) []string {
	t.Helper()
	var keys []string
	if err := s.List(context.Background(), "", func(r idemstore.Record) error {
		keys = append(keys, r.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// StoreKey returns the key Do claims for the same key material: with the
// Guard's prefix and HMAC, a Spec's version, a payload, and the ordered
// form with its entity.
func TestStoreKeyIsTheClaimedKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []idem.Option
		spec *idem.Spec
	}{
		{"plain", nil, &idem.Spec{Name: "test.Plain"}},
		{"prefix_hmac_version", []idem.Option{idem.WithKeyPrefix("tenant-a/"), idem.WithHMAC([]byte("secret"))}, &idem.Spec{Name: "test.Keyed", Version: 3}},
		{"no_memo", []idem.Option{idem.WithKeyMemo(0)}, &idem.Spec{Name: "test.NoMemo"}},
		{"ordered", []idem.Option{idem.WithHMAC([]byte("s"))}, &idem.Spec{Name: "test.Ordered", Ordered: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			g := idem.NewGuard(store, tc.opts...)
			begin := func() idem.Call {
				c, k := idemimpl.Begin(g, tc.spec)
				k.Key().ID("evt-1")
				k.Payload().Int(42)
				if tc.spec.Ordered {
					k.Entity().String("user-7")
					k.At(time.Unix(100, 0))
				}
				return c
			}
			before, err := begin().StoreKey()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := idem.Do(ctx, begin(), func(context.Context) (int, error) { return 1, nil }); err != nil {
				t.Fatal(err)
			}
			after, err := begin().StoreKey()
			if err != nil {
				t.Fatal(err)
			}
			keys := claimedKeys(t, store)
			if len(keys) != 1 || keys[0] != before || after != before {
				t.Fatalf("claimed %v; StoreKey before the call %q, after %q", keys, before, after)
			}
			if tc.spec.Ordered && !strings.Contains(before, "{") {
				t.Errorf("ordered key %q has no entity hash tag", before)
			}
			if strings.Contains(before, "evt-1") {
				t.Errorf("key %q holds the raw ID", before)
			}
		})
	}
}

// An invalid key is Do's error, naming the function, and the buffers still
// go back to the pool (the next Call starts clean).
func TestStoreKeyInvalid(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "test.Bad"}
	c, k := idemimpl.Begin(g, spec)
	k.Key().ID("")
	if _, err := c.StoreKey(); !errors.Is(err, idem.ErrInvalidKey) || !strings.HasPrefix(err.Error(), "test.Bad: ") {
		t.Fatalf("empty ID: %v, want test.Bad: …ErrInvalidKey", err)
	}
	c, k = idemimpl.Begin(g, spec)
	k.Key().ID("ok")
	if _, err := c.StoreKey(); err != nil {
		t.Fatalf("after an invalid key, a valid one: %v", err)
	}
}
