// Package cloudoutput wraps a cloud-SDK-style call whose output carries a
// ResultMetadata with only unexported state: the diagnostic advises
// omit=out.ResultMetadata, and with it the call wraps.
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
//idem:ttl=1h omit=out.ResultMetadata
func Put(ctx context.Context, key string) (out *sdk.PutObjectOutput, err error) {
	runs.Add(1)
	size := int64(len(key))
	out = &sdk.PutObjectOutput{ETag: str(`"e-` + key + `"`), Size: &size, Checksums: map[string]string{}}
	out.ResultMetadata.Set("request-id", "r1")
	return out, nil
}
