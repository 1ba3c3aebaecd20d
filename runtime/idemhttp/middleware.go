package idemhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemkey"
	"github.com/idemgen/idemgen/runtime/internal/adapter"
)

// Middleware guards non-idempotent requests with the Idempotency-Key
// header. Build it with New; it is safe for concurrent use.
type Middleware struct {
	g    *idem.Guard
	spec idem.Spec
	cfg  config
}

// ErrResponseTooLarge is returned by the ResponseWriter's Write when the
// handler writes more than WithMaxResponseBytes.
var ErrResponseTooLarge = errors.New("idemhttp: response body exceeds the recorded size limit")

// errUnrecorded marks a response that is sent but not recorded (a 5xx):
// returning it from the guarded function makes idem.Do release the key.
var errUnrecorded = errors.New("idemhttp: response not recorded")

// New returns a Middleware over g. It needs a principal function
// (WithPrincipal) or an explicit WithoutPrincipal.
func New(g *idem.Guard, opts ...Option) (*Middleware, error) {
	cfg, err := adapter.Configure("idemhttp", "New", g, defaultConfig(), opts, (*config).check)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.principal == nil && !cfg.noPrincipal:
		return nil, errors.New("idemhttp: New needs WithPrincipal, so that one client cannot replay another's responses (or WithoutPrincipal to share one key space deliberately)")
	case cfg.principal != nil && cfg.noPrincipal:
		return nil, errors.New("idemhttp: New: WithPrincipal and WithoutPrincipal are exclusive")
	}
	spec, err := adapter.Spec("idemhttp", DefaultName, cfg.call)
	if err != nil {
		return nil, err
	}
	return &Middleware{g: g, spec: spec, cfg: cfg}, nil
}

// Handler wraps next.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.serve(w, r, next)
	})
}

// response is the recorded outcome of a request: what a replay sends.
type response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	vals := r.Header.Values(KeyHeader)
	if !m.cfg.methods[r.Method] || len(vals) == 0 && m.cfg.optional {
		next.ServeHTTP(w, r)
		return
	}
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer putBodyBuffer(buf)
	key, principal, body, ok := m.prepare(w, r, vals, buf)
	if !ok {
		return
	}
	c := m.begin(&m.spec, r, key, principal, body)
	ctx := r.Context()
	if !m.cfg.clientCancel {
		ctx = context.WithoutCancel(ctx)
	}
	ran := false
	// live holds the per-client headers the handler set (Set-Cookie…):
	// this request's client gets them, the record does not. It stays out of
	// the returned value, which the Guard may share with in-process
	// duplicates (and the memory store with replays).
	var live http.Header
	resp, err := idem.Do(ctx, c, func(ctx context.Context) (*response, error) {
		ran = true
		return m.handle(ctx, r, body, key, next, &live)
	})
	m.answer(w, r, key, resp, live, ran, err)
}

// prepare reads what a guarded request is keyed by: its key, its
// client's principal and its body (into buf). When any is missing or
// wrong it answers the request and returns false.
func (m *Middleware) prepare(w http.ResponseWriter, r *http.Request, vals []string, buf *bytes.Buffer) (key, principal string, body []byte, ok bool) {
	key, principal, ok = m.identify(w, r, vals)
	if !ok {
		return "", "", nil, false
	}
	body, status, err := m.readBody(r, buf)
	if err != nil {
		code := CodeBodyUnreadable
		if status == http.StatusRequestEntityTooLarge {
			code = CodeRequestTooLarge
		}
		m.problem(w, status, code, err.Error(), key)
		return "", "", nil, false
	}
	return key, principal, body, true
}

// begin starts a guarded call of spec for the request: its key is the
// principal and the Idempotency-Key, its payload the request's
// fingerprint.
func (m *Middleware) begin(spec *idem.Spec, r *http.Request, key, principal string, body []byte) idem.Call {
	c, k := idemimpl.Begin(m.g, spec)
	kb := k.Key()
	kb.String(principal)
	kb.ID(key)
	m.fingerprint(k.Payload(), r, body)
	return c
}

