package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// BenchmarkReplicaAcks is the cost of WithReplicaAcks(1, …) (and of
// WithClockFences with it) on the Sentinel set's primary, which has one
// replica on the same host: the store without options is the baseline
// (raw-ns/op), run interleaved with the store with the options, on one
// client, in the same run. x-raw is the optioned store's throughput as a
// fraction of the plain store's.
//
//	go test -run '^$' -bench ReplicaAcks -benchtime 2000x ./runtime/redisstore/
func BenchmarkReplicaAcks(b *testing.B) {
	for _, tc := range []struct {
		name    string
		opts    []Option
		callers int
		replay  bool
	}{
		{"first-execution/acks/callers=1", []Option{WithReplicaAcks(1, time.Second)}, 1, false},
		{"first-execution/acks+clock-fences/callers=1", []Option{WithReplicaAcks(1, time.Second), WithClockFences()}, 1, false},
		{"first-execution/acks/callers=32", []Option{WithReplicaAcks(1, time.Second)}, 32, false},
		{"replay/acks/callers=1", []Option{WithReplicaAcks(1, time.Second)}, 1, true},
		{"replay/acks+clock-fences/callers=1", []Option{WithReplicaAcks(1, time.Second), WithClockFences()}, 1, true},
		{"replay/acks/callers=32", []Option{WithReplicaAcks(1, time.Second)}, 32, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rdb := sentinelSet(b)
			rdb.Options().PoolSize = 64
			plain := idem.NewGuard(newStore(b, rdb))
			acked := idem.NewGuard(newStore(b, rdb, tc.opts...))
			spec := &idem.Spec{Name: "bench.acks", TTL: time.Minute}
			ctx := context.Background()
			do := func(g *idem.Guard, id string) {
				c := g.Begin(spec, id)
				if _, err := idem.Do(ctx, c, func(context.Context) (invoice, error) {
					return invoice{ID: id, Amount: 4200, Note: "first call"}, nil
				}); err != nil {
					b.Error(err)
				}
			}
			run := strconv.FormatInt(time.Now().UnixNano(), 36)
			key := func(i int) string {
				if tc.replay {
					return "replayed"
				}
				return run + ":" + strconv.Itoa(i)
			}
			do(plain, key(-1))
			do(acked, key(-1))
			b.ResetTimer()
			base, with := versus(b.N, tc.callers, func(i int) { do(plain, key(i)) }, func(i int) { do(acked, key(i)) })
			b.StopTimer()
			report(b, with, base)
		})
	}
}
