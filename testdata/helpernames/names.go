// Package helpernames declares the names its helpers would take: the
// generator numbers its own (idemKeyRequest2, idemEncRes2 and idemDecRes2)
// rather than shadow or redeclare the package's.
package helpernames

import (
	"context"
	"sync/atomic"
)

type Request struct {
	ID    string
	Units int
}

type Res struct {
	Total int
	Note  string
}

// idemKeyRequest is the name Request's key helper would take.
func idemKeyRequest() string { return "the package's own" }

// idemDecRes is the name Res's decoder would take; its encoder's name,
// idemEncRes, is free.
var idemDecRes = idemKeyRequest()

var executions atomic.Int32

//idem:ttl=60
func Charge(ctx context.Context, req Request) (Res, error) {
	executions.Add(1)
	return Res{Total: req.Units * 2, Note: idemDecRes}, nil
}
