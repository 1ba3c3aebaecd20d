package filestore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
)

var specSend = idem.Spec{Name: "example.SendReceipt"}

func Example() {
	dir, err := os.MkdirTemp("", "idem")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// Every process that opens dir shares its keys.
	st, err := filestore.New(dir)
	if err != nil {
		log.Fatal(err) // e.g. "idem: store unavailable: filestore: creating store directory …: not writable: permission denied"
	}
	g := idem.NewGuard(st)

	send := func(orderID string) (string, error) {
		c := g.Begin(&specSend, orderID)
		return idem.Do(context.Background(), c, func(ctx context.Context) (string, error) {
			fmt.Println("sending receipt for", orderID)
			return "receipt-" + orderID, nil
		})
	}
	r1, _ := send("ord_1")
	r2, _ := send("ord_1") // a redelivery: replayed from the record file
	fmt.Println(r1, r2)

	// On a schedule: drop records past their TTL.
	if _, err := st.Cleanup(context.Background()); err != nil {
		log.Print(err)
	}
	// Output:
	// sending receipt for ord_1
	// receipt-ord_1 receipt-ord_1
}
