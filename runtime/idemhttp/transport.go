package idemhttp

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idemgen/idemgen/runtime/idemkey"
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
//  3. otherwise a fresh key (idemkey.New, or the NewKey field).
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
	// NewKey mints a key; nil means idemkey.New (a random UUID).
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
			key = idemkey.New()
		}
	}
	if _, err := idemkey.Parse([]string{idemkey.Format(key)}); err != nil {
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
	r2.Header.Set(KeyHeader, idemkey.Format(key))
	return base.RoundTrip(&r2)
}

type keyContextKey struct{}

// ContextWithKey returns a context whose requests carry key as their
// Idempotency-Key (through Transport). Use one per logical request: every
// attempt of a retry made with this context sends the same key.
func ContextWithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContextKey{}, key)
}

// ContextWithNewKey is ContextWithKey with a fresh key (idemkey.New), which it
// also returns.
func ContextWithNewKey(ctx context.Context) (context.Context, string) {
	k := idemkey.New()
	return ContextWithKey(ctx, k), k
}

// KeyFromContext returns the key ContextWithKey put in ctx.
func KeyFromContext(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(keyContextKey{}).(string)
	return k, ok
}
