package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_result_unnamable/lib"
)

// F returns a type with a field the generated code cannot name.
//
//idem:ttl=1h
func F(ctx context.Context) (lib.Result, error) { return lib.Result{}, nil }
