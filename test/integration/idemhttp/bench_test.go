package idemhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"

	"github.com/idemgen/idemgen/internal/testenv"
)

// principal identifies the client by its X-Client header, as the
// middleware tests of runtime/idemhttp do.
func principal(r *http.Request) (string, error) {
	if p := r.Header.Get("X-Client"); p != "" {
		return p, nil
	}
	return "", errors.New("no X-Client header")
}

const benchBody = `{"customer":"cus_8f2a91","amount":129900,"currency":"eur","description":"order ord_1029384756"}`

// benchHandler is the bare handler: it reads the body and answers a small
// JSON document, as a payments endpoint would.
var benchHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) //nolint:errcheck
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/payments/pay_123")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"id":"pay_123","status":"succeeded","amount":129900,"currency":"eur"}`) //nolint:errcheck
})

// discardWriter is a ResponseWriter that keeps nothing, so the benchmark
// measures the handler and the middleware, not a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

type resettableBody struct{ strings.Reader }

func (*resettableBody) Close() error { return nil }

// serveLoop serves the same request n times through h.
func serveLoop(b *testing.B, h http.Handler, n int) {
	r := httptest.NewRequest(http.MethodPost, "/payments", nil)
	r.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
	r.Header.Set("X-Client", "acct_1")
	r.Header.Set("Content-Type", "application/json")
	body := &resettableBody{}
	w := &discardWriter{h: make(http.Header, 8)}
	for i := 0; i < n; i++ {
		body.Reset(benchBody)
		r.Body = body
		r.ContentLength = int64(len(benchBody))
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// interleaved runs ours for b.N iterations and the baseline for as many,
// alternating in blocks of 256, and reports ours/base. Interleaving keeps
// the ratio honest on a shared, noisy machine: both sides see the same
// load at the same time.
func interleaved(b *testing.B, ours, base func(n int)) {
	const block = 256
	var oursT, baseT time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(block, b.N-done)
		t0 := time.Now()
		ours(n)
		oursT += time.Since(t0)
		b.StopTimer() // the baseline's time and allocations are not ours
		t1 := time.Now()
		base(n)
		baseT += time.Since(t1)
		b.StartTimer()
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(oursT)/float64(baseT), "x-bare")
	b.ReportMetric(float64(baseT.Nanoseconds())/float64(b.N), "bare-ns/op")
}

// BenchmarkMiddlewareReplay: a replay through the middleware (memory
// store) against the bare handler, both called in process.
func BenchmarkMiddlewareReplay(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		serveLoop(b, benchHandler, b.N)
	})
	b.Run("replay", func(b *testing.B) {
		m, err := idemhttp.New(idem.NewGuard(memstore.New()), idemhttp.WithPrincipal(principal),
			idemhttp.WithFingerprintHeaders("Content-Type"))
		if err != nil {
			b.Fatal(err)
		}
		h := m.Handler(benchHandler)
		serveLoop(b, h, 1) // the first execution
		b.ReportAllocs()
		interleaved(b, func(n int) { serveLoop(b, h, n) }, func(n int) { serveLoop(b, benchHandler, n) })
	})
}

// BenchmarkMiddlewareReplayLoopback: the same over a real loopback HTTP
// connection, where a client sees the overhead.
func BenchmarkMiddlewareReplayLoopback(b *testing.B) {
	m, err := idemhttp.New(idem.NewGuard(memstore.New()), idemhttp.WithPrincipal(principal))
	if err != nil {
		b.Fatal(err)
	}
	bare := httptest.NewServer(benchHandler)
	defer bare.Close()
	guarded := httptest.NewServer(m.Handler(benchHandler))
	defer guarded.Close()
	post := func(b *testing.B, srv *httptest.Server, n int) {
		c := srv.Client()
		for i := 0; i < n; i++ {
			r, _ := http.NewRequest(http.MethodPost, srv.URL+"/payments", strings.NewReader(benchBody))
			r.Header.Set("Idempotency-Key", "8e03978e-40d5-43e8-bc93-6894a57f9324")
			r.Header.Set("X-Client", "acct_1")
			res, err := c.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, res.Body) //nolint:errcheck
			res.Body.Close()
			if res.StatusCode != http.StatusCreated {
				b.Fatalf("status %d", res.StatusCode)
			}
		}
	}
	post(b, guarded, 1)
	b.ReportAllocs()
	interleaved(b, func(n int) { post(b, guarded, n) }, func(n int) { post(b, bare, n) })
}

// BenchmarkMiddlewareReplayStore: a replay on a networked store against
// the bare handler plus one Store.Claim of a completed key on the same
// store (the one round trip a replay needs): x-bare near 1 means the
// middleware adds nothing over the store's own replay cost.
func BenchmarkMiddlewareReplayStore(b *testing.B) {
	b.Run("redis", func(b *testing.B) {
		addr := testenv.RedisAddr()
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			b.Skipf("Redis at %s: %v", addr, err)
		}
		store, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix("idemhttp-bench:"+testenv.RandName()+":"))
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		benchStore(b, store)
	})
	b.Run("postgres", func(b *testing.B) {
		url := testenv.PostgresURL()
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, url)
		if err == nil {
			err = pool.Ping(ctx)
		}
		if err != nil {
			b.Skipf("PostgreSQL at %s: %v", url, err)
		}
		defer pool.Close()
		schema := "idemhttp_bench_" + testenv.RandName()
		defer pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
		if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
			b.Fatal(err)
		}
		store, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		benchStore(b, store)
	})
}

func benchStore(b *testing.B, store idemstore.Store) {
	ctx := context.Background()
	// The baseline's completed key, with a result the size of the
	// recorded response.
	creq := idemstore.ClaimRequest{Key: "idemhttp-bench-baseline", Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour}
	res, err := store.Claim(ctx, creq)
	if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
		b.Fatalf("baseline claim: %+v %v", res, err)
	}
	lease := idemstore.Lease{Key: creq.Key, Owner: creq.Owner, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
	if err := store.Complete(ctx, lease, idemstore.Result{Data: make([]byte, 350)}); err != nil {
		b.Fatal(err)
	}
	creq.Owner = idemstore.Token{2}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if res, err := store.Claim(r.Context(), creq); err != nil || res.Status != idemstore.ClaimCompleted {
			b.Fatalf("baseline claim: %+v %v", res, err)
		}
		benchHandler(w, r)
	})
	m, err := idemhttp.New(idem.NewGuard(store), idemhttp.WithPrincipal(principal))
	if err != nil {
		b.Fatal(err)
	}
	h := m.Handler(benchHandler)
	serveLoop(b, h, 1)
	b.ReportAllocs()
	interleaved(b, func(n int) { serveLoop(b, h, n) }, func(n int) { serveLoop(b, bare, n) })
}
