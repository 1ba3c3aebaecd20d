//go:build unix

package redisstore

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
)

// BenchmarkFirstExecutionCPU measures what BenchmarkFirstExecution's two
// sides cost in CPU rather than time, one side per sub-benchmark: a raw
// SET NX of a new key, and a first execution through a Guard with and
// without the pipe. Per operation it reports this process's CPU time
// (getrusage: user + system), Redis's (INFO cpu) and how many reads Redis
// made from its clients (INFO stats, total_reads_processed: a pipeline is
// one). When both sides are bound by the machine's CPU, as at 32 callers
// on two cores, x-raw in BenchmarkFirstExecution is about raw's CPU per
// operation over the store's, client and Redis together. Other clients of
// the same Redis count too: run it on a Redis of its own.
//
//	go test -run '^$' -bench FirstExecutionCPU -benchtime 2s ./runtime/redisstore/
func BenchmarkFirstExecutionCPU(b *testing.B) {
	for _, side := range []string{"raw", "store", "store/pipelining=off"} {
		for _, callers := range []int{1, 32} {
			b.Run(side+"/callers="+strconv.Itoa(callers), func(b *testing.B) {
				rdb := benchClient(b)
				s := newStore(b, rdb, WithPipelining(side != "store/pipelining=off"))
				g := idem.NewGuard(s)
				spec := &idem.Spec{Name: "bench.cpu", TTL: time.Minute}
				ctx := context.Background()
				run := strconv.FormatInt(time.Now().UnixNano(), 36)
				op := func(i int) {
					key := run + ":" + strconv.Itoa(i)
					if side == "raw" {
						if err := rdb.SetNX(ctx, s.prefix+"raw:"+key, "x", time.Minute).Err(); err != nil {
							b.Error(err)
						}
						return
					}
					c := g.Begin(spec, key)
					if _, err := idem.Do(ctx, c, func(context.Context) (invoice, error) {
						return invoice{ID: key, Amount: 4200, Note: "first call"}, nil
					}); err != nil {
						b.Error(err)
					}
				}
				redisCPU := func() float64 { return infoSum(b, rdb, "cpu", "used_cpu_sys", "used_cpu_user") }
				reads := func() float64 { return infoSum(b, rdb, "stats", "total_reads_processed") }
				server0, reads0, client0 := redisCPU(), reads(), processCPU()
				b.ResetTimer()
				elapsed := parallel(b.N, callers, op)
				b.StopTimer()
				server1, reads1, client1 := redisCPU(), reads(), processCPU()
				n := float64(b.N)
				b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/op")
				b.ReportMetric(float64((client1-client0).Microseconds())/n, "client-cpu-µs/op")
				b.ReportMetric((server1-server0)*1e6/n, "redis-cpu-µs/op")
				b.ReportMetric((reads1-reads0)/n, "redis-reads/op")
			})
		}
	}
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// infoSum adds up the named fields of one INFO section.
func infoSum(b *testing.B, rdb *redis.Client, section string, fields ...string) float64 {
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		for _, f := range fields {
			if v, ok := strings.CutPrefix(line, f+":"); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatalf("INFO %s %s: %v", section, f, err)
				}
				sum += n
			}
		}
	}
	return sum
}
