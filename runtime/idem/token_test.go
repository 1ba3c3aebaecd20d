package idem_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestOwnerTokensUnique: concurrent calls of one Guard, first executions
// and duplicates that wait and claim again, never share an owner token,
// whether it came from a call state's block or the Guard's counter.
func TestOwnerTokensUnique(t *testing.T) {
	s := memstore.New()
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "test.Tokens", OnDuplicate: idem.DuplicateWait}
	const workers, calls = 8, 3000
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				// Every third call shares its key with another worker's, so
				// some claims find the key in progress and claim again.
				key := fmt.Sprintf("w%d-%d", w, i)
				if i%3 == 0 {
					key = fmt.Sprintf("shared-%d", i)
				}
				c := g.Begin(spec, key)
				if _, err := idem.Do(ctx, c, func(context.Context) (int, error) { return i, nil }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	owners := map[idemstore.Token]string{}
	if err := s.List(ctx, "", func(r idemstore.Record) error {
		if prev, ok := owners[r.Owner]; ok {
			return fmt.Errorf("records %s and %s have the same owner token %x", prev, r.Key, r.Owner)
		}
		owners[r.Owner] = r.Key
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := workers*calls - (workers-1)*(calls/3); len(owners) != want {
		t.Fatalf("%d records, want %d", len(owners), want)
	}
}
