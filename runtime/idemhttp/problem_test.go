package idemhttp_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// instancePattern is a urn:uuid: of a random (version 4, RFC 9562 variant) UUID.
var instancePattern = regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// problemOf decodes a problem response and checks what cannot be compared
// as is: the headers, and the instance (by pattern, then removed).
func problemOf(t *testing.T, h http.Header, body []byte) map[string]any {
	t.Helper()
	if ct := h.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	if cl := h.Get("Content-Language"); cl != "en" {
		t.Errorf("Content-Language %q, want en", cl)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	inst, _ := got["instance"].(string)
	if !instancePattern.MatchString(inst) {
		t.Errorf("instance %q does not match %s", inst, instancePattern)
	}
	delete(got, "instance")
	return got
}

const (
	draft07     = "https://www.ietf.org/archive/id/draft-ietf-httpapi-idempotency-key-header-07.html"
	errorsType  = draft07 + "#section-2.7"
	syntaxType  = draft07 + "#section-2.1"
	rfc9110Base = "https://www.rfc-editor.org/rfc/rfc9110.html"
)

// problemDoc is the problem document expected, instance aside: its
// idempotency_key member is key's one element, absent without one.
func problemDoc(typ, title string, status int, detail, code string, retryable bool, key ...string) map[string]any {
	doc := map[string]any{
		"type": typ, "title": title, "status": float64(status),
		"detail": detail, "code": code, "retryable": retryable,
	}
	for _, k := range key {
		doc["idempotency_key"] = k
	}
	return doc
}

// missingKey is the problem answering a request without an
// Idempotency-Key: 400, with its type and title (WithProblemType).
func missingKey(typ, title string) map[string]any {
	return problemDoc(typ, title, 400, "this operation requires an Idempotency-Key header", "idempotency-key-missing", false)
}

// malformedKey is the problem answering a malformed Idempotency-Key: 400,
// with detail and the key as echoed.
func malformedKey(detail, echoed string) map[string]any {
	return problemDoc(syntaxType, "Idempotency-Key is malformed", 400, detail, "idempotency-key-malformed", false, echoed)
}

// TestProblemDetails: every problem the middleware answers with is a
// complete RFC 9457 object: type (the draft's section for the error, or
// RFC 9110's for the status), title, status (the response's own), detail,
// instance, and the extension members code, retryable and idempotency_key
// (bounded for a malformed key, empty ones included; absent when none
// was sent).
func TestProblemDetails(t *testing.T) {
	long := strings.Repeat("k", 300)
	tests := []struct {
		name  string
		setup func(t *testing.T) (http.Handler, func()) // optional: returns the handler and a cleanup
		opts  []idemhttp.Option
		q     req
		want  map[string]any
	}{
		{
			name: "400 missing key",
			q:    req{client: "a"},
			want: missingKey(errorsType, "Idempotency-Key is missing"),
		},
		{
			name: "400 malformed key: too long, echoed bounded",
			q:    req{client: "a", key: []string{long}},
			want: malformedKey("the key is 300 bytes long; the limit is 255", strings.Repeat("k", idemhttp.MaxEchoedKeyLen)+"..."),
		},
		{
			name: "400 malformed key: control bytes are not echoed",
			q:    req{client: "a", key: []string{"\"a\tb\""}},
			want: malformedKey("byte 0x09 at offset 2 is not printable ASCII", `"a?b"`),
		},
		{
			name: "400 malformed key: empty, echoed empty",
			q:    req{client: "a", key: []string{""}},
			want: malformedKey("the key is empty", ""),
		},
		{
			name: "400 malformed key: empty quoted string, echoed as sent",
			q:    req{client: "a", key: []string{`""`}},
			want: malformedKey("the key is empty", `""`),
		},
		{
			name: "400 two key headers",
			q:    req{client: "a", key: []string{"k1", "k2"}},
			want: malformedKey("2 Idempotency-Key headers; send exactly one", "k1"),
		},
		{
			name: "401 principal unknown",
			q:    req{key: []string{"k"}},
			want: problemDoc(rfc9110Base+"#section-15.5.2", "Client not identified", 401,
				"the client of this request could not be identified: no X-Client header",
				"principal-unknown", false, "k"),
		},
		{
			name: "413 request too large",
			opts: []idemhttp.Option{idemhttp.WithMaxRequestBytes(4)},
			q:    req{client: "a", key: []string{"k"}, body: "12345"},
			want: problemDoc(rfc9110Base+"#section-15.5.14", "Request body too large", 413,
				"the request body of 5 bytes exceeds the limit of 4 bytes",
				"request-too-large", false, "k"),
		},
		{
			name: "422 key reused with another payload",
			setup: func(t *testing.T) (http.Handler, func()) {
				h := newMW(t, idem.NewGuard(memstore.New())).Handler(&app{})
				send(t, h, req{client: "a", key: []string{`"k-1"`}, body: "first"})
				return h, func() {}
			},
			q: req{client: "a", key: []string{`"k-1"`}, body: "second"},
			want: problemDoc(errorsType, "Idempotency-Key is already used", 422,
				"this Idempotency-Key was used with a different request (method, path, body or headers); send a new key for a new request",
				"idempotency-key-reused", false, "k-1"),
		},
		{
			name: "409 in flight",
			setup: func(t *testing.T) (http.Handler, func()) {
				started, release := make(chan struct{}), make(chan struct{})
				a := &app{hook: func(http.ResponseWriter, *http.Request) {
					close(started)
					<-release
				}}
				h := newMW(t, idem.NewGuard(memstore.New())).Handler(a)
				done := make(chan struct{})
				go func() {
					defer close(done)
					send(t, h, req{client: "a", key: []string{"k"}})
				}()
				<-started
				return h, func() { close(release); <-done }
			},
			q: req{client: "a", key: []string{"k"}},
			want: problemDoc(errorsType, "A request is outstanding for this Idempotency-Key", 409,
				"a request with the same Idempotency-Key is being processed; retry later with the same key",
				"request-in-progress", true, "k"),
		},
		{
			name: "503 store unavailable",
			setup: func(t *testing.T) (http.Handler, func()) {
				s := idemtest.NewOutageStore()
				s.SetDown(true)
				return newMW(t, idem.NewGuard(s)).Handler(&app{}), func() {}
			},
			q: req{client: "a", key: []string{"k"}},
			want: problemDoc(rfc9110Base+"#section-15.6.4", "Idempotency store unavailable", 503,
				"the request was not processed; retry with the same key",
				"idempotency-store-unavailable", true, "k"),
		},
		{
			name: "503 lease lost",
			setup: func(t *testing.T) (http.Handler, func()) {
				a := &app{hook: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}
				return newMW(t, idem.NewGuard(lostStore{memstore.New()}), withLease(30*time.Millisecond)).Handler(a), func() {}
			},
			q: req{client: "a", key: []string{"k"}},
			want: problemDoc(rfc9110Base+"#section-15.6.4", "Request outcome not recorded", 503,
				"the request's claim on its key was lost while it ran; retry with the same key",
				"lease-lost", true, "k"),
		},
		{
			name: "WithProblemType overrides one code",
			opts: []idemhttp.Option{idemhttp.WithProblemType(idemhttp.CodeKeyMissing, "https://api.example.com/problems/key")},
			q:    req{client: "a"},
			want: missingKey("https://api.example.com/problems/key", "Idempotency-Key is missing"),
		},
		{
			name: "about:blank takes the status phrase as title",
			opts: []idemhttp.Option{idemhttp.WithProblemType(idemhttp.CodeKeyMissing, "about:blank")},
			q:    req{client: "a"},
			want: missingKey("about:blank", "Bad Request"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h http.Handler
			if tc.setup != nil {
				var cleanup func()
				h, cleanup = tc.setup(t)
				defer cleanup()
			} else {
				h = newMW(t, idem.NewGuard(memstore.New()), tc.opts...).Handler(&app{})
			}
			_, w := send(t, h, tc.q)
			got := problemOf(t, w.Header(), w.Body.Bytes())
			if int(got["status"].(float64)) != w.Code {
				t.Errorf("status member %v, response status %d: RFC 9457 wants them equal", got["status"], w.Code)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problem (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProblemTypeBase(t *testing.T) {
	h := newMW(t, idem.NewGuard(memstore.New()), idemhttp.WithProblemTypeBase("https://api.example.com/problems/")).Handler(&app{})
	_, w := send(t, h, req{client: "a"})
	got := problemOf(t, w.Header(), w.Body.Bytes())
	want := missingKey("https://api.example.com/problems/idempotency-key-missing", "Idempotency-Key is missing")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problem (-want +got):\n%s", diff)
	}
}

// TestProblemInstanceIsPerOccurrence: two occurrences of the same problem
// share type and title but not instance.
func TestProblemInstanceIsPerOccurrence(t *testing.T) {
	h := newMW(t, idem.NewGuard(memstore.New())).Handler(&app{})
	seen := map[string]bool{}
	for range 3 {
		_, w := send(t, h, req{client: "a"})
		var p struct{ Type, Title, Instance string }
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if seen[p.Instance] {
			t.Errorf("instance %s repeated", p.Instance)
		}
		seen[p.Instance] = true
		if p.Type != errorsType || p.Title != "Idempotency-Key is missing" {
			t.Errorf("type %q title %q", p.Type, p.Title)
		}
	}
}

// TestWithProblemTypeRefusesUnknownCodes: a typo in a code is an error
// from New, not a silently ignored option.
func TestWithProblemTypeRefusesUnknownCodes(t *testing.T) {
	for _, tc := range []struct {
		code, uri, want string
	}{
		{"idempotency-key-mising", "https://x", `"idempotency-key-mising" is not a problem code`},
		{idemhttp.CodeKeyMissing, "", "empty type"},
	} {
		_, err := idemhttp.New(idem.NewGuard(memstore.New()), idemhttp.WithoutPrincipal(), idemhttp.WithProblemType(tc.code, tc.uri))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WithProblemType(%q, %q): %v, want an error containing %q", tc.code, tc.uri, err, tc.want)
		}
	}
}