// identify reads the request's key and its client's principal. When
// either is missing or wrong it answers the request and returns false.
func (m *Middleware) identify(w http.ResponseWriter, r *http.Request, vals []string) (key, principal string, ok bool) {
	if len(vals) == 0 {
		m.problem(w, http.StatusBadRequest, CodeKeyMissing,
			"this operation requires an Idempotency-Key header", "")
		return "", "", false
	}
	key, err := idemkey.Parse(vals)
	if err != nil {
		m.problem(w, http.StatusBadRequest, CodeKeyMalformed, err.Error(), echoRawKey(vals))
		return "", "", false
	}
	principal, err = adapter.Principal(m.cfg.principal, r)
	if err != nil {
		m.problem(w, http.StatusUnauthorized, CodePrincipalUnknown,
			"the client of this request could not be identified: "+err.Error(), key)
		return "", "", false
	}
	return key, principal, true
}

// handle runs next on the buffered request: the guarded function. It
// returns the response to record (errUnrecorded: to send only), and puts
// the per-client headers, which are not recorded, in live.
func (m *Middleware) handle(ctx context.Context, r *http.Request, body []byte, key string, next http.Handler, live *http.Header) (*response, error) {
	r2 := r.WithContext(ctx)
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	rec := getRecorder(m.cfg.maxResponse)
	defer putRecorder(rec)
	next.ServeHTTP(rec, r2)
	if rec.invalid {
		// net/http would panic on it (or, for 101, needs a hijacked
		// connection the buffer cannot give): the handler failed, so
		// nothing is recorded and the key is released.
		return m.problemResponse(http.StatusInternalServerError, CodeInvalidStatus,
			fmt.Sprintf("the handler answered with status %d, which cannot be sent or replayed", rec.status), key), errUnrecorded
	}
	if rec.overflow {
		// The handler's effects happened: record a 500 so that a
		// retry does not run it again.
		return m.problemResponse(http.StatusInternalServerError, CodeResponseTooLarge,
			fmt.Sprintf("the response exceeded the %d bytes the idempotency layer records", m.cfg.maxResponse), key), nil
	}
	var resp *response
	resp, *live = rec.response(m.cfg.replayed)
	if !m.cfg.record(resp.Status) {
		return resp, errUnrecorded
	}
	return resp, nil
}

// answer sends the outcome of idem.Do: the response (recorded or not,
// with the per-client headers live when this request ran the handler), a
// replay, or the problem that err is.
func (m *Middleware) answer(w http.ResponseWriter, r *http.Request, key string, resp *response, live http.Header, ran bool, err error) {
	switch {
	case err == nil:
		if ran {
			addHeaders(w.Header(), live)
		}
		writeResponse(w, resp, !ran, m.cfg.replayHeader)
	case resp != nil && (errors.Is(err, errUnrecorded) || ran && errors.Is(err, idem.ErrStoreUnavailable)):
		// An unrecorded status, or the handler ran but its response could not be
		// recorded: the client still gets what the handler said.
		if ran {
			addHeaders(w.Header(), live)
		}
		writeResponse(w, resp, false, "")
	case errors.Is(err, idem.ErrInProgress):
		m.retryAfter(w)
		m.problem(w, http.StatusConflict, CodeInProgress,
			"a request with the same Idempotency-Key is being processed; retry later with the same key", key)
	case errors.Is(err, idem.ErrPayloadMismatch):
		m.problem(w, http.StatusUnprocessableEntity, CodeKeyReused,
			"this Idempotency-Key was used with a different request (method, path, body or headers); send a new key for a new request", key)
	case errors.Is(err, idem.ErrInvalidKey):
		m.problem(w, http.StatusBadRequest, CodeKeyMalformed, err.Error(), key)
	case errors.Is(err, idem.ErrLeaseLost):
		m.retryAfter(w)
		m.problem(w, http.StatusServiceUnavailable, CodeLeaseLost,
			"the request's claim on its key was lost while it ran; retry with the same key", key)
	case errors.Is(err, idem.ErrStoreUnavailable):
		m.retryAfter(w)
		m.problem(w, http.StatusServiceUnavailable, CodeStoreUnavailable,
			"the request was not processed; retry with the same key", key)
	case r.Context().Err() != nil:
		// The client is gone; nobody reads this.
		m.problem(w, http.StatusServiceUnavailable, CodeRequestCanceled, "the client canceled the request", key)
	default:
		// Store and codec errors stay server-side (the Guard's observer
		// sees them): their text can name hosts and internals.
		m.problem(w, http.StatusInternalServerError, CodeIdempotencyError,
			"the request could not be checked for duplicates", key)
	}
}

