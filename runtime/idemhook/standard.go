package idemhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Standard Webhooks headers (https://www.standardwebhooks.com).
const (
	HeaderWebhookID        = "Webhook-Id"
	HeaderWebhookTimestamp = "Webhook-Timestamp"
	HeaderWebhookSignature = "Webhook-Signature"
)

// maxSignatures bounds the signatures read from one header, so a hostile
// header cannot make a delivery cost signatures × secrets MACs without end.
const maxSignatures = 16

// StandardWebhooks verifies Standard Webhooks deliveries: `v1,` signatures
// (HMAC-SHA256, base64) and `v1a,` signatures (Ed25519, base64) over
// "webhook-id.webhook-timestamp.body", a timestamp within Tolerance, and
// several secrets at once for rotation. The delivery ID is webhook-id.
// Build it with NewStandardWebhooks.
type StandardWebhooks struct {
	// Tolerance is how far webhook-timestamp may be from now either way;
	// zero means DefaultTolerance.
	Tolerance time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	secrets [][]byte
	public  []ed25519.PublicKey
}

// NewStandardWebhooks returns a verifier accepting a signature by any of
// keys: "whsec_<base64>" symmetric secrets (the prefix is optional) and
// "whpk_<base64>" Ed25519 public keys.
func NewStandardWebhooks(keys ...string) (*StandardWebhooks, error) {
	v := &StandardWebhooks{}
	for i, k := range keys {
		if pk, ok := strings.CutPrefix(k, "whpk_"); ok {
			b, err := base64.StdEncoding.DecodeString(pk)
			if err != nil || len(b) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("idemhook: NewStandardWebhooks: key %d: not a base64 Ed25519 public key", i)
			}
			v.public = append(v.public, ed25519.PublicKey(b))
			continue
		}
		b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(k, "whsec_"))
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("idemhook: NewStandardWebhooks: key %d: not a base64 secret", i)
		}
		v.secrets = append(v.secrets, b)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("idemhook: NewStandardWebhooks: no key")
	}
	return v, nil
}

// Verify implements Verifier.
func (v *StandardWebhooks) Verify(h http.Header, body []byte) (string, error) {
	id, tsv, sigs := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp), h.Get(HeaderWebhookSignature)
	if id == "" || tsv == "" || sigs == "" {
		return "", fmt.Errorf("%w: Standard Webhooks needs webhook-id, webhook-timestamp and webhook-signature", ErrMalformed)
	}
	ts, err := parseUnix("webhook-timestamp", tsv)
	if err != nil {
		return "", err
	}
	if !v.signed(id, ts, body, strings.Fields(sigs)) {
		return "", ErrSignature
	}
	if err := (clock{v.Tolerance, v.Now}).fresh(ts); err != nil {
		return "", err
	}
	return id, nil
}

// signed reports whether one of sigs signs id.ts.body under one of the
// verifier's keys.
func (v *StandardWebhooks) signed(id string, ts int64, body []byte, sigs []string) bool {
	msg := make([]byte, 0, len(id)+len(body)+22)
	msg = append(msg, id...)
	msg = append(msg, '.')
	msg = strconv.AppendInt(msg, ts, 10)
	msg = append(msg, '.')
	msg = append(msg, body...)
	ok := false // no early exit: the time spent does not tell which key matched
	for n, s := range sigs {
		if n == maxSignatures {
			break
		}
		version, enc, found := strings.Cut(s, ",")
		if !found {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			continue
		}
		switch version {
		case "v1":
			for _, k := range v.secrets {
				if hmac.Equal(macSHA256(k, msg), sig) {
					ok = true
				}
			}
		case "v1a":
			for _, pk := range v.public {
				if len(sig) == ed25519.SignatureSize && ed25519.Verify(pk, msg, sig) {
					ok = true
				}
			}
		}
	}
	return ok
}
