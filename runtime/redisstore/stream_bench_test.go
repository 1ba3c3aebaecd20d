package redisstore

import (
	"fmt"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemtest"
)

// BenchmarkStreamItem is the cost of one item of a recorded stream on
// Redis (standalone, one caller), as a ratio to the same function's items
// ranged without the Guard (x-unrecorded: a recorded item takes that
// many times as long), alternated in chunks of 64 items in one run, pulled one item
// at a time (iter.Pull2) from streams of 1,000 items (idemtest.BenchStreamItem):
//
//   - recorded: the first caller's items, each encoded and appended (one
//     script round trip per item);
//   - replayed: a duplicate's items after the stream completed, read back
//     in batches (one round trip per 256 items) and decoded.
func BenchmarkStreamItem(b *testing.B) {
	idemtest.BenchStreamItem(b, newStore(b, standalone(b)), 1_000)
}

// BenchmarkStreamFanOut is the cost of an item of a recorded stream on
// Redis (standalone) delivered live to readers callers at once (the
// producer's and the duplicates attached while it runs, each reading
// the items back from Redis), as a ratio to the same items handed to as
// many goroutines over channels without the Guard (idemtest.StreamFanOut),
// from streams of 500 items.
func BenchmarkStreamFanOut(b *testing.B) {
	for _, readers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			idemtest.StreamFanOut(b, newStore(b, standalone(b)), readers, 500)
		})
	}
}
