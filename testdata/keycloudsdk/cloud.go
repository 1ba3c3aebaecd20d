// Package keycloudsdk keys a cloud-SDK-style input: the empty unexported
// marker it embeds and its zero-length fields need no key material, so the
// plain annotation wraps it.
package keycloudsdk

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/keycloudsdk/sdk"
)

var runs atomic.Int64

// marker is this package's own empty marker.
type marker struct{}

// Upload is a local request embedding a marker, with a zero-length array
// of funcs (not comparable, not keyable, but holding nothing).
type Upload struct {
	marker
	Owner   string
	In      *sdk.PutObjectInput
	guard   [0]func()
	padding [0]int
}

// Put uploads an object.
//
//idem:ttl=1h
func Put(ctx context.Context, in *sdk.PutObjectInput) (int64, error) {
	return runs.Add(1), nil
}

// PutFor uploads on behalf of an owner.
//
//idem:ttl=1h
func PutFor(ctx context.Context, u Upload) (int64, error) {
	return runs.Add(1), nil
}
