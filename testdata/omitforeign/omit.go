// Package omitforeign omits the only exported field of another package's
// struct (the advice for its undecodable elements): the result is then
// stored as its remaining state would be, and the doc line names what is
// left out, instead of refusing it as a struct without exported fields.
package omitforeign

import (
	"context"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/omitforeign/api"
)

var runs atomic.Int64

// Models lists the models of an account.
//
//idem:ttl=1h omit=r1.Models
func Models(ctx context.Context, account string) (api.List, error) {
	runs.Add(1)
	return api.List{Models: []api.Model{{ID: "m1", Group: map[string]any{"a": 1.0}}}}, nil
}
