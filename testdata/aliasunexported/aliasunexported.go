// Package aliasunexported wraps functions whose parameters and results
// are exported aliases of unexported types, of its own and of other
// packages: the generated code names the aliases, never their targets.
package aliasunexported

import (
	"context"

	"github.com/idemgen/idemgen/testdata/aliasunexported/blob"
	"github.com/idemgen/idemgen/testdata/aliasunexported/blob/blockblob"
)

//idem:ttl=24h
var _ = (*blob.Client).UploadBuffer

//idem:ttl=24h
var _ = (*blob.Client).List

//idem:ttl=24h
var _ = (*blob.Client).Pages

//idem:ttl=24h
var _ = (*blockblob.BlockClient).UploadBuffer

//idem:ttl=24h
var _ = (*blockblob.BlockClient).List

type receipt struct {
	ID     string
	Amount int64
}

// Receipt aliases this package's own unexported type.
type Receipt = receipt

// Store keys and stores values of aliases of unexported types, nested.
//
//idem:ttl=1h
func Store(ctx context.Context, o *blob.UploadBufferOptions, r Receipt, ps []blockblob.Page[int64]) (map[string]blob.UploadBufferResponse, *Receipt, error) {
	return nil, &r, nil
}
