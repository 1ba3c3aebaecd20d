package jsonskipkeys

import (
	"context"
	"testing"

	"github.com/idemgen/idemgen/testdata/jsonskipkeys/sdk"
)

func ptr[T any](v T) *T { return &v }

// The SDK's json:"-" telemetry is no part of the key; every field it
// sends is.
func TestJSONSkippedFieldsAreNotKeyed(t *testing.T) {
	params := func(amount int64, key string, usage ...string) *sdk.ChargeParams {
		p := &sdk.ChargeParams{Amount: ptr(amount), Currency: ptr("eur")}
		p.IdempotencyKey, p.Metadata = ptr(key), map[string]string{"order": "o1"}
		for _, u := range usage {
			p.AddUsage(u)
		}
		return p
	}
	tests := []struct {
		name  string
		other *sdk.ChargeParams
		same  bool
	}{
		{"same request", params(100, "k1"), true},
		{"other telemetry", params(100, "k1", "retry"), true},
		{"other amount", params(101, "k1"), false},
		{"other idempotency key", params(100, "k2"), false},
	}
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			api := NewIdempotent(ng.g)
			k0, err := api.ChargeKey(params(100, "k1"))
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range tests {
				k, err := api.ChargeKey(tt.other)
				if err != nil {
					t.Fatal(err)
				}
				if (k == k0) != tt.same {
					t.Errorf("%s: same key = %v, want %v", tt.name, k == k0, tt.same)
				}
			}
			ctx := context.Background()
			before := runs.Load()
			first, err := api.Charge(ctx, params(100, "k-"+t.Name()))
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Charge(ctx, params(100, "k-"+t.Name(), "retry"))
			if err != nil || replay != first || runs.Load()-before != 1 {
				t.Errorf("replay %q (%v) of %q after %d runs, want the first result after 1", replay, err, first, runs.Load()-before)
			}
		})
	}
}
