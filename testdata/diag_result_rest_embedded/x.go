// Package p returns a REST client's (T, *Response, error) where Response
// embeds *http.Response: http.Response and http.Request point at each
// other, so one omit= must name the embedded response as a whole.
package p

import (
	"context"
	"net/http"
)

type Repo struct{ Name string }

// Response is the client's response: the HTTP one and the rate limit.
type Response struct {
	*http.Response
	Rate int
}

// Get gets a repository.
//
//idem:ttl=1h
func Get(ctx context.Context, name string) (*Repo, *Response, error) { return nil, nil, nil }
