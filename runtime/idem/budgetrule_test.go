package idem_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// The budget (max_result=) counts the record as encoded, identity header
// included, before compression and sealing, and a reader inflates a record
// to at most that count: whatever compression and sealing do, a result
// accepted on write replays on read, and one refused on write is the
// recorded ErrResultTooLarge. A recorded failure, whose message the budget
// does not bound, replays too.
func TestBudgetAcceptedReplays(t *testing.T) {
	const budget = 300
	ring, err := idemseal.New(idemseal.Key{ID: "k1", Secret: bytes.Repeat([]byte{3}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	spec := &idem.Spec{Name: "budget.Rule", Signature: "0123456789abcdef", MaxResult: budget, OnFailure: idem.FailureLock}
	// A string result of n bytes is a record of head+n+2 bytes (JSON quotes).
	head := idemimpl.HeaderLen(spec.Signature)
	rnd := rand.New(rand.NewPCG(1, 2))
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rnd.IntN(26))
		}
		return string(b)
	}
	type outcome struct {
		Accepted bool // the first call recorded the result
		Replayed bool // a duplicate got it back
		TooLarge bool // a duplicate got the recorded ErrResultTooLarge
		Runs     int
	}
	for _, compress := range []bool{false, true} {
		for _, seal := range []bool{false, true} {
			for _, size := range []int{budget - 40, budget - 1, budget, budget + 1, budget + 40, 2000} {
				for _, content := range []string{"repeated", "random"} {
					n := size - head - 2
					value := strings.Repeat("x", n)
					if content == "random" {
						value = random(n)
					}
					name := fmt.Sprintf("compress=%v/seal=%v/record=%d/%s", compress, seal, size, content)
					t.Run(name, func(t *testing.T) {
						g := budgetGuard(compress, seal, ring)
						runs := 0
						call := func() (string, error) {
							c := g.Begin(spec, name)
							return idem.Do(context.Background(), c, func(context.Context) (string, error) {
								runs++
								return value, nil
							})
						}
						_, err := call()
						got := outcome{Accepted: err == nil}
						v, derr := call()
						got.Replayed = derr == nil && v == value
						got.TooLarge = errors.Is(derr, idem.ErrResultTooLarge)
						got.Runs = runs
						fits := size <= budget
						want := outcome{Accepted: fits, Replayed: fits, TooLarge: !fits, Runs: 1}
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("(-want +got):\n%s\nfirst: %v\nduplicate: %v", diff, err, derr)
						}
					})
				}
			}
			for _, fill := range []string{"x", "<", "é"} {
				t.Run(fmt.Sprintf("compress=%v/seal=%v/failure-%s", compress, seal, fill), func(t *testing.T) {
					g := budgetGuard(compress, seal, ring)
					msg := "declined: " + strings.Repeat(fill, 6000)
					runs := 0
					call := func() error {
						c := g.Begin(spec, "failure")
						_, err := idem.Do(context.Background(), c, func(context.Context) (string, error) {
							runs++
							return "", errors.New(msg)
						})
						return err
					}
					first := call()
					again := call()
					var rec *idem.RecordedError
					if !errors.As(again, &rec) || !strings.HasPrefix(rec.Message, "declined: "+fill+fill) || runs != 1 {
						t.Errorf("a recorded failure's duplicate: %.80v after %d runs (first: %.40v); want the recorded failure after 1", again, runs, first)
					}
				})
			}
		}
	}
}

// budgetGuard is a Guard over a store that returns bytes alone, with
// compression and sealing (by ring) as asked.
func budgetGuard(compress, seal bool, ring idem.Sealer) *idem.Guard {
	var opts []idem.Option
	if compress {
		opts = append(opts, idem.WithCompression(64))
	}
	if seal {
		opts = append(opts, idem.WithSealer(ring))
	}
	return idem.NewGuard(bytesOnly{memstore.New()}, opts...)
}
