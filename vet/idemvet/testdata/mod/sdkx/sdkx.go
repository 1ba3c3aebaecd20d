// Package sdkx is another package's SDK, which wrapsdk wraps without
// forwarding functions.
package sdkx

import "context"

// Charge charges a card.
func Charge(ctx context.Context, id string) (string, error) { return id, nil }

// Client is the SDK's client.
type Client struct{}

// Refund refunds a charge.
func (*Client) Refund(ctx context.Context, id string) (string, error) { return id, nil }
