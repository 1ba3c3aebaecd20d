package pgstore

import (
	"testing"

	"github.com/idemgen/idemgen/runtime/idemtest"
)

// BenchmarkStreamItem is the cost of one item of a recorded stream on
// PostgreSQL (one caller), as a ratio to the same function's items
// ranged without the Guard (x-unrecorded), alternated in chunks of 64
// items, pulled one at a time from streams of 1,000 items
// (idemtest.BenchStreamItem):
//
//   - recorded: the first caller's items, each encoded and appended (one
//     statement and commit per item);
//   - replayed: a duplicate's items after the stream completed, read back
//     in batches (one statement per 256 items) and decoded.
func BenchmarkStreamItem(b *testing.B) {
	idemtest.BenchStreamItem(b, newStore(b, nil), 1_000)
}
