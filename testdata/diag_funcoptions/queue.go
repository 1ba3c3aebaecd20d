// Package diag_funcoptions annotates a functional-options call with the
// plain directive, as a new user would: the diagnostics must advise the
// exact options that make it wrap (funcoptions is the result).
package diag_funcoptions

import (
	"context"

	"github.com/idemgen/idemgen/testdata/diag_funcoptions/sdk"
)

// Notifier sends notifications through a queue.
type Notifier struct {
	Queue *sdk.Client
}

// Send sends in once per input.
//
//idem:ttl=1h
func (n *Notifier) Send(ctx context.Context, in *sdk.SendMessageInput, optFns ...func(*sdk.Options)) (*sdk.SendMessageOutput, error) {
	return n.Queue.SendMessage(ctx, in, optFns...)
}
