package idem_test

import (
	"fmt"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// BenchmarkStreamItem is the cost of one item of a recorded stream on the
// memory store, as a ratio to the same function's items ranged without
// the Guard (x-unrecorded: a recorded item takes that many times as
// long), alternated in chunks of 64 items in one run. Both are pulled
// one item at a time (iter.Pull2), from streams of 10,000 items
// (idemtest.BenchStreamItem):
//
//   - recorded: the first caller's items: each encoded (JSON), appended
//     to the store and handed over from the producer's goroutine;
//   - replayed: a duplicate's items after the stream completed, read
//     back in batches and decoded.
func BenchmarkStreamItem(b *testing.B) {
	idemtest.BenchStreamItem(b, memstore.New(), 10_000)
}

// BenchmarkStreamFanOut is the cost of an item of a recorded stream on
// the memory store delivered live to readers callers at once (the
// producer's and the duplicates attached while it runs), as a ratio to
// the same function's item ranged once without the Guard
// (idemtest.StreamFanOut), from streams of 2,000 items.
func BenchmarkStreamFanOut(b *testing.B) {
	for _, readers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			idemtest.StreamFanOut(b, memstore.New(), readers, 2_000)
		})
	}
}
