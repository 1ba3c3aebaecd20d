// Command quickstart shows idemgen's generated wrappers on the in-memory
// store: duplicates replayed, a storm of concurrent duplicates in wait mode
// resolved by one execution, and a reused key with another payload refused.
//
//	go generate ./examples/quickstart && go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	outcomes := newTally()
	g := idem.NewGuard(memstore.New(), idem.WithObserver(outcomes))
	api := NewIdempotent(g)

	// 1. A client retries: three identical requests, one charge.
	fmt.Println("1. retries of one checkout")
	req := InvoiceRequest{CustomerID: "cus_42", OrderID: "ord_1001", AmountCents: 4999, Email: "ada@example.com"}
	var first *Invoice
	for i := 1; i <= 3; i++ {
		inv, err := api.CreateInvoice(ctx, req)
		if err != nil {
			return err
		}
		if first == nil {
			first = inv
		}
		fmt.Printf("   call %d -> %s (%d cents)\n", i, inv.ID, inv.AmountCents)
		if inv.ID != first.ID {
			return fmt.Errorf("call %d got %s, want the replay of %s", i, inv.ID, first.ID)
		}
	}
	fmt.Printf("   card charged %d time(s)\n", charges.Load())

	// 2. A storm: 100 concurrent duplicates of a new order. In wait mode one
	// runs, the others wait for it and share its result.
	fmt.Println("2. a storm of 100 concurrent duplicates (on_duplicate=wait)")
	before := charges.Load()
	storm := InvoiceRequest{CustomerID: "cus_7", OrderID: "ord_2002", AmountCents: 1500}
	ids := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var stormErr error
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inv, err := api.CreateInvoice(ctx, storm)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				stormErr = err
				return
			}
			ids[inv.ID]++
		}()
	}
	wg.Wait()
	if stormErr != nil {
		return stormErr
	}
	for id, n := range ids {
		fmt.Printf("   %d callers got %s\n", n, id)
	}
	fmt.Printf("   card charged %d time(s) for the storm\n", charges.Load()-before)
	if len(ids) != 1 || charges.Load()-before != 1 {
		return errors.New("the storm ran more than once")
	}

	// 3. A provider reuses an event ID with another body: refused.
	fmt.Println("3. a webhook ID reused with a different payload")
	out, err := api.HandleWebhook(ctx, "evt_1", WebhookEvent{Type: "payment.succeeded", Amount: 4999})
	if err != nil {
		return err
	}
	fmt.Printf("   evt_1 (4999)  -> %s\n", out)
	out, err = api.HandleWebhook(ctx, "evt_1", WebhookEvent{Type: "payment.succeeded", Amount: 4999})
	if err != nil {
		return err
	}
	fmt.Printf("   evt_1 again   -> %s (replayed)\n", out)
	_, err = api.HandleWebhook(ctx, "evt_1", WebhookEvent{Type: "payment.succeeded", Amount: 1})
	fmt.Printf("   evt_1 (1)     -> %v\n", err)
	if !errors.Is(err, idem.ErrPayloadMismatch) {
		return fmt.Errorf("want ErrPayloadMismatch, got %v", err)
	}
	_, err = api.HandleWebhook(ctx, "", WebhookEvent{Type: "payment.succeeded"})
	fmt.Printf("   empty ID      -> %v\n", err)
	if !errors.Is(err, idem.ErrInvalidKey) {
		return fmt.Errorf("want ErrInvalidKey, got %v", err)
	}

	// Summary, from the guard's observer.
	fmt.Println("summary")
	calls := 3 + 100 + 4
	fmt.Printf("   %d calls, %d executions (%d charges, %d webhooks)\n", calls, charges.Load()+webhooks.Load(), charges.Load(), webhooks.Load())
	outcomes.print()
	return nil
}

// tally counts the guard's outcomes by kind.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func newTally() *tally { return &tally{n: map[string]int{}} }

func (t *tally) Observe(e idem.Event) {
	t.mu.Lock()
	t.n[e.Outcome.String()]++
	t.mu.Unlock()
}

func (t *tally) print() {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.n))
	total, replayed := 0, 0
	for k, v := range t.n {
		names = append(names, k)
		total += v
		if k == idem.OutcomeReplayed.String() {
			replayed = v
		}
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Printf("   %-14s %d\n", k, t.n[k])
	}
	fmt.Printf("   replay rate    %.0f%%\n", 100*float64(replayed)/float64(total))
}
