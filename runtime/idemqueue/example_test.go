package idemqueue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func Example() {
	c := idemqueue.New(idem.NewGuard(memstore.New()), idemcall.WithName("billing.credits"))
	balance := 0
	failNext := true
	deliveries := []string{"evt-1", "evt-2", "evt-1", "evt-2", ""} // at least once, and one bad message
	for _, id := range deliveries {
		status, err := c.Process(context.Background(), id, func(ctx context.Context) error {
			if id == "evt-2" && failNext {
				failNext = false
				return errors.New("ledger unavailable")
			}
			balance += 10
			return nil
		})
		switch {
		case status.Ack():
			fmt.Println(id, status, "-> ack")
		case idemqueue.IsPermanent(err):
			fmt.Printf("%q %s -> dead-letter\n", id, status)
		default:
			fmt.Println(id, status, "-> nak")
		}
	}
	fmt.Println("balance:", balance)
	// Output:
	// evt-1 ran -> ack
	// evt-2 failed -> nak
	// evt-1 duplicate -> ack
	// evt-2 ran -> ack
	// "" failed -> dead-letter
	// balance: 20
}
