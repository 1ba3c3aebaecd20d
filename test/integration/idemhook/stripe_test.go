package idemhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/idemgen/idemgen/runtime/idemhook"
)

// Stripe publishes no signature vectors; its Go library signs test
// deliveries (webhook.GenerateTestSignedPayload) and verifies them
// (webhook.ValidatePayload). idemhook's Stripe verifier must accept what
// the library signs and agree with the library's own verdict on every
// delivery, signed or tampered.
func TestStripeAgreesWithStripeGo(t *testing.T) {
	const secret = "whsec_agree"
	body := []byte(`{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"invoice.paid"}`)
	now := time.Now()
	tests := []struct {
		name    string
		secret  string    // what the delivery was signed with
		at      time.Time // its timestamp
		body    []byte    // what arrives (the signature covers body)
		scheme  string
		accepts bool
	}{
		{"signed now", secret, now, body, "", true},
		{"signed a minute ago", secret, now.Add(-time.Minute), body, "", true},
		{"another secret", "whsec_other", now, body, "", false},
		{"stale", secret, now.Add(-10 * time.Minute), body, "", false},
		{"tampered body", secret, now, []byte(`{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"invoice.voided"}`), "", false},
		{"v0 scheme only", secret, now, body, "v0", false},
	}
	v := idemhook.NewStripe(secret)
	type verdict struct {
		Ours, StripeGo bool
		ID             string
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: tt.secret, Timestamp: tt.at, Scheme: tt.scheme})
			h := http.Header{}
			h.Set("Stripe-Signature", signed.Header)
			id, err := v.Verify(h, tt.body)
			got := verdict{Ours: err == nil, StripeGo: webhook.ValidatePayload(tt.body, signed.Header, secret) == nil, ID: id}
			want := verdict{Ours: tt.accepts, StripeGo: tt.accepts}
			if tt.accepts {
				want.ID = "evt_1NG8Du2eZvKYlo2CUI79vXWy"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("header %q (-want +got):\n%s(idemhook: %v)", signed.Header, diff, err)
			}
		})
	}
}
