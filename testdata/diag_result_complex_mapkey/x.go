package p

import "context"

type Pt struct{ X, Y int }

// F returns a complex number; G a map keyed by a struct.
//
//idem:ttl=1h
func F(ctx context.Context) (complex128, error) { return 0, nil }

//idem:ttl=1h
func G(ctx context.Context) (map[Pt]string, error) { return nil, nil }
