package idemqueue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/test/internal/storeopen"
)

// TestStores: deliveries of the same events racing on three consumer
// "processes" (own Guard, own store client) over Redis and Postgres: each
// event's handler runs once, every other delivery is a Duplicate (the
// waiters are woken by the store: pub/sub, LISTEN/NOTIFY).
func TestStores(t *testing.T) {
	for _, kind := range storeopen.Kinds {
		t.Run(kind, func(t *testing.T) {
			open := storeopen.Open(t, kind, "idemqueue_test")
			var consumers []*idemqueue.Consumer
			for range 3 {
				consumers = append(consumers, idemqueue.New(idem.NewGuard(open()), idemcall.WithName("test.stores"),
					idemcall.WithLease(5*time.Second), idemcall.WithWait(10*time.Second)))
			}
			const events, copies = 8, 6
			var handled [events]atomic.Int64
			count := map[idemqueue.Status]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for e := range events {
				for c := range copies {
					wg.Add(1)
					go func() {
						defer wg.Done()
						id := "evt-" + string(rune('a'+e))
						st, err := consumers[(e+c)%len(consumers)].Process(context.Background(), id, func(context.Context) error {
							handled[e].Add(1)
							time.Sleep(20 * time.Millisecond)
							return nil
						})
						if err != nil {
							t.Errorf("%s: %v", id, err)
						}
						mu.Lock()
						count[st]++
						mu.Unlock()
					}()
				}
			}
			wg.Wait()
			for e := range events {
				if n := handled[e].Load(); n != 1 {
					t.Errorf("event %d handled %d times", e, n)
				}
			}
			want := map[idemqueue.Status]int{idemqueue.Ran: events, idemqueue.Duplicate: events * (copies - 1)}
			if diff := cmp.Diff(want, count); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
		})
	}
}