var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putBodyBuffer(b *bytes.Buffer) {
	if b.Cap() > 64<<10 {
		return // don't pin large buffers in the pool
	}
	b.Reset()
	bodyBuffers.Put(b)
}

// readBody reads the whole request body, up to the limit, into buf. The
// body is valid until buf goes back to the pool, after the request.
func (m *Middleware) readBody(r *http.Request, buf *bytes.Buffer) ([]byte, int, error) {
	limit := m.cfg.maxRequest
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge,
			fmt.Errorf("the request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, 0, nil
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + 1) // +1: ReadFrom's probe for EOF
	}
	lr := io.LimitedReader{R: r.Body, N: limit + 1}
	if _, err := buf.ReadFrom(&lr); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	}
	body := buf.Bytes()
	if int64(len(body)) > limit {
		return nil, http.StatusRequestEntityTooLarge,
			fmt.Errorf("the request body exceeds the limit of %d bytes", limit)
	}
	return body, 0, nil
}

// fingerprint writes what identifies "the same request": method, path and
// query, body and the chosen headers.
func (m *Middleware) fingerprint(b *idemimpl.KeyBuilder, r *http.Request, body []byte) {
	b.String(r.Method)
	b.String(r.URL.EscapedPath())
	b.String(r.URL.RawQuery)
	adapter.WriteBody(b, body)
	b.List(len(m.cfg.fpHeaders))
	for _, h := range m.cfg.fpHeaders {
		vs := r.Header.Values(h)
		b.String(h)
		b.List(len(vs))
		for _, v := range vs {
			b.String(v)
		}
	}
}

// hopByHop headers describe one connection, not the response (RFC 9110
// 7.6.1, and the proxy authentication pair of RFC 2616 13.5.1): they are
// neither recorded nor sent, and neither is any header a response's
// Connection names.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Transfer-Encoding": true, "Upgrade": true, "Trailer": true, "Te": true,
	"Proxy-Authenticate": true, "Proxy-Authorization": true,
}

// perClient headers belong to the client that made the request (its
// session, its authentication exchange): the first client gets them, a
// replay does not, since with WithoutPrincipal (or a coarse principal)
// another client can present the same key. WithReplayedHeaders records
// them anyway.
var perClient = map[string]bool{
	"Set-Cookie": true, "Set-Cookie2": true,
	"Authentication-Info": true, "Proxy-Authentication-Info": true,
}

const perClientList = "Set-Cookie, Set-Cookie2, Authentication-Info, Proxy-Authentication-Info"

// addHeaders adds src's values to dst, copying them so that dst's owner
// cannot change src.
func addHeaders(dst, src http.Header) {
	for k, vs := range src {
		dst[k] = append(dst[k][:len(dst[k]):len(dst[k])], vs...)
	}
}

// writeResponse sends a recorded response. The recorded headers already
// hold Content-Type and Content-Length, so net/http adds nothing that
// differs between the first response and its replays.
func writeResponse(w http.ResponseWriter, resp *response, replay bool, replayHeader string) {
	h := w.Header()
	// The recorded header may be shared by concurrent replays (the memory
	// store hands back the same value): copy its values, into one backing
	// array, clipped so an append elsewhere cannot reach a neighbour.
	n := 1
	for _, vs := range resp.Header {
		n += len(vs)
	}
	all := make([]string, 0, n)
	for k, vs := range resp.Header {
		lo := len(all)
		all = append(all, vs...)
		h[k] = all[lo:len(all):len(all)]
	}
	if replay {
		all = append(all, "true")
		h[replayHeader] = all[len(all)-1:]
	}
	w.WriteHeader(resp.Status)
	if len(resp.Body) > 0 {
		w.Write(resp.Body) //nolint:errcheck // the client is gone; nothing to do
	}
}

