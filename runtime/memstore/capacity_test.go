package memstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// heapInUse is the live heap after a full collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// fillRetained claims and completes n keys of keyLen bytes with a result
// of resLen bytes and returns the store.
func fillRetained(t testing.TB, n, keyLen, resLen int) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	st := memstore.New(memstore.WithMaxRecords(n + 1))
	data := []byte(strings.Repeat("r", resLen))
	pad := strings.Repeat("k", max(0, keyLen-12))
	for i := range n {
		key := fmt.Sprintf("%s%012d", pad, i)
		var owner idem.Token
		owner[0], owner[1], owner[2] = byte(i), byte(i>>8), byte(i>>16)
		cr, err := st.Claim(ctx, idem.ClaimRequest{Key: key, Owner: owner, Lease: time.Minute, TTL: time.Hour})
		if err != nil || cr.Status != idem.ClaimAcquired {
			t.Fatalf("claim %d: %v %v", i, cr.Status, err)
		}
		// Each record its own result bytes, as calls' results are.
		res := idem.Result{Data: append([]byte(nil), data...)}
		if err := st.Complete(ctx, idem.Lease{Key: key, Owner: owner, Fence: cr.Fence, Duration: time.Minute, TTL: time.Hour}, res); err != nil {
			t.Fatalf("complete %d: %v", i, err)
		}
	}
	return st
}

// TestRetainedRecordHeap measures the heap a retained (completed) record
// takes in the memory store and checks it against the store's own
// estimate (recordSize, which WithMaxBytes bounds): the estimate must not
// undercount the measured heap, or the byte bound would let the process
// use more memory than configured. IDEM_CAPACITY_VERBOSE prints the
// numbers docs/CAPACITY.md quotes.
func TestRetainedRecordHeap(t *testing.T) {
	const n = 100_000
	cases := []struct {
		name           string
		keyLen, resLen int
	}{
		{"key 64 B, result 32 B", 64, 32},
		{"key 64 B, result 1 KiB", 64, 1024},
		{"key 100 B, result 200 B", 100, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := heapInUse()
			st := fillRetained(t, n, tc.keyLen, tc.resLen)
			after := heapInUse()
			perRecord := float64(after-before) / n
			estimate := float64(st.Bytes()) / n
			t.Logf("CAPACITY memstore retained record (%s): %.0f heap bytes measured, %.0f estimated by the store (WithMaxBytes), %d records",
				tc.name, perRecord, estimate, st.Len())
			if st.Len() != n {
				t.Fatalf("store holds %d records, want %d", st.Len(), n)
			}
			if perRecord > estimate {
				t.Errorf("a retained record takes %.0f heap bytes but the store counts %.0f: WithMaxBytes would be exceeded", perRecord, estimate)
			}
			runtime.KeepAlive(st)
		})
	}
}
