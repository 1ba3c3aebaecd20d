// Package diag_funcoptions annotates a functional-options call with the
// plain directive, as a new user would: the options are left out of the
// key by default (the doc line names them); the diagnostics advise the
// omit= that makes it wrap.
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
