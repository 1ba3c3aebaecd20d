package idemhttp

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/idemgen/idemgen/runtime/idemkey"
)

// DraftURL is the newest revision of the IETF draft "The Idempotency-Key
// HTTP Header Field" when this package was written; the default problem
// types point into it.
const DraftURL = "https://www.ietf.org/archive/id/draft-ietf-httpapi-idempotency-key-header-07.html"

// rfc9110 defines the HTTP status codes that the draft does not cover.
const rfc9110 = "https://www.rfc-editor.org/rfc/rfc9110.html"

// The problem codes of the middleware's own answers: the "code" member of
// their problem details, and the keys of WithProblemType.
const (
	CodeKeyMissing       = "idempotency-key-missing"
	CodeKeyMalformed     = "idempotency-key-malformed"
	CodeKeyReused        = "idempotency-key-reused"
	CodeInProgress       = "request-in-progress"
	CodeStoreUnavailable = "idempotency-store-unavailable"
	CodeLeaseLost        = "lease-lost"
	CodeRequestCanceled  = "request-canceled"
	CodeRequestTooLarge  = "request-too-large"
	CodeBodyUnreadable   = "request-body-unreadable"
	CodePrincipalUnknown = "principal-unknown"
	CodeInvalidStatus    = "invalid-status"
	CodeResponseTooLarge = "response-too-large"
	CodeIdempotencyError = "idempotency-error"
)

// problemKind is what the middleware says about one code: its default
// type, its title and whether retrying the same request can succeed.
type problemKind struct {
	typ       string
	title     string
	retryable bool
}

var problemKinds = map[string]problemKind{
	// The draft's Error Scenarios (section 2.7) and Syntax (section 2.1).
	CodeKeyMissing:   {DraftURL + "#section-2.7", "Idempotency-Key is missing", false},
	CodeKeyMalformed: {DraftURL + "#section-2.1", "Idempotency-Key is malformed", false},
	CodeKeyReused:    {DraftURL + "#section-2.7", "Idempotency-Key is already used", false},
	CodeInProgress:   {DraftURL + "#section-2.7", "A request is outstanding for this Idempotency-Key", true},
	// Outside the draft: the status code's definition in RFC 9110.
	CodeStoreUnavailable: {rfc9110 + "#section-15.6.4", "Idempotency store unavailable", true},
	CodeLeaseLost:        {rfc9110 + "#section-15.6.4", "Request outcome not recorded", true},
	CodeRequestCanceled:  {rfc9110 + "#section-15.6.4", "Request canceled", true},
	CodeRequestTooLarge:  {rfc9110 + "#section-15.5.14", "Request body too large", false},
	CodeBodyUnreadable:   {rfc9110 + "#section-15.5.1", "Request body unreadable", false},
	CodePrincipalUnknown: {rfc9110 + "#section-15.5.2", "Client not identified", false},
	CodeInvalidStatus:    {rfc9110 + "#section-15.6.1", "Invalid response status", true},
	CodeResponseTooLarge: {rfc9110 + "#section-15.6.1", "Response too large to record", false},
	CodeIdempotencyError: {rfc9110 + "#section-15.6.1", "Idempotency error", false},
}

// MaxEchoedKeyLen bounds the idempotency_key member of a problem that
// answers a malformed key: the first MaxEchoedKeyLen bytes of the header
// value, every byte outside printable ASCII replaced by '?', then "..."
// when it was cut. A well-formed key (at most idemkey.MaxLen printable ASCII
// bytes) is echoed whole.
const MaxEchoedKeyLen = 64

// echoRawKey is the bounded, printable form of a malformed key header.
func echoRawKey(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	v := vals[0]
	cut := len(v) > MaxEchoedKeyLen
	if cut {
		v = v[:MaxEchoedKeyLen]
	}
	b := []byte(v)
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	if cut {
		b = append(b, "..."...)
	}
	return string(b)
}

// problemBody is an RFC 9457 problem details object with this package's
// extension members, in the order they are written.
type problemBody struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	Code      string `json:"code"`
	Retryable bool   `json:"retryable"`
	// Key is absent when no key was sent, and present (empty too) for
	// every key that was: a malformed key's problem always names it.
	Key *string `json:"idempotency_key,omitempty"`
}

// newInstance returns a fresh urn:uuid: URI (a random, version 4 UUID)
// that identifies one occurrence of a problem.
func newInstance() string { return "urn:uuid:" + idemkey.New() }

// problemType is the type URI of code: WithProblemType's, else
// WithProblemTypeBase + code, else the default.
func (m *Middleware) problemType(code string) string {
	if t, ok := m.cfg.problemTypes[code]; ok {
		return t
	}
	if m.cfg.problemPrefix != "" {
		return m.cfg.problemPrefix + code
	}
	return problemKinds[code].typ
}

// problem writes an RFC 9457 problem-details response. key is the
// Idempotency-Key to echo (already bounded): "" is no key, except under
// CodeKeyMalformed, whose header was sent and may be empty.
func (m *Middleware) problem(w http.ResponseWriter, status int, code, detail, key string) {
	writeResponse(w, m.problemResponse(status, code, detail, key), false, "")
}

func (m *Middleware) problemResponse(status int, code, detail, key string) *response {
	kind := problemKinds[code]
	p := problemBody{
		Type:      m.problemType(code),
		Title:     kind.title,
		Status:    status,
		Detail:    detail,
		Instance:  newInstance(),
		Code:      code,
		Retryable: kind.retryable,
	}
	if key != "" || code == CodeKeyMalformed {
		p.Key = &key
	}
	if p.Type == "about:blank" {
		// RFC 9457 section 4.2.1: the title of about:blank is the status phrase.
		p.Title = http.StatusText(status)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		panic(err) // strings and numbers only: cannot fail
	}
	return &response{
		Status: status,
		Header: http.Header{
			"Content-Type":           {"application/problem+json"},
			"Content-Language":       {"en"},
			"Content-Length":         {strconv.Itoa(b.Len())},
			"X-Content-Type-Options": {"nosniff"},
		},
		Body: []byte(b.String()),
	}
}
