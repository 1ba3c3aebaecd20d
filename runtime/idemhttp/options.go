package idemhttp

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/idemgen/idemgen/runtime/idemcall"
)

// Defaults of a Middleware's limits.
const (
	// DefaultMaxRequestBytes bounds the request body the middleware reads
	// to fingerprint it (1 MiB).
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxResponseBytes bounds the response body it records (1 MiB).
	DefaultMaxResponseBytes = 1 << 20
	// DefaultRetryAfter is the Retry-After of 409 and 503 responses.
	DefaultRetryAfter = time.Second
	// DefaultName is the Spec name of a middleware without
	// idemcall.WithName.
	DefaultName = "idemhttp"
	// ReplayHeader marks a replayed response.
	ReplayHeader = "Idempotent-Replayed"
	// KeyHeader is the request header carrying the idempotency key.
	KeyHeader = "Idempotency-Key"
)

// PrincipalFunc returns the identity of the client making r (an account,
// an API key's owner, a tenant). Keys are scoped by it: two principals
// using the same Idempotency-Key never see each other's responses. An
// error, or an empty principal, answers 401 with the error's text as the
// problem's detail, so return messages fit for the client.
type PrincipalFunc func(r *http.Request) (string, error)

// Option configures New. Options only record their arguments; New checks
// them and fails on the first it cannot use.
type Option func(*config)

// config is what the options set; check validates it and derives the
// fields the middleware reads (methods, fpHeaders, replayed).
type config struct {
	call          []idemcall.Option
	principal     PrincipalFunc
	noPrincipal   bool
	methods       map[string]bool
	optional      bool
	fpHeaders     []string
	maxRequest    int64
	maxResponse   int64
	record        func(status int) bool
	clientCancel  bool
	retryAfter    time.Duration
	replayHeader  string
	problemPrefix string
	problemTypes  map[string]string // WithProblemType, by code
	replayed      map[string]bool   // per-client headers recorded anyway (WithReplayedHeaders)

	// The options' arguments as given, for check.
	set              map[string]bool // the options given, by name: "WithRecordIf" etc.
	methodList       []string
	fpNames          []string
	replayedNames    []string
	problemTypeCodes []string
}

func defaultConfig() config {
	return config{
		methods:      map[string]bool{http.MethodPost: true, http.MethodPatch: true},
		maxRequest:   DefaultMaxRequestBytes,
		maxResponse:  DefaultMaxResponseBytes,
		retryAfter:   DefaultRetryAfter,
		replayHeader: ReplayHeader,
		record:       DefaultRecordIf,
		set:          map[string]bool{},
	}
}

// check validates the options' arguments and derives the method set and
// the canonical header names.
func (c *config) check() error {
	switch {
	case c.set["WithPrincipal"] && c.principal == nil:
		return errors.New("WithPrincipal(nil)")
	case c.set["WithRecordIf"] && c.record == nil:
		return errors.New("WithRecordIf(nil)")
	case c.replayHeader == "":
		return errors.New("WithReplayHeader: empty name")
	case c.maxRequest <= 0:
		return fmt.Errorf("WithMaxRequestBytes(%d): must be positive", c.maxRequest)
	case c.maxResponse <= 0:
		return fmt.Errorf("WithMaxResponseBytes(%d): must be positive", c.maxResponse)
	case c.set["WithRetryAfter"] && c.retryAfter <= 0:
		return fmt.Errorf("WithRetryAfter(%v): must be positive", c.retryAfter)
	}
	if c.set["WithMethods"] {
		if len(c.methodList) == 0 {
			return errors.New("WithMethods: no methods")
		}
		c.methods = make(map[string]bool, len(c.methodList))
		for _, m := range c.methodList {
			if m == "" || strings.ToUpper(m) != m {
				return fmt.Errorf("WithMethods: %q is not an upper-case HTTP method", m)
			}
			c.methods[m] = true
		}
	}
	for _, code := range c.problemTypeCodes {
		if _, ok := problemKinds[code]; !ok {
			return fmt.Errorf("WithProblemType: %q is not a problem code of this package", code)
		}
		if c.problemTypes[code] == "" {
			return fmt.Errorf("WithProblemType(%q): empty type", code)
		}
	}
	for _, n := range c.fpNames {
		if n == "" {
			return errors.New("WithFingerprintHeaders: empty header name")
		}
		c.fpHeaders = append(c.fpHeaders, textproto.CanonicalMIMEHeaderKey(n))
	}
	c.replayHeader = textproto.CanonicalMIMEHeaderKey(c.replayHeader)
	for _, n := range c.replayedNames {
		k := textproto.CanonicalMIMEHeaderKey(n)
		switch {
		case perClient[k]:
			if c.replayed == nil {
				c.replayed = map[string]bool{}
			}
			c.replayed[k] = true
		case hopByHop[k]:
			return fmt.Errorf("WithReplayedHeaders: %s is a hop-by-hop header; it describes one connection and is never recorded", k)
		default:
			return fmt.Errorf("WithReplayedHeaders: %q is not a per-client header (those are %s); other headers are replayed already", n, perClientList)
		}
	}
	return nil
}

