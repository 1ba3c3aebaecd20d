package p

import (
	"context"
	"fmt"
)

type Res struct{ Data fmt.Stringer } // an any would be stored by its dynamic value

// F returns a struct holding an interface with methods (an error or an
// any would be stored).
//
//idem:ttl=1h
func F(ctx context.Context) (Res, error) { return Res{}, nil }
