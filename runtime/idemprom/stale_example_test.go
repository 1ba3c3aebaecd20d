package idemprom_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idemgen/idemgen/runtime/idemobs"
	"github.com/idemgen/idemgen/runtime/idemprom"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func ExampleNewStaleClaims() {
	start := time.Unix(1_700_000_000, 0)
	store := memstore.New(memstore.WithClock(func() time.Time { return start }))
	// An owner claims a key with a 30s lease and crashes: no heartbeat
	// renews the lease, and no duplicate comes to take the key over.
	if _, err := store.Claim(context.Background(), idemstore.ClaimRequest{Key: "shop.Charge:k1", Owner: idemstore.Token{1}, Lease: 30 * time.Second, TTL: time.Hour}); err != nil {
		panic(err)
	}

	// One scanner, configured once; the Prometheus collector (and
	// idemotel's gauges, given the same scanner) export its count.
	scanner, err := idemobs.NewStaleScanner(store,
		idemobs.WithStaleGrace(10*time.Second),
		idemobs.WithStaleClock(func() time.Time { return start.Add(time.Minute) }), // a minute later
	)
	if err != nil {
		panic(err)
	}
	stale, err := idemprom.NewStaleClaims(scanner)
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry() // prometheus.DefaultRegisterer in a service
	reg.MustRegister(stale)

	mfs, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		fmt.Println(mf.GetName(), mf.GetMetric()[0].GetGauge().GetValue())
	}
	// Output:
	// idem_stale_claim_age_seconds 30
	// idem_stale_claims 1
}
