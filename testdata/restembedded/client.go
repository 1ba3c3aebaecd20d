// Package restembedded wraps a REST client whose methods return
// (T, *Response, error) with Response embedding *http.Response: the one
// omit= the diagnostics advise (diag_result_rest_embedded) leaves out the
// HTTP response and keeps the rate limit.
package restembedded

import (
	"context"
	"net/http"
	"sync/atomic"
)

// Repo is a REST resource.
type Repo struct {
	ID   int64
	Name string
}

// Response is the client's response: the HTTP one and the rate limit.
type Response struct {
	*http.Response
	Rate int
}

// ReposService calls the repositories API.
type ReposService struct{ runs atomic.Int64 }

// Create creates a repository once per name.
//
//idem:ttl=1h omit=r2.Response
func (s *ReposService) Create(ctx context.Context, name string) (*Repo, *Response, error) {
	n := s.runs.Add(1)
	return &Repo{ID: n, Name: name}, &Response{Response: &http.Response{StatusCode: 201}, Rate: 4999}, nil
}
