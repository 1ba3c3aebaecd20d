// Package maxresult has a result budget: a report over it is recorded as
// failed and never built again.
package maxresult

import (
	"context"
	"strings"
	"sync/atomic"
)

var builds atomic.Int64

// Report is a built report.
type Report struct {
	ID   string
	Body string
}

// Build builds the report of id with size bytes of body.
//
//idem:max_result=1KiB
func Build(ctx context.Context, id string, size int) (Report, error) {
	builds.Add(1)
	return Report{ID: id, Body: strings.Repeat("x", size)}, nil
}
