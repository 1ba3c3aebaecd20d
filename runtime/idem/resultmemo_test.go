package idem_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// countingCodec is JSON that counts decodes.
type countingCodec struct{ decodes atomic.Int64 }

func (c *countingCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }
func (c *countingCodec) Unmarshal(data []byte, v any) error {
	c.decodes.Add(1)
	return json.Unmarshal(data, v)
}

type flat struct {
	ID     string
	Amount int64
	Parts  [2]uint16
}

type withSlice struct {
	ID    string
	Lines []string
}

// replayDecodes runs one call and n replays of it through a store that
// returns stored bytes only (as networked stores do) and reports how many
// times the codec decoded, and the last replayed value.
func replayDecodes[R any](t *testing.T, g *idem.Guard, c *countingCodec, id string, v R, n int) (int64, R) {
	t.Helper()
	spec := &idem.Spec{Name: "test.ResultMemo"}
	fn := func(context.Context) (R, error) { return v, nil }
	var got R
	before := c.decodes.Load()
	for i := 0; i <= n; i++ {
		r, err := call(context.Background(), g, spec, id, fn)
		if err != nil {
			t.Fatal(err)
		}
		got = r
	}
	return c.decodes.Load() - before, got
}

func TestResultMemo(t *testing.T) {
	tests := []struct {
		name        string
		memo        int
		run         func(t *testing.T, g *idem.Guard, c *countingCodec) (int64, any, any)
		wantDecodes int64
	}{
		{"a value type a copy isolates decodes once", 4096, func(t *testing.T, g *idem.Guard, c *countingCodec) (int64, any, any) {
			v := flat{ID: "a", Amount: 7, Parts: [2]uint16{1, 2}}
			n, got := replayDecodes(t, g, c, "flat", v, 5)
			return n, v, got
		}, 1},
		{"a type with a slice decodes every replay", 4096, func(t *testing.T, g *idem.Guard, c *countingCodec) (int64, any, any) {
			v := withSlice{ID: "b", Lines: []string{"x"}}
			n, got := replayDecodes(t, g, c, "slice", v, 5)
			return n, v, got
		}, 5},
		{"a pointer decodes every replay", 4096, func(t *testing.T, g *idem.Guard, c *countingCodec) (int64, any, any) {
			v := &flat{ID: "c"}
			n, got := replayDecodes(t, g, c, "ptr", v, 5)
			return n, *v, *got
		}, 5},
		{"time.Time (holds a *Location) decodes every replay", 4096, func(t *testing.T, g *idem.Guard, c *countingCodec) (int64, any, any) {
			v := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
			n, got := replayDecodes(t, g, c, "time", v, 3)
			return n, v, got
		}, 3},
		{"memo off decodes every replay", 0, func(t *testing.T, g *idem.Guard, c *countingCodec) (int64, any, any) {
			v := flat{ID: "d"}
			n, got := replayDecodes(t, g, c, "off", v, 4)
			return n, v, got
		}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &countingCodec{}
			g := idem.NewGuard(bytesOnly{memstore.New()}, idem.WithCodec(c), idem.WithKeyMemo(tt.memo))
			n, want, got := tt.run(t, g, c)
			if n != tt.wantDecodes {
				t.Errorf("decodes = %d, want %d", n, tt.wantDecodes)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("replayed value (-want +got):\n%s", diff)
			}
		})
	}
}

// A remembered value is used only for the exact bytes it came from: when
// the key's record is replaced by another result, replays decode again.
func TestResultMemoFollowsStoredBytes(t *testing.T) {
	c := &countingCodec{}
	store := memstore.New()
	g := idem.NewGuard(bytesOnly{store}, idem.WithCodec(c))
	spec := &idem.Spec{Name: "test.ResultMemoBytes"}
	ctx := context.Background()
	for _, amount := range []int64{1, 2} {
		fn := func(context.Context) (flat, error) { return flat{ID: "k", Amount: amount}, nil }
		for i := 0; i < 3; i++ {
			got, err := call(ctx, g, spec, "k", fn)
			if err != nil || got.Amount != amount {
				t.Fatalf("amount %d, call %d: got %+v, %v", amount, i, got, err)
			}
		}
		c0 := g.Begin(spec, "k")
		key, _ := c0.StoreKey()
		if err := store.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.decodes.Load(); n != 2 {
		t.Errorf("decodes = %d, want 2 (one per stored result)", n)
	}
}
