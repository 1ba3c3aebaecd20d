// Package idemhook receives webhook deliveries and runs a typed handler
// once per delivery ID: verify, then claim, then handle, then answer.
//
//	v, err := idemhook.NewStandardWebhooks(os.Getenv("WEBHOOK_SECRET"))
//	if err != nil { ... }
//	rc, err := idemhook.New(g, v, func(ctx context.Context, ev InvoicePaid) error {
//		return book(ctx, ev) // once per webhook-id
//	}, idemhook.WithName("billing.invoices"))
//	if err != nil { ... }
//	mux.Handle("POST /webhooks/invoices", rc)
//
// For each delivery, in this order:
//
//   - the body is read once, up to WithMaxBodyBytes (413 past it);
//   - the Verifier checks the signature and the timestamp window and
//     returns the delivery ID: 401 for a bad signature, 400 for missing or
//     malformed headers and stale timestamps. Nothing before this touches
//     the store, so a forged delivery can neither leave a record nor hold
//     a real delivery's ID (the suppression attack);
//   - the body is decoded as JSON into the handler's type (400 if it does
//     not decode);
//   - the ID is claimed through the Guard, with the raw body as the
//     payload fingerprint, and the handler runs once.
//
// A duplicate of a handled delivery is answered 200 at once with
// Idempotent-Replayed: true; a duplicate of a running one waits for it
// (WithInProgress) and is answered 409 with Retry-After past the wait, or
// 202 at once; a handler error answers 500 and releases the ID so the
// sender's retry runs it again (WithRecordFailures records it instead).
//
// Built-in verifiers: Standard Webhooks (HMAC-SHA256 and Ed25519), Stripe,
// GitHub and Slack; each takes several secrets for rotation and compares
// in constant time. docs/WEBHOOKS.md has the per-provider table.
package idemhook
