// Package p keys a parameter that holds an *http.Request, which reaches
// itself through its Response: one exclude= of the request lifts every
// refusal below it.
package p

import (
	"context"
	"net/http"
)

type In struct {
	ID  string
	Req *http.Request
}

// Send sends in.
//
//idem:ttl=1h
func Send(ctx context.Context, in In) (string, error) { return "", nil }
