// Package cloudoutput wraps a cloud-SDK-style call whose output carries a
// ResultMetadata held by value with only unexported state: the plain
// annotation wraps it, replays hold the metadata's zero value, and the
// doc line names the type whose state is not restored.
package cloudoutput

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/cloudoutput/sdk"
)

var runs atomic.Int64

func str(s string) *string { return &s }

// Put stores an object once per key.
//
//idem:ttl=1h
func Put(ctx context.Context, key string) (out *sdk.PutObjectOutput, err error) {
	runs.Add(1)
	size := int64(len(key))
	out = &sdk.PutObjectOutput{ETag: str(`"e-` + key + `"`), Size: &size, Checksums: map[string]string{}}
	out.ResultMetadata.Set("request-id", "r1")
	return out, nil
}
