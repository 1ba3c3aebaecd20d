package idemhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// keySeen records the Idempotency-Key values each request reached the
// server with.
type keySeen struct {
	mu   sync.Mutex
	keys [][]string
}

func (k *keySeen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.keys = append(k.keys, r.Header.Values("Idempotency-Key"))
	k.mu.Unlock()
}

var quotedUUID = regexp.MustCompile(`^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$`)

// TestTransportAddsKeysToUnsafeMethodsOnly: POST and PATCH get a fresh
// quoted UUID, safe methods never get one, PUT and DELETE only when
// listed, a caller's header or context key is kept, and the caller's
// request is not modified.
func TestTransportAddsKeysToUnsafeMethodsOnly(t *testing.T) {
	const minted = "<minted>" // a fresh key, checked by pattern
	tests := []struct {
		name    string
		tr      idemhttp.Transport
		method  string
		header  []string // Idempotency-Key set by the caller
		ctxKey  string
		want    []string
		wantErr string
	}{
		{name: "POST", method: "POST", want: []string{minted}},
		{name: "PATCH", method: "PATCH", want: []string{minted}},
		{name: "GET", method: "GET", want: nil},
		{name: "HEAD", method: "HEAD", want: nil},
		{name: "OPTIONS", method: "OPTIONS", want: nil},
		{name: "PUT by default", method: "PUT", want: nil},
		{name: "DELETE by default", method: "DELETE", want: nil},
		{name: "PUT when listed", tr: idemhttp.Transport{Methods: []string{"POST", "PUT"}}, method: "PUT", want: []string{minted}},
		{name: "PATCH when not listed", tr: idemhttp.Transport{Methods: []string{"POST", "PUT"}}, method: "PATCH", want: nil},
		{name: "GET even when listed", tr: idemhttp.Transport{Methods: []string{"GET"}}, method: "GET", want: nil},
		{name: "caller's header kept", method: "POST", header: []string{"mine"}, ctxKey: "ctx", want: []string{"mine"}},
		{name: "context key", method: "POST", ctxKey: "order-1001", want: []string{`"order-1001"`}},
		{name: "context key with a quote", method: "POST", ctxKey: `a"b`, want: []string{`"a\"b"`}},
		{name: "custom NewKey", tr: idemhttp.Transport{NewKey: func() string { return "k-7" }}, method: "POST", want: []string{`"k-7"`}},
		{name: "unusable context key", method: "POST", ctxKey: "é", wantErr: "not printable ASCII"},
		{name: "empty context key", method: "POST", ctxKey: "", wantErr: "the key is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &keySeen{}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			tr := tc.tr
			tr.Base = ts.Client().Transport
			ctx := context.Background()
			if tc.ctxKey != "" || tc.wantErr == "the key is empty" {
				ctx = idemhttp.ContextWithKey(ctx, tc.ctxKey)
			}
			req, err := http.NewRequestWithContext(ctx, tc.method, ts.URL, strings.NewReader("body"))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.header {
				req.Header.Add("Idempotency-Key", k)
			}
			before := req.Header.Clone()
			res, err := (&http.Client{Transport: &tr}).Do(req)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if diff := cmp.Diff(before, req.Header); diff != "" {
				t.Errorf("the caller's request was modified (-before +after):\n%s", diff)
			}
			got := srv.keys[0]
			if len(tc.want) == 1 && tc.want[0] == minted && len(got) == 1 && quotedUUID.MatchString(got[0]) {
				got = []string{minted}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("keys the server saw (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTransportKeyPerLogicalRequest: two requests get two keys; two
// attempts of one request made with the same ContextWithNewKey context
// share one, and the middleware runs the handler once for them.
func TestTransportKeyPerLogicalRequest(t *testing.T) {
	a := &app{}
	mw := newMW(t, idem.NewGuard(memstore.New()))
	ts := httptest.NewServer(mw.Handler(a))
	defer ts.Close()
	client := &http.Client{Transport: &idemhttp.Transport{Base: ts.Client().Transport}}
	post := func(ctx context.Context) resp {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "POST", ts.URL, strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Client", "a")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		return resp{Status: res.StatusCode, Replayed: res.Header.Get("Idempotent-Replayed")}
	}
	ctx, _ := idemhttp.ContextWithNewKey(context.Background())
	got := []resp{post(ctx), post(ctx), post(context.Background()), post(context.Background())}
	want := []resp{{Status: 201}, {Status: 201, Replayed: "true"}, {Status: 201}, {Status: 201}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
	if n := a.runs.Load(); n != 3 {
		t.Errorf("handler ran %d times, want 3 (one per logical request)", n)
	}
}
