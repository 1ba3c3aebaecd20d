package idem_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestNamesMustBeUTF8: a function name or key prefix that is not valid
// UTF-8 is ErrInvalidKey at the call, before the store is asked and in
// every mode: a store that keeps keys as text (DynamoDB) would store
// "\xff" as "\uFFFD", so two functions could share one key space.
func TestNamesMustBeUTF8(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		prefix  string
		invalid bool
	}{
		{"valid", "test.F\uFFFD", "idem:", false},
		{"name", "test.F\xff", "idem:", true},
		{"prefix", "test.F", "idem\xff:", true},
	}
	for _, tc := range tests {
		for _, failOpen := range []bool{false, true} {
			opts := []idem.Option{idem.WithKeyPrefix(tc.prefix)}
			if failOpen {
				opts = append(opts, idem.WithFailOpen())
			}
			g := idem.NewGuard(memstore.New(), opts...)
			spec := &idem.Spec{Name: tc.spec}
			runs := 0
			var invalid []bool
			for range 2 { // the second call would find the first's key memoized
				_, err := call(context.Background(), g, spec, "k", func(context.Context) (int, error) { runs++; return 1, nil })
				invalid = append(invalid, errors.Is(err, idem.ErrInvalidKey))
			}
			c := g.Begin(spec, "k")
			_, kerr := c.StoreKey()
			type outcome struct {
				Invalid  []bool
				StoreKey bool
				Runs     int
			}
			want := outcome{[]bool{false, false}, false, 1}
			if tc.invalid {
				want = outcome{[]bool{true, true}, true, 0}
			}
			if diff := cmp.Diff(want, outcome{invalid, errors.Is(kerr, idem.ErrInvalidKey), runs}); diff != "" {
				t.Errorf("%s (fail open %v) (-want +got):\n%s", tc.name, failOpen, diff)
			}
		}
	}
}
