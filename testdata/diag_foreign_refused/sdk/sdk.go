// Package sdk is another package whose functions the case tries to wrap.
package sdk

import "context"

// New creates something.
func New(ctx context.Context, name string) (string, error) { return name, nil }

// Sum cannot fail: it has no error result.
func Sum(a, b int) int { return a + b }

// Handler is a variable holding a function.
var Handler = func(ctx context.Context) error { return nil }

// Doer is an interface.
type Doer interface {
	Do(ctx context.Context) error
}

// Client is a client.
type Client struct{}

// Create creates.
func (c *Client) Create(ctx context.Context, name string) error { return nil }

// Delete deletes.
func (c *Client) Delete(ctx context.Context, name string) error { return nil }

// Map is generic.
func Map[T any](ctx context.Context, v T) (T, error) { return v, nil }

type options struct{ retries int }

// Configure takes a type its callers cannot name.
func Configure(ctx context.Context, o *options) error { return nil }

// Send takes a channel, which cannot be keyed.
func Send(ctx context.Context, to string, done chan struct{}) error { return nil }

// Store has the name of a type of the wrapping package.
type Store struct{}

// Put puts.
func (s *Store) Put(ctx context.Context, key string) error { return nil }