func (m *Middleware) retryAfter(w http.ResponseWriter) {
	secs := int64((m.cfg.retryAfter + 999_999_999) / 1_000_000_000)
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
}

// recorder buffers what the handler writes.
type recorder struct {
	header      http.Header
	snapshot    http.Header // the header as of WriteHeader
	status      int
	wroteHeader bool
	invalid     bool // status is one net/http cannot send (or 101)
	body        bytes.Buffer
	max         int64
	overflow    bool
}

var recorders = sync.Pool{New: func() any { return new(recorder) }}

func getRecorder(max int64) *recorder {
	rec := recorders.Get().(*recorder)
	rec.header = make(http.Header)
	rec.max = max
	return rec
}

func putRecorder(rec *recorder) {
	if rec.body.Cap() > 64<<10 {
		return // don't pin large buffers in the pool
	}
	rec.header, rec.snapshot = nil, nil
	rec.status, rec.wroteHeader, rec.overflow, rec.invalid = 0, false, false, false
	rec.body.Reset()
	recorders.Put(rec)
}

func (rec *recorder) Header() http.Header { return rec.header }

func (rec *recorder) WriteHeader(code int) {
	if rec.wroteHeader {
		return
	}
	if code < 100 || code > 999 || code == http.StatusSwitchingProtocols {
		// net/http's ResponseWriter panics on a code outside 100-999, and a
		// 101 needs the connection hijacked, which a buffered response
		// cannot give: either way the handler failed, and its status must
		// not be recorded (every replay of it would panic).
		rec.status, rec.invalid, rec.wroteHeader = code, true, true
		return
	}
	if code < 200 {
		return // informational responses are not part of the outcome
	}
	rec.status = code
	rec.wroteHeader = true
	rec.snapshot = rec.header.Clone()
}

func (rec *recorder) Write(p []byte) (int, error) {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	if rec.overflow || int64(rec.body.Len()+len(p)) > rec.max {
		rec.overflow = true
		return 0, ErrResponseTooLarge
	}
	return rec.body.Write(p)
}

// response copies out what was recorded, completed the way net/http would
// complete it (Content-Type sniffing, Content-Length), so that the first
// response and every replay carry the same headers. Hop-by-hop headers
// (and those the Connection header names) are dropped; per-client headers
// not in replayed go to live, for the first client only.
func (rec *recorder) response(replayed map[string]bool) (resp *response, live http.Header) {
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	h, live := recordedHeader(rec.snapshot, replayed)
	var body []byte
	if rec.body.Len() > 0 {
		body = bytes.Clone(rec.body.Bytes())
	}
	bodyAllowed := rec.status >= 200 && rec.status != http.StatusNoContent && rec.status != http.StatusNotModified
	if !bodyAllowed {
		body = nil
		delete(h, "Content-Length")
	} else {
		if _, ok := h["Content-Type"]; !ok && len(body) > 0 {
			h["Content-Type"] = []string{http.DetectContentType(body)}
		}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	return &response{Status: rec.status, Header: h, Body: body}, live
}

// recordedHeader splits a response's header (snapshot) into what is
// recorded (h) and what goes to the first client only (live): hop-by-hop
// headers and those the Connection header names are in neither.
func recordedHeader(snapshot http.Header, replayed map[string]bool) (h, live http.Header) {
	var connScoped map[string]bool
	for _, v := range snapshot["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				if connScoped == nil {
					connScoped = map[string]bool{}
				}
				connScoped[textproto.CanonicalMIMEHeaderKey(f)] = true
			}
		}
	}
	h = make(http.Header, len(snapshot)+2)
	for k, vs := range snapshot {
		switch {
		case hopByHop[k] || connScoped[k] || strings.HasPrefix(k, http.TrailerPrefix):
		case perClient[k] && !replayed[k]:
			if live == nil {
				live = http.Header{}
			}
			live[k] = vs
		default:
			h[k] = vs
		}
	}
	return h, live
}
