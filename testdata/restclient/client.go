// Package restclient wraps a REST-client-style method returning
// (T, *http.Response, error): the response cannot be stored (its Body is
// an io.ReadCloser); the diagnostic advises omit=r2.
package restclient

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// User is a REST resource.
type User struct {
	ID       int64
	Login    string
	Email    *string
	Orgs     []string
	Created  time.Time
	Settings map[string]bool
}

// UsersService calls the users API.
type UsersService struct{ runs atomic.Int64 }

// Create creates a user once per login.
//
//idem:ttl=1h omit=r2
func (s *UsersService) Create(ctx context.Context, login string) (*User, *http.Response, error) {
	s.runs.Add(1)
	return &User{ID: 7, Login: login, Orgs: []string{}, Created: time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("X", 3600))},
		&http.Response{StatusCode: 201, Header: http.Header{"X": {"y"}}}, nil
}
