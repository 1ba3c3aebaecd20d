package redisstore

import (
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
