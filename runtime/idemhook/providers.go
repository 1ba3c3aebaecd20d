package idemhook

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Stripe verifies Stripe deliveries: the Stripe-Signature header's `t=`
// timestamp and `v1=` signatures (HMAC-SHA256, hex, over "t.body"; several
// during a secret's rolling), a timestamp within Tolerance. The delivery ID
// is the event's "id" in the verified payload (Stripe sends one event,
// with one id, on every retry). Build it with NewStripe.
type Stripe struct {
	// Tolerance is how far t= may be from now either way; zero means
	// DefaultTolerance.
	Tolerance time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	secrets [][]byte
}

// NewStripe returns a verifier accepting a signature by any of the
// endpoint's signing secrets ("whsec_…", used as they are).
func NewStripe(secrets ...string) *Stripe { return &Stripe{secrets: byteKeys(secrets)} }

// Verify implements Verifier.
func (v *Stripe) Verify(h http.Header, body []byte) (string, error) {
	if len(v.secrets) == 0 {
		return "", noSecrets("Stripe")
	}
	hdr := h.Get("Stripe-Signature")
	var tsv string
	var sigs []string
	for _, item := range strings.Split(hdr, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(item), "=")
		switch k {
		case "t":
			tsv = val
		case "v1":
			if len(sigs) < maxSignatures {
				sigs = append(sigs, val)
			}
		}
	}
	if tsv == "" || len(sigs) == 0 {
		return "", fmt.Errorf("%w: Stripe-Signature needs t= and v1=", ErrMalformed)
	}
	ts, err := parseUnix("Stripe-Signature t=", tsv)
	if err != nil {
		return "", err
	}
	ok := false
	for _, s := range sigs {
		if hexMatch(v.secrets, s, []byte(tsv), []byte{'.'}, body) {
			ok = true
		}
	}
	if !ok {
		return "", ErrSignature
	}
	if err := (clock{v.Tolerance, v.Now}).fresh(ts); err != nil {
		return "", err
	}
	return jsonID(body, "id")
}

// GitHub verifies GitHub deliveries: X-Hub-Signature-256 "sha256=" and the
// HMAC-SHA256 of the body, hex. GitHub signs no timestamp, so a captured
// delivery can be sent again at any time: the record of its ID (kept for
// the receiver's TTL) is what refuses it. The delivery ID is
// X-GitHub-Delivery, which a redelivery keeps. Build it with NewGitHub.
type GitHub struct {
	secrets [][]byte
}

// NewGitHub returns a verifier accepting a signature by any of the
// webhook's secrets.
func NewGitHub(secrets ...string) *GitHub { return &GitHub{secrets: byteKeys(secrets)} }

// Verify implements Verifier.
func (v *GitHub) Verify(h http.Header, body []byte) (string, error) {
	if len(v.secrets) == 0 {
		return "", noSecrets("GitHub")
	}
	sig, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
	id := h.Get("X-GitHub-Delivery")
	if !ok || id == "" {
		return "", fmt.Errorf("%w: GitHub needs X-Hub-Signature-256: sha256=… and X-GitHub-Delivery", ErrMalformed)
	}
	if !hexMatch(v.secrets, sig, body) {
		return "", ErrSignature
	}
	return id, nil
}

// Slack verifies Slack requests: X-Slack-Signature "v0=" and the
// HMAC-SHA256, hex, of "v0:X-Slack-Request-Timestamp:body", with the
// timestamp within Tolerance. The delivery ID is the "event_id" of an
// Events API payload (the same on every retry, which adds
// X-Slack-Retry-Num); a payload without one (slash commands, the
// url_verification handshake) is refused with ErrMalformed, so route those
// elsewhere. Build it with NewSlack.
type Slack struct {
	// Tolerance is how far X-Slack-Request-Timestamp may be from now
	// either way; zero means DefaultTolerance.
	Tolerance time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	secrets [][]byte
}

// NewSlack returns a verifier accepting a signature by any of the app's
// signing secrets.
func NewSlack(secrets ...string) *Slack { return &Slack{secrets: byteKeys(secrets)} }

// Verify implements Verifier.
func (v *Slack) Verify(h http.Header, body []byte) (string, error) {
	if err := v.signed(h, body); err != nil {
		return "", err
	}
	return jsonID(body, "event_id")
}

// signed checks the signature and the timestamp.
func (v *Slack) signed(h http.Header, body []byte) error {
	if len(v.secrets) == 0 {
		return noSecrets("Slack")
	}
	tsv := h.Get("X-Slack-Request-Timestamp")
	sig, ok := strings.CutPrefix(h.Get("X-Slack-Signature"), "v0=")
	if !ok || tsv == "" {
		return fmt.Errorf("%w: Slack needs X-Slack-Signature: v0=… and X-Slack-Request-Timestamp", ErrMalformed)
	}
	ts, err := parseUnix("X-Slack-Request-Timestamp", tsv)
	if err != nil {
		return err
	}
	// The signed text is the header as sent, not the number re-printed.
	if !hexMatch(v.secrets, sig, []byte("v0:"), []byte(tsv), []byte{':'}, body) {
		return ErrSignature
	}
	return (clock{v.Tolerance, v.Now}).fresh(ts)
}
