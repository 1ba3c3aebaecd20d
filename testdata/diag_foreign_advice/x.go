// Package p wraps an SDK's function and a client method with the plain
// annotation, as a new user would: the diagnostics advise key= (the SDK's
// own idempotency key) and omit= (the embedded *http.Response), and
// following them gives testdata/foreign.
package p

import "github.com/idemgen/idemgen/testdata/diag_foreign_advice/sdk"

//idem:ttl=24h
var _ = sdk.New

//idem:ttl=1h
var _ = (*sdk.IssuesService).Create

// A second method of IssuesService: one wrapper type holds both.
//
//idem:on_duplicate=raise
var _ = (*sdk.IssuesService).Lock
