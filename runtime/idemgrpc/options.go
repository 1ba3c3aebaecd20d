package idemgrpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/idemgen/idemgen/runtime/idemcall"
)

// Defaults.
const (
	// DefaultName is the Spec name of a Server without idemcall.WithName.
	DefaultName = "idemgrpc"
	// DefaultRetryAfter is the RetryInfo delay of Aborted and Unavailable
	// answers.
	DefaultRetryAfter = time.Second
)

// PrincipalFunc returns the identity of the client making the call whose
// context is ctx (from its peer certificate, its token...). Keys are scoped
// by it. An error or an empty principal answers codes.Unauthenticated with
// the error's text, so return messages fit for the client.
type PrincipalFunc func(ctx context.Context) (string, error)

// Option configures NewServer.
type Option func(*config)

type config struct {
	call         []idemcall.Option
	principal    PrincipalFunc
	noPrincipal  bool
	guarded      func(fullMethod string) bool
	required     func(fullMethod string) bool
	record       func(codes.Code) bool
	clientCancel bool
	retryAfter   time.Duration
	set          map[string]bool
}

func defaultConfig() config {
	return config{
		guarded:    func(string) bool { return true },
		required:   func(string) bool { return false },
		record:     func(codes.Code) bool { return false },
		retryAfter: DefaultRetryAfter,
		set:        map[string]bool{},
	}
}

func (c *config) check() error {
	for name, f := range map[string]bool{
		"WithPrincipal": c.principal == nil, "WithMethods": c.guarded == nil, "WithKeyRequired": c.required == nil,
	} {
		if c.set[name] && f {
			return fmt.Errorf("%s(nil)", name)
		}
	}
	switch {
	case c.set["WithRetryAfter"] && c.retryAfter <= 0:
		return fmt.Errorf("WithRetryAfter(%v): must be positive", c.retryAfter)
	case c.principal == nil && !c.noPrincipal:
		return errors.New("NewServer needs WithPrincipal, so that one client cannot replay another's responses (or WithoutPrincipal to share one key space deliberately)")
	case c.principal != nil && c.noPrincipal:
		return errors.New("WithPrincipal and WithoutPrincipal are exclusive")
	}
	return nil
}

// WithPrincipal sets the function that identifies the client of a call.
// A Server needs it (or WithoutPrincipal).
func WithPrincipal(f PrincipalFunc) Option {
	return func(c *config) { c.principal, c.set["WithPrincipal"] = f, true }
}

// WithoutPrincipal declares that all clients share one key space: any
// client that guesses another's key gets its response. Use it only when
// there is one client, or the key space is partitioned otherwise.
func WithoutPrincipal() Option {
	return func(c *config) { c.noPrincipal = true }
}

// WithMethods sets which unary methods the interceptor guards, by full
// method name ("/pkg.Service/Method"); the others pass straight through,
// with or without a key. Default: every unary method.
func WithMethods(guarded func(fullMethod string) bool) Option {
	return func(c *config) { c.guarded, c.set["WithMethods"] = guarded, true }
}

// WithKeyRequired sets which guarded methods refuse a call without an
// idempotency-key (codes.InvalidArgument). Default: none; a call without
// a key runs unguarded, as gRPC services mix reads and writes and most
// clients send no key.
func WithKeyRequired(required func(fullMethod string) bool) Option {
	return func(c *config) { c.required, c.set["WithKeyRequired"] = required, true }
}

// WithRecordCodes records handler errors with these codes and replays them
// (code, message and details) to retries, as idemhttp records 4xx answers:
// choose codes that say the request itself was refused for good
// (InvalidArgument, NotFound, AlreadyExists, PermissionDenied,
// FailedPrecondition, OutOfRange). By default no error is recorded: the
// error is returned, the key released, and a retry runs the method again.
// codes.OK is ignored.
func WithRecordCodes(cs ...codes.Code) Option {
	set := map[codes.Code]bool{}
	for _, code := range cs {
		if code != codes.OK {
			set[code] = true
		}
	}
	return func(c *config) { c.record = func(code codes.Code) bool { return set[code] } }
}

// WithCall sets the guarded call's options (idemcall.WithName, the key
// space in the store, default "idemgrpc"; WithVersion, WithTTL,
// WithLease; WithWait makes a call that arrives while the first call with
// its key runs wait for it and get its outcome, instead of an immediate
// codes.Aborted).
func WithCall(opts ...idemcall.Option) Option {
	return func(c *config) { c.call = append(c.call, opts...) }
}

// WithClientCancel passes the client's cancellation and deadline to the
// method. By default the guarded method runs with a context that keeps the
// call's values (metadata, peer) but is not canceled when the client
// gives up: the client is expected to retry with the same key and should
// then find the outcome of a call that ran to the end.
func WithClientCancel() Option { return func(c *config) { c.clientCancel = true } }

// WithRetryAfter sets the RetryInfo delay of Aborted and Unavailable
// answers (default 1s).
func WithRetryAfter(d time.Duration) Option {
	return func(c *config) { c.retryAfter, c.set["WithRetryAfter"] = d, true }
}