// DefaultRecordIf is which responses are recorded and replayed by default:
// every status but 5xx (a server error usually means the request did not
// take effect) and 408 and 429 (the request was not processed; the client
// should try again later).
func DefaultRecordIf(status int) bool {
	return status < 500 && status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// WithPrincipal sets the function that identifies the client of a
// request. A Middleware needs it (or WithoutPrincipal).
func WithPrincipal(f PrincipalFunc) Option {
	return func(c *config) { c.principal, c.set["WithPrincipal"] = f, true }
}

// WithoutPrincipal declares that all clients share one key space: any
// client that guesses another's key gets its response. Use it only when
// there is one client (a single-tenant internal service) or the key space
// is otherwise partitioned before the middleware.
func WithoutPrincipal() Option {
	return func(c *config) { c.noPrincipal = true }
}

// WithMethods sets the HTTP methods whose requests go through the
// middleware (default POST and PATCH). Requests with other methods pass
// straight to the handler, with or without a key.
func WithMethods(methods ...string) Option {
	return func(c *config) { c.methodList, c.set["WithMethods"] = methods, true }
}

// WithOptionalKey lets requests without an Idempotency-Key header through
// to the handler unguarded instead of answering 400. A malformed key is
// still a 400.
func WithOptionalKey() Option {
	return func(c *config) { c.optional = true }
}

// WithFingerprintHeaders adds request headers to the fingerprint (method,
// path and query, and body are always in it): a retry whose value of one
// of them differs is a 422, not a replay. Content-Type is a common choice.
func WithFingerprintHeaders(names ...string) Option {
	return func(c *config) { c.fpNames = append(c.fpNames, names...) }
}

// WithMaxRequestBytes bounds the request body (default 1 MiB). A larger
// body gets 413 and the handler does not run.
func WithMaxRequestBytes(n int64) Option {
	return func(c *config) { c.maxRequest = n }
}

// WithMaxResponseBytes bounds the response body the middleware records
// (default 1 MiB). A handler that writes more gets ErrResponseTooLarge
// from Write; the client then gets a 500 problem response, and that 500
// is recorded for the key, because the handler's effects have taken place
// and must not run again on a retry. Size the bound above the largest
// response of the routes behind the middleware.
func WithMaxResponseBytes(n int64) Option {
	return func(c *config) { c.maxResponse = n }
}

// WithStore5xx records every response, 5xx included, and replays them
// like any other. By default a 5xx is sent but not recorded, and the key is
// released so that a retry runs the handler again: a server error usually
// means the request did not take effect.
func WithStore5xx() Option {
	return func(c *config) { c.record = func(int) bool { return true } }
}

// WithRecordIf replaces DefaultRecordIf: f reports whether a response with
// the status is recorded and replayed. An unrecorded response is still
// sent, and the key is released so that a retry runs the handler again.
// Have a handler that must say "not now, retry" (an upstream lock, an
// exhausted quota) answer with a status f rejects.
func WithRecordIf(f func(status int) bool) Option {
	return func(c *config) { c.record, c.set["WithRecordIf"] = f, true }
}

// WithCall sets the guarded call's options (idemcall.WithName, the
// middleware's key space in the store, default "idemhttp"; WithVersion,
// WithTTL, WithLease; WithWait makes a request that arrives while the
// first request with its key runs wait for it and get its response,
// instead of an immediate 409).
func WithCall(opts ...idemcall.Option) Option {
	return func(c *config) { c.call = append(c.call, opts...) }
}

// WithClientCancel passes the client's cancellation through to the
// handler, as plain net/http does. By default the guarded handler runs
// with a context that is not canceled when the client disconnects or
// times out: the client is expected to retry with the same key, and the
// retry should find the outcome of a request that ran to completion, not
// one abandoned halfway. (The context keeps the request's values; the
// lease and the fence work as usual.)
func WithClientCancel() Option {
	return func(c *config) { c.clientCancel = true }
}

// WithRetryAfter sets the Retry-After of 409 and 503 responses (default
// 1s; sent in whole seconds, at least 1).
func WithRetryAfter(d time.Duration) Option {
	return func(c *config) { c.retryAfter, c.set["WithRetryAfter"] = d, true }
}

// WithReplayHeader renames the header that marks replays (default
// Idempotent-Replayed, Stripe's name; other APIs use Idempotency-Replayed
// or X-Idempotency-Replayed).
func WithReplayHeader(name string) Option {
	return func(c *config) { c.replayHeader = name }
}

// WithProblemTypeBase sets the base of the "type" member of problem
// responses: type = base + code (for example
// "https://api.example.com/problems/" + "idempotency-key-missing"). By
// default type points to the section of the IETF draft that defines the
// error (DraftURL), or for errors outside the draft to the status code's
// definition in RFC 9110.
func WithProblemTypeBase(base string) Option {
	return func(c *config) { c.problemPrefix = base }
}

// WithProblemType sets the "type" member of the problems with one code
// (CodeKeyMissing…), over WithProblemTypeBase and the default. The
// type "about:blank" makes the title the status phrase (RFC 9457, section
// 4.2.1).
func WithProblemType(code, uri string) Option {
	return func(c *config) {
		if c.problemTypes == nil {
			c.problemTypes = map[string]string{}
		}
		c.problemTypes[code] = uri
		c.problemTypeCodes = append(c.problemTypeCodes, code)
	}
}

// WithReplayedHeaders records and replays the named per-client response
// headers, which are otherwise sent to the first client only: Set-Cookie,
// Set-Cookie2, Authentication-Info and Proxy-Authentication-Info. Name one
// only when every client that may present the same key should receive it
// (a cookie that carries no session). Hop-by-hop headers and any other
// name are refused: the former describe one connection, the latter are
// replayed already.
func WithReplayedHeaders(names ...string) Option {
	return func(c *config) { c.replayedNames = append(c.replayedNames, names...) }
}
