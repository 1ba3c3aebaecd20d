package idem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// rejecting is a store that refuses every key as one it can never hold
// (a name too long for its key limit).
type rejecting struct {
	idemstore.Store
	err error
}

func (s rejecting) Claim(context.Context, idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	return idemstore.ClaimResult{}, s.err
}

// TestInvalidKeyNeverFailsOpen: fail-open is for a store that cannot be
// reached, never for a key the store can never hold. However the store
// phrases the rejection, the call gets ErrInvalidKey in every mode and
// the function does not run.
func TestInvalidKeyNeverFailsOpen(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"Plain", fmt.Errorf("%w: key of 3000 bytes (the store allows 2048)", idem.ErrInvalidKey)},
		{"InsideUnavailable", fmt.Errorf("%w: store said: %w", idem.ErrStoreUnavailable, idem.ErrInvalidKey)},
	}
	for _, tc := range cases {
		for _, failOpen := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/failOpen=%v", tc.name, failOpen), func(t *testing.T) {
				rec := &idemtest.Recorder{}
				opts := []idem.Option{idem.WithObserver(rec)}
				if failOpen {
					opts = append(opts, idem.WithFailOpen())
				}
				g := idem.NewGuard(rejecting{memstore.New(), tc.err}, opts...)
				runs := 0
				for i := 0; i < 3; i++ {
					_, err := call(context.Background(), g, &idem.Spec{Name: "test.F"}, "k", func(context.Context) (int, error) { runs++; return 3, nil })
					if !errors.Is(err, idem.ErrInvalidKey) {
						t.Fatalf("call %d: err = %v, want ErrInvalidKey", i, err)
					}
				}
				if runs != 0 {
					t.Errorf("fn ran %d times on a key the store cannot hold, want 0", runs)
				}
				want := []string{"invalid_key", "invalid_key", "invalid_key"}
				if diff := cmp.Diff(want, rec.Outcomes()); diff != "" {
					t.Errorf("outcomes (-want +got):\n%s", diff)
				}
			})
		}
	}
}
