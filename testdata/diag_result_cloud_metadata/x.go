package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/cloudoutput/sdk"
)

// Put returns a cloud-SDK-style output: its ResultMetadata holds nothing
// exported, so the plain annotation is refused with omit= advice.
//
//idem:ttl=1h
func Put(ctx context.Context, key string) (*sdk.PutObjectOutput, error) { return nil, nil }
