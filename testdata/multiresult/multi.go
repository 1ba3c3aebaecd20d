// Package multiresult: (R1, R2, R3, error) results travel as one stored
// value, a generated struct with exported fields.
package multiresult

import (
	"context"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

type Receipt struct {
	ID    string
	Lines map[string]int
	At    time.Time
}

// Split returns the parts of a payment.
//
//idem:on_duplicate=wait
func Split(ctx context.Context, total int, ways int) (int, []int, *Receipt, error) {
	runs.Add(1)
	parts := make([]int, ways)
	for i := range parts {
		parts[i] = total / ways
	}
	return total % ways, parts, &Receipt{ID: "r", Lines: map[string]int{"a": 1}, At: time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)}, nil
}

// Quote has named results: the result struct's fields take their names
// (a blank one is r3, as omit= calls it), and the record stores them as R1, R2, R3, so
// renaming a result does not change what is stored.
//
//idem:ttl=1h
func Quote(ctx context.Context, sku string) (price int64, currency string, _ bool, err error) {
	runs.Add(1)
	return 1299, "EUR", true, nil
}
