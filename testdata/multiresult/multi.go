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
