package firestorestore_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idem"
)

// A Guard on Firestore: the second call with the same key replays the
// first one's result (compiled, not run by go test, which must skip
// without the emulator: TestRoundTrips runs the same calls). Here against
// the emulator `make services` starts
// (scripts/firestore.sh, 127.0.0.1:8765); the client finds it through
// FIRESTORE_EMULATOR_HOST, and production Firestore through the
// application default credentials when that is unset.
func Example() {
	ctx := context.Background()
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		os.Setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:8765")
	}
	client, err := firestore.NewClient(ctx, "idemgen-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	// A fresh collection per run, so the first call runs each time.
	store, err := firestorestore.New(ctx, client, fmt.Sprint("idempotency_", time.Now().UnixNano()))
	if err != nil {
		fmt.Println(err) // the emulator is not running
		return
	}
	g := idem.NewGuard(store)
	spec := &idem.Spec{Name: "billing.Charge"}
	charge := func(order string) (string, error) {
		c := g.Begin(spec, order)
		return idem.Do(ctx, c, func(ctx context.Context) (string, error) {
			fmt.Println("charging", order)
			return "rcpt_" + order, nil
		})
	}
	fmt.Println(charge("ord_1001")) // charging ord_1001, then rcpt_ord_1001 <nil>
	fmt.Println(charge("ord_1001")) // rcpt_ord_1001 <nil>: replayed, not charged again
}
