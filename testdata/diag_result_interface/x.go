package p

import (
	"context"
	"fmt"
)

type Res struct{ Data fmt.Stringer } // an any would be stored by its dynamic value

// F returns a struct holding an interface; G an error value.
//
//idem:ttl=1h
func F(ctx context.Context) (Res, error) { return Res{}, nil }

//idem:ttl=1h
func G(ctx context.Context) (error, error) { return nil, nil }
