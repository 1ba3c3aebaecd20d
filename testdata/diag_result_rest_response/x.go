package p

import (
	"context"
	"net/http"
)

type Repo struct{ Name string }

// Get returns a REST-client-style (T, *http.Response, error).
//
//idem:ttl=1h
func Get(ctx context.Context, name string) (*Repo, *http.Response, error) { return nil, nil, nil }
