package idemhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/internal/options"
)

// Receiver is an http.Handler that receives a sender's webhook deliveries
// and runs a typed handler once per delivery ID. Build it with New; it is
// safe for concurrent use.
type Receiver[T any] struct {
	g      *idem.Guard
	spec   idem.Spec
	cfg    config
	verify Verifier
	handle func(context.Context, T) error
}

// New returns a Receiver that verifies each delivery with v, decodes its
// body as JSON into a T (a []byte or json.RawMessage T gets the body as
// is) and runs handle once per delivery ID through g.
func New[T any](g *idem.Guard, v Verifier, handle func(context.Context, T) error, opts ...Option) (*Receiver[T], error) {
	if g == nil {
		return nil, errors.New("idemhook: New: nil Guard")
	}
	cfg, err := configure("New", v, handle == nil, opts)
	if err != nil {
		return nil, err
	}
	rc := &Receiver[T]{g: g, cfg: cfg, verify: v, handle: handle}
	rc.spec = newSpec(&cfg)
	return rc, nil
}

// NewWrapped returns a Receiver that verifies each delivery with v, decodes
// its body into a T and calls handle, which must be an idemgen wrapper:
// the method generated for a function annotated //idem:key=ev.ID (the
// event's own ID field), so the same annotation serves a queue consumer
// and this endpoint. The wrapper claims the key after verification, as New
// does; its annotation decides the ttl, the answer to a running duplicate
// (on_duplicate=wait, or ErrInProgress: 409, or 202 with
// WithInProgress(0, true)) and whether a failure is recorded, so
// WithName, WithTTL and WithRecordFailures are refused. A handle that
// makes no guarded call is answered 500 ("not a wrapper"): nothing would
// keep its deliveries apart.
func NewWrapped[T any](v Verifier, handle func(context.Context, T) error, opts ...Option) (*Receiver[T], error) {
	cfg, err := configure("NewWrapped", v, handle == nil, opts)
	if err != nil {
		return nil, err
	}
	def := defaultConfig()
	if cfg.name != def.name || cfg.ttl != def.ttl || cfg.recordFailures {
		return nil, errors.New("idemhook: NewWrapped: the wrapper's //idem: annotation sets the name, ttl and on_failure; drop WithName, WithTTL and WithRecordFailures")
	}
	return &Receiver[T]{cfg: cfg, verify: v, handle: handle}, nil
}

// configure is what the constructor fn does after its Guard: it needs v
// and a handler, then applies opts.
func configure(fn string, v Verifier, noHandler bool, opts []Option) (config, error) {
	switch {
	case v == nil:
		return config{}, fmt.Errorf("idemhook: %s: nil Verifier", fn)
	case noHandler:
		return config{}, fmt.Errorf("idemhook: %s: nil handler", fn)
	}
	return options.Apply("idemhook", defaultConfig(), opts, (*config).check)
}

// ServeHTTP answers one delivery: read (413 past the bound), verify (401,
// or 400 for a malformed or stale delivery), decode (400), then claim the
// delivery ID and run the handler once. Nothing before the claim touches
// the store, so a delivery that fails verification leaves no record and
// cannot hold a real delivery's ID.
func (rc *Receiver[T]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, "webhook deliveries are POSTs")
		return
	}
	body, status, err := readBody(r, rc.cfg.maxBody)
	if err != nil {
		answer(w, status, err.Error())
		return
	}
	id, err := rc.verify.Verify(r.Header, body)
	if err != nil {
		status := http.StatusUnauthorized
		if errors.Is(err, ErrMalformed) || errors.Is(err, ErrStale) {
			status = http.StatusBadRequest
		}
		answer(w, status, err.Error())
		return
	}
	var ev T
	if err := decode(body, &ev); err != nil {
		answer(w, http.StatusBadRequest, "the delivery's payload does not decode: "+err.Error())
		return
	}
	// The provider may give up on a slow answer and close the connection:
	// the run goes on, so its outcome is recorded for the retry.
	ctx := context.WithoutCancel(r.Context())
	if rc.g == nil {
		rc.wrapped(ctx, w, ev)
		return
	}
	ran := false
	var herr error
	_, err = rc.guarded(ctx, id, body, func(ctx context.Context) (struct{}, error) {
		ran = true
		herr = rc.handle(ctx, ev)
		return struct{}{}, herr
	})
	rc.respond(w, ran, herr, err)
}

