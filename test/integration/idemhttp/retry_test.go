package idemhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/idemkey"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// dropFirst serves through the middleware, but the first request's
// response never reaches the client: the handler runs (and the middleware
// records its response), then the connection is closed without a byte
// written, as when a proxy or the network drops a response.
type dropFirst struct {
	next     http.Handler
	requests atomic.Int64
	mu       sync.Mutex
	keys     []string // the Idempotency-Key of each request
}

func (d *dropFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := d.requests.Add(1)
	d.mu.Lock()
	d.keys = append(d.keys, r.Header.Get("Idempotency-Key"))
	d.mu.Unlock()
	if n > 1 {
		d.next.ServeHTTP(w, r)
		return
	}
	d.next.ServeHTTP(httptest.NewRecorder(), r) // the handler runs; its answer is lost
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// TestRetryableHTTPRetryAfterDroppedResponseIsReplayed: a POST through
// hashicorp/go-retryablehttp whose first response is dropped after the
// handler ran is retried, and the retry carries the same Idempotency-Key,
// so the middleware replays the first response: the handler ran once.
// The placements that keep the key across attempts: Transport above the
// retry layer (it runs once per logical request), or Transport below it
// with the key fixed at request construction (context or header). The
// last case is the placement to avoid, kept as the proof that the key
// must be fixed per logical request: each attempt gets a new key and the
// handler runs twice.
func TestRetryableHTTPRetryAfterDroppedResponseIsReplayed(t *testing.T) {
	tests := []struct {
		name         string
		do           func(t *testing.T, url string) (*http.Response, error)
		wantRuns     int64
		wantReplayed string
	}{
		{
			name: "Transport above retryablehttp.RoundTripper mints the key",
			do: func(t *testing.T, url string) (*http.Response, error) {
				client := &http.Client{Transport: &idemhttp.Transport{
					Base: &retryablehttp.RoundTripper{Client: retryClient(freshConns())},
				}}
				req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"amount":5}`))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("X-Client", "a")
				return client.Do(req)
			},
			wantRuns: 1, wantReplayed: "true",
		},
		{
			name: "Transport below the retry layer, key in the request's context",
			do: belowRetry(func(req *retryablehttp.Request) *retryablehttp.Request {
				ctx, _ := idemhttp.ContextWithNewKey(context.Background())
				return req.WithContext(ctx)
			}),
			wantRuns: 1, wantReplayed: "true",
		},
		{
			name: "Transport below the retry layer, key header set by the caller",
			do: belowRetry(func(req *retryablehttp.Request) *retryablehttp.Request {
				req.Header.Set(idemhttp.KeyHeader, idemkey.Format(idemkey.New()))
				return req
			}),
			wantRuns: 1, wantReplayed: "true",
		},
		{
			name:     "Transport below the retry layer with no key fixed: a key per attempt, two runs",
			do:       belowRetry(func(req *retryablehttp.Request) *retryablehttp.Request { return req }),
			wantRuns: 2, wantReplayed: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := runs.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				json.NewEncoder(w).Encode(map[string]int64{"payment": n}) //nolint:errcheck
			})
			mw, err := idemhttp.New(idem.NewGuard(memstore.New()), idemhttp.WithPrincipal(principal))
			if err != nil {
				t.Fatal(err)
			}
			srv := &dropFirst{next: mw.Handler(handler)}
			ts := httptest.NewServer(srv)
			defer ts.Close()

			res, err := tc.do(t, ts.URL+"/payments")
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			type outcome struct {
				Requests, Runs int64
				Status         int
				Replayed, Body string
			}
			got := outcome{srv.requests.Load(), runs.Load(), res.StatusCode, res.Header.Get("Idempotent-Replayed"), strings.TrimSpace(string(body))}
			want := outcome{2, tc.wantRuns, http.StatusCreated, tc.wantReplayed, `{"payment":1}`}
			if tc.wantRuns == 2 {
				want.Body = `{"payment":2}`
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			sameKey := len(srv.keys) == 2 && srv.keys[0] != "" && srv.keys[0] == srv.keys[1]
			if sameKey != (tc.wantRuns == 1) {
				t.Errorf("keys of the two attempts: %q", srv.keys)
			}
		})
	}
}

// belowRetry sends one request through retryablehttp over idemhttp's
// Transport, after fix has fixed (or not) the request's key.
func belowRetry(fix func(*retryablehttp.Request) *retryablehttp.Request) func(*testing.T, string) (*http.Response, error) {
	return func(t *testing.T, url string) (*http.Response, error) {
		rc := retryClient(&idemhttp.Transport{Base: freshConns()})
		req, err := retryablehttp.NewRequest(http.MethodPost, url, strings.NewReader(`{"amount":5}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Client", "a")
		return rc.Do(fix(req))
	}
}

// retryClient is a retryablehttp client that retries quickly and quietly,
// sending through rt.
func retryClient(rt http.RoundTripper) *retryablehttp.Client {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: rt, Timeout: 10 * time.Second}
	rc.RetryWaitMin, rc.RetryWaitMax, rc.RetryMax = 10*time.Millisecond, 50*time.Millisecond, 3
	rc.Logger = nil
	return rc
}

// freshConns is a transport without keep-alive: each attempt dials anew,
// so net/http's own retry of a request on a reused connection (which it
// does for requests carrying an Idempotency-Key) stays out of the way and
// every retry is retryablehttp's.
func freshConns() *http.Transport {
	return &http.Transport{DisableKeepAlives: true}
}
