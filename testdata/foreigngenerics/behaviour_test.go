package foreigngenerics

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/testdata/foreigngenerics/sdk"
)

// sdk.List, wrapped from this package, takes sdk.Query[string] and
// returns sdk.Page[sdk.Item]: one run per query, the page replayed equal;
// a query that differs in the filter, or in its optional limit (absent,
// zero, ten), is another call.
func TestForeignFunctionOfInstances(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			filter := "f-" + ng.store
			queries := []struct {
				name string
				q    sdk.Query[string]
			}{
				{"no limit", sdk.Query[string]{Filter: filter}},
				{"limit 0", sdk.Query[string]{Filter: filter, Limit: sdk.Some[int64](0)}},
				{"limit 10", sdk.Query[string]{Filter: filter, Limit: sdk.Some[int64](10)}},
				{"another filter", sdk.Query[string]{Filter: filter + "-2"}},
			}
			keys := map[string]string{}
			for _, tc := range queries {
				before := sdk.Runs.Load()
				first, err := api.List(ctx, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				again, err := api.List(ctx, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(first, again); diff != "" {
					t.Errorf("%s: replay (-first +replay):\n%s", tc.name, diff)
				}
				if n := sdk.Runs.Load() - before; n != 1 {
					t.Errorf("%s: sdk.List ran %d times, want 1", tc.name, n)
				}
				k, err := api.ListKey(tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if other, ok := keys[k]; ok {
					t.Errorf("%s and %s share the store key %s", other, tc.name, k)
				}
				keys[k] = tc.name
			}
		})
	}
}

// (*sdk.Catalog).Prices takes sdk.Page[string] and returns a map of
// sdk.Opt[int64], stored through Opt's JSON marshaling pair.
func TestForeignMethodOfInstances(t *testing.T) {
	optEqual := cmp.Comparer(func(a, b sdk.Opt[int64]) bool {
		av, ap := a.Value()
		bv, bp := b.Value()
		return av == bv && ap == bp
	})
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			cat := &sdk.Catalog{}
			api := NewIdempotentCatalog(cat, ng.g)
			ids := sdk.Page[string]{Items: []string{"a-" + ng.store, "b"}, Next: "n"}
			first, err := api.Prices(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			again, err := api.Prices(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]sdk.Opt[int64]{"a-" + ng.store: sdk.Some[int64](0), "b": sdk.Some[int64](1)}
			for _, got := range []map[string]sdk.Opt[int64]{first, again} {
				if diff := cmp.Diff(want, got, optEqual); diff != "" {
					t.Errorf("prices (-want +got):\n%s", diff)
				}
			}
			if n := cat.Runs(); n != 1 {
				t.Fatalf("Prices ran %d times, want 1", n)
			}
			ids.Next = "m"
			if _, err := api.Prices(ctx, ids); err != nil || cat.Runs() != 2 {
				t.Fatalf("another page: %v, runs %d, want a second run", err, cat.Runs())
			}
		})
	}
}

// The package's own generic Reprice beside the wrapped SDK functions:
// Reprice[int64] and Reprice[int32] with equal values are two calls.
func TestOwnGenericBesideForeign(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			q := sdk.Query[string]{Filter: "r-" + ng.store}
			before := sdk.Runs.Load()
			calls := []struct {
				name string
				run  func() (sdk.Page[sdk.Item], error)
				key  func() (string, error)
			}{
				{"int64", func() (sdk.Page[sdk.Item], error) { return IdempotentReprice(api, ctx, q, int64(5)) },
					func() (string, error) { return IdempotentRepriceKey(api, q, int64(5)) }},
				{"int32", func() (sdk.Page[sdk.Item], error) { return IdempotentReprice(api, ctx, q, int32(5)) },
					func() (string, error) { return IdempotentRepriceKey(api, q, int32(5)) }},
			}
			keys := map[string]string{}
			for _, c := range calls {
				for range 2 {
					if _, err := c.run(); err != nil {
						t.Fatal(err)
					}
				}
				k, err := c.key()
				if err != nil {
					t.Fatal(err)
				}
				if other, ok := keys[k]; ok {
					t.Errorf("Reprice[%s] and Reprice[%s] share the store key %s", other, c.name, k)
				}
				keys[k] = c.name
			}
			if n := sdk.Runs.Load() - before; n != 2 {
				t.Fatalf("sdk.List ran %d times under Reprice, want 2 (one per type argument)", n)
			}
		})
	}
}
