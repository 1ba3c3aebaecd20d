// Package funcoptions wraps a call that takes functional options, as cloud
// SDK clients do: the options say how to send, not what, so they are
// excluded from the key (function values cannot be keyed anyway), and the
// output's ResultMetadata (unexported state only) is left out of the
// record: exactly the two options the diagnostics of diag_funcoptions
// advise, both in one run.
package funcoptions

import (
	"context"

	"github.com/idemgen/idemgen/testdata/funcoptions/sdk"
)

// Notifier sends notifications through a queue.
type Notifier struct {
	Queue *sdk.Client
}

// Send sends in once per input.
//
//idem:ttl=1h exclude=optFns omit=r1.ResultMetadata
func (n *Notifier) Send(ctx context.Context, in *sdk.SendMessageInput, optFns ...func(*sdk.Options)) (*sdk.SendMessageOutput, error) {
	return n.Queue.SendMessage(ctx, in, optFns...)
}
