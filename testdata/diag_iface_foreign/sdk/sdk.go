// Package sdk has a type with the name of an interface of the case's package.
package sdk

import "context"

// Carrier is a client.
type Carrier struct{}

// Book books.
func (c *Carrier) Book(ctx context.Context, id string) error { return nil }