// wrapped runs a NewWrapped receiver's handler, a generated wrapper that
// claims its own key, and learns from the outcome it captures whether the
// handler ran or a duplicate was answered.
func (rc *Receiver[T]) wrapped(ctx context.Context, w http.ResponseWriter, ev T) {
	ctx, outcome := idem.CaptureOutcome(ctx)
	err := rc.handle(ctx, ev)
	switch outcome() {
	case 0:
		if err != nil { // the claim itself failed (a store outage)
			rc.respond(w, false, nil, err)
			return
		}
		answer(w, http.StatusInternalServerError, "the handler is not an idemgen wrapper: the delivery ran unguarded")
	case idem.OutcomeExecuted:
		rc.respond(w, true, nil, err)
	case idem.OutcomeFailed:
		rc.respond(w, true, err, err)
	default:
		rc.respond(w, false, nil, err)
	}
}

// respond maps the guarded call's outcome to the status a sender acts on:
// 2xx stops its retries, anything else makes it retry later.
func (rc *Receiver[T]) respond(w http.ResponseWriter, ran bool, herr, err error) {
	var rec *idem.RecordedError
	switch {
	case err == nil && ran:
		answer(w, http.StatusOK, "processed")
	case err == nil:
		w.Header().Set(ReplayHeader, "true")
		answer(w, http.StatusOK, "duplicate delivery, already processed")
	case ran && herr != nil:
		// Released (retry runs it again) or, with WithRecordFailures,
		// recorded (retries are answered 200 below).
		answer(w, http.StatusInternalServerError, "the handler failed")
	case ran && errors.Is(err, idem.ErrStoreUnavailable):
		// The handler succeeded; only its record was lost.
		answer(w, http.StatusOK, "processed (not recorded)")
	case errors.As(err, &rec):
		w.Header().Set(ReplayHeader, "failed")
		answer(w, http.StatusOK, "duplicate delivery; its handler failed and the failure is recorded")
	case errors.Is(err, idem.ErrInProgress) && rc.cfg.acceptRunning:
		answer(w, http.StatusAccepted, "this delivery is being processed")
	case errors.Is(err, idem.ErrInProgress):
		rc.retryAfter(w)
		answer(w, http.StatusConflict, "this delivery is being processed; retry later")
	case errors.Is(err, idem.ErrPayloadMismatch):
		answer(w, http.StatusUnprocessableEntity, "this delivery ID was received with another payload")
	case errors.Is(err, idem.ErrInvalidKey):
		answer(w, http.StatusBadRequest, "unusable delivery ID (empty or longer than 255 bytes)")
	case errors.Is(err, idem.ErrStoreUnavailable), errors.Is(err, idem.ErrLeaseLost):
		rc.retryAfter(w)
		answer(w, http.StatusServiceUnavailable, "the delivery was not processed; retry later")
	default:
		// Store and codec errors stay server-side (the Guard's observer
		// sees them).
		answer(w, http.StatusInternalServerError, "the delivery could not be checked for duplicates")
	}
}

func (rc *Receiver[T]) retryAfter(w http.ResponseWriter) {
	secs := int64(max(rc.cfg.wait.Seconds(), 1))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
}

// answer writes a short plain-text answer.
func answer(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n") //nolint:errcheck // the sender is gone; nothing to do
}

// readBody reads the whole body, up to limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, int, error) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge,
			fmt.Errorf("the body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, http.StatusBadRequest, errors.New("empty body")
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1)); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err)
	}
	if int64(buf.Len()) > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the body exceeds the limit of %d bytes", limit)
	}
	return buf.Bytes(), 0, nil
}

// decode fills ev from the verified body.
func decode[T any](body []byte, ev *T) error {
	if b, ok := any(ev).(*[]byte); ok {
		*b = bytes.Clone(body)
		return nil
	}
	return json.Unmarshal(body, ev)
}
