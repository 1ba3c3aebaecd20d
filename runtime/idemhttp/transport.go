package idemhttp

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strconv"
)

// Transport is the client side of the Idempotency-Key header: an
// http.RoundTripper that gives each request whose method needs a key (POST
// and PATCH by default, the draft's non-idempotent methods) an
// Idempotency-Key header, and sends every other request untouched.
//
// Where the key comes from, first match wins:
//
//  1. an Idempotency-Key header the caller set: kept as is;
//  2. a key in the request's context (ContextWithKey): sent as the header;
//  3. otherwise a fresh key (NewKey, or the NewKey field).
//
// A retry must carry the key of the attempt it repeats, and Transport
// cannot tell a retry from a new request: it runs once per RoundTrip.
// So either place it where RoundTrip runs once per logical request, above
// the retry layer:
//
//	rc := retryablehttp.NewClient()
//	client := &http.Client{Transport: &idemhttp.Transport{
//		Base: &retryablehttp.RoundTripper{Client: rc}, // retries inside one RoundTrip
//	}}
//
// or, where a retry layer above it calls it once per attempt (a retrying
// client whose HTTPClient.Transport is this Transport, or a loop that
// calls client.Do again), fix the key when the logical request is made:
// with ContextWithKey on the request's context (retrying clients reuse the
// context for every attempt, and Request.Clone and WithContext keep it),
// or by setting the header yourself. A Transport below a retry layer that
// finds neither mints a new key per attempt, and the server runs every
// attempt: that is the one placement to avoid.
//
// Transport never modifies the caller's request: it sends a copy with the
// header added (RoundTripper contract).
type Transport struct {
	// Base sends the requests; nil means http.DefaultTransport.
	Base http.RoundTripper
	// Methods are the methods that get a key; nil means POST and PATCH.
	// The draft targets the non-idempotent methods; add PUT or DELETE here
	// if the server guards them too. GET, HEAD, OPTIONS and TRACE are
	// safe and never get one, even if listed.
	Methods []string
	// NewKey mints a key; nil means NewKey (a random UUID).
	NewKey func() string
}

// safeMethods never carry a key: they have no effect to repeat.
var safeMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodOptions: true, http.MethodTrace: true,
}

func (t *Transport) needsKey(method string) bool {
	if safeMethods[method] {
		return false
	}
	if t.Methods == nil {
		return method == http.MethodPost || method == http.MethodPatch
	}
	for _, m := range t.Methods {
		if m == method {
			return true
		}
	}
	return false
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if !t.needsKey(req.Method) || len(req.Header.Values(KeyHeader)) > 0 {
		return base.RoundTrip(req)
	}
	key, ok := KeyFromContext(req.Context())
	if !ok {
		if t.NewKey != nil {
			key = t.NewKey()
		} else {
			key = NewKey()
		}
	}
	if _, err := ParseKey([]string{FormatKey(key)}); err != nil {
		if req.Body != nil {
			req.Body.Close() //nolint:errcheck // RoundTrip must close the body, even on errors
		}
		return nil, fmt.Errorf("idemhttp: Transport: key %q: %w", key, err)
	}
	r2 := *req // shallow copy: same body, context and URL
	r2.Header = req.Header.Clone()
	if r2.Header == nil {
		r2.Header = http.Header{}
	}
	r2.Header.Set(KeyHeader, FormatKey(key))
	return base.RoundTrip(&r2)
}

// NewKey returns a fresh random key: a version 4 UUID (122 random bits),
// as the draft recommends.
func NewKey() string {
	var u [16]byte
	rand.Read(u[:]) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// FormatKey returns key as the header's value: an RFC 8941 sf-string
// (quoted, with \ and " escaped), the draft's syntax.
func FormatKey(key string) string {
	return strconv.Quote(key) // printable ASCII keys quote the same in Go and RFC 8941
}

type keyContextKey struct{}

// ContextWithKey returns a context whose requests carry key as their
// Idempotency-Key (through Transport). Use one per logical request: every
// attempt of a retry made with this context sends the same key.
func ContextWithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContextKey{}, key)
}

// ContextWithNewKey is ContextWithKey with a fresh key (NewKey), which it
// also returns.
func ContextWithNewKey(ctx context.Context) (context.Context, string) {
	k := NewKey()
	return ContextWithKey(ctx, k), k
}

// KeyFromContext returns the key ContextWithKey put in ctx.
func KeyFromContext(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyContextKey{}).(string)
	return k, ok
}
