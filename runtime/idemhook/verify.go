package idemhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A Verifier checks that a delivery comes from its sender and returns the
// sender's delivery ID, the key under which the delivery is deduplicated.
// It sees the request's headers and its raw body, before anything is
// claimed or decoded. An error wrapping ErrMalformed or ErrStale answers
// 400; any other error (ErrSignature for the built-in verifiers) answers
// 401. Either way nothing reaches the store.
type Verifier interface {
	Verify(h http.Header, body []byte) (id string, err error)
}

// VerifierFunc adapts a function to Verifier.
type VerifierFunc func(h http.Header, body []byte) (string, error)

// Verify calls f.
func (f VerifierFunc) Verify(h http.Header, body []byte) (string, error) { return f(h, body) }

// Verification errors. The built-in verifiers wrap one of them.
var (
	// ErrSignature: no signature in the delivery matches a secret (401).
	ErrSignature = errors.New("idemhook: no signature matches")
	// ErrMalformed: a header the scheme needs is missing or unreadable, or
	// the verified payload carries no delivery ID (400).
	ErrMalformed = errors.New("idemhook: malformed delivery")
	// ErrStale: a correctly signed delivery whose timestamp is outside the
	// tolerance window, a replay of a captured delivery (400).
	ErrStale = errors.New("idemhook: delivery timestamp outside the tolerance window")
)

// DefaultTolerance is how far a signed timestamp may be from now, either
// way, when a verifier's Tolerance is zero: the five minutes Standard
// Webhooks, Stripe and Slack recommend.
const DefaultTolerance = 5 * time.Minute

// clock is the timestamp check the timestamped schemes share.
type clock struct {
	tolerance time.Duration
	now       func() time.Time
}

// fresh checks a Unix-seconds timestamp header against the window.
func (c clock) fresh(ts int64) error {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	tol := c.tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	d := now().Sub(time.Unix(ts, 0))
	if d > tol || d < -tol {
		return fmt.Errorf("%w: signed %v from now, tolerance %v", ErrStale, -d.Round(time.Second), tol)
	}
	return nil
}

// parseUnix reads a Unix-seconds timestamp.
func parseUnix(name, v string) (int64, error) {
	ts, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ts <= 0 {
		return 0, fmt.Errorf("%w: %s %q is not a Unix time in seconds", ErrMalformed, name, v)
	}
	return ts, nil
}

// macSHA256 is HMAC-SHA256 of the concatenated parts under key.
func macSHA256(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// hexMatch reports whether sig, hex-encoded, is the MAC of parts under one
// of keys. Every comparison is constant-time (hmac.Equal); an undecodable
// signature matches nothing.
func hexMatch(keys [][]byte, sig string, parts ...[]byte) bool {
	want, err := hex.DecodeString(sig)
	if err != nil || len(want) != sha256.Size {
		return false
	}
	ok := false
	for _, k := range keys {
		// No early exit: the time spent does not tell which key matched.
		if hmac.Equal(macSHA256(k, parts...), want) {
			ok = true
		}
	}
	return ok
}

// byteKeys converts string secrets to keys.
func byteKeys(secrets []string) [][]byte {
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		keys[i] = []byte(s)
	}
	return keys
}

// jsonID reads the string field name at the top level of a JSON object:
// the event ID of a Stripe or Slack payload. It is read from the verified
// body only.
func jsonID(body []byte, field string) (string, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return "", fmt.Errorf("%w: the payload is not a JSON object: %v", ErrMalformed, err)
	}
	var id string
	if raw, ok := obj[field]; !ok || json.Unmarshal(raw, &id) != nil || id == "" {
		return "", fmt.Errorf("%w: the payload has no %q string", ErrMalformed, field)
	}
	return id, nil
}

// noSecrets is the error of a verifier built without a secret: it refuses
// everything rather than accept anything.
func noSecrets(name string) error {
	return fmt.Errorf("%w: %s verifier has no secret", ErrSignature, name)
}
