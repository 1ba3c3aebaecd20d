package idemgrpc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
)

// Defaults.
const (
	// DefaultName is the Spec name of a Server without WithName.
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
	name         string
	version      int
	ttl          time.Duration
	lease        time.Duration
	wait         time.Duration
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
		name:       DefaultName,
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
	for name, d := range map[string]time.Duration{"WithTTL": c.ttl, "WithLease": c.lease, "WithWaitInFlight": c.wait, "WithRetryAfter": c.retryAfter} {
		if c.set[name] && d <= 0 {
			return fmt.Errorf("%s(%v): must be positive", name, d)
		}
	}
	switch {
	case c.name == "":
		return errors.New("WithName: empty name")
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

// WithName sets the Spec name, the key space in the store (default
// "idemgrpc").
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithVersion sets the Spec version: bump it to start a fresh key space.
func WithVersion(v int) Option { return func(c *config) { c.version = v } }

// WithTTL sets how long a recorded response is replayed (default 24h).
func WithTTL(d time.Duration) Option {
	return func(c *config) { c.ttl, c.set["WithTTL"] = d, true }
}

// WithLease sets the in-progress lease (default 30s), heartbeated every
// lease/3 while the method runs.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.lease, c.set["WithLease"] = d, true }
}

// WithWaitInFlight makes a call that arrives while the first call with its
// key runs wait for it (up to d) and get its outcome, instead of an
// immediate codes.Aborted.
func WithWaitInFlight(d time.Duration) Option {
	return func(c *config) { c.wait, c.set["WithWaitInFlight"] = d, true }
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
