package redisstore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// A Guard over Redis: every process that shares the Redis deployment runs
// chargeOrder at most once per order ID. For a Cluster pass several Addrs
// (NewUniversalClient then returns a ClusterClient); for Sentinel set
// MasterName.
func Example() {
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:6379"}})
	defer rdb.Close()
	store, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix("billing:"),
		redisstore.WithEvictionCheck(redisstore.EvictionRefuse))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	g := idem.NewGuard(store)

	spec := &idem.Spec{Name: "billing.ChargeOrder", OnDuplicate: idem.DuplicateWait}
	c := g.Begin(spec, "order-42")
	receipt, err := idem.Do(context.Background(), c, func(ctx context.Context) (string, error) {
		return "charged order-42", nil // runs once; duplicates get this result
	})
	fmt.Println(receipt, err)
}
