// Package foreigngenerics wraps another package's functions and methods
// whose parameters and results are instances of its generic types
// (sdk.Query[string], sdk.Page[sdk.Item]), beside a generic function of
// its own: each instance gets helpers of its own, in one generated file.
package foreigngenerics

import (
	"context"

	"github.com/idemgen/idemgen/testdata/foreigngenerics/sdk"
)

//idem:ttl=1h
var _ = sdk.List

//idem:ttl=1h
var _ = (*sdk.Catalog).Prices

// Reprice is the package's own generic function: the advice of the
// refusal of sdk's generic ones.
//
//idem:ttl=1h
func Reprice[N ~int64 | ~int32](ctx context.Context, q sdk.Query[string], by N) (sdk.Page[sdk.Item], error) {
	p, err := sdk.List(ctx, q)
	for i := range p.Items {
		p.Items[i].Price += int64(by)
	}
	return p, err
}
