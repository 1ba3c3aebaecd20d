package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/internal/testenv"
)

// TestMain lets the test binary double as the server: the end-to-end test
// starts it as a child process, so it can SIGKILL it mid-request.
func TestMain(m *testing.M) {
	if args := os.Getenv("HTTPAPI_SERVER_ARGS"); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := run(ctx, strings.Fields(args), os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const pgHint = `PostgreSQL is not reachable at %s (%v).
Start one (trust auth, database "test"), for example:
    sudo service postgresql start   # or: docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test postgres:16
or point IDEM_POSTGRES_URL at a server you may create schemas on.`

// server is the API running as a child process.
type server struct {
	t    *testing.T
	args string
	cmd  *exec.Cmd
	url  string
}

func (s *server) start() {
	s.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HTTPAPI_SERVER_ARGS="+s.args)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				line <- u
			}
		}
	}()
	select {
	case s.url = <-line:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		s.t.Fatal("server did not start")
	}
	s.cmd = cmd
}

// crash kills the server without any chance to clean up: leases stay
// held, open transactions die with their connections.
func (s *server) crash() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()
}

// stats counts what the retrying client went through.
type stats struct {
	timeouts, connErrors, conflicts, unavailable, replays, attempts atomic.Int64
}

type created struct {
	ID        string `json:"id"`
	Reference string `json:"reference"`
	Amount    int64  `json:"amount"`
}

// pay posts one payment with one Idempotency-Key, retrying on timeouts,
// connection errors, 409 and 503 (after Retry-After), as a well-behaved
// client does, until it gets a final answer.
func pay(ctx context.Context, c *http.Client, base *atomic.Value, st *stats, account, key, body string) (int, created, error) {
	for {
		if ctx.Err() != nil {
			return 0, created{}, ctx.Err()
		}
		st.attempts.Add(1)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base.Load().(string)+"/payments", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer sk_test_"+account)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", strconv.Quote(key))
		res, err := c.Do(req)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				st.timeouts.Add(1)
			} else {
				st.connErrors.Add(1)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch res.StatusCode {
		case http.StatusConflict, http.StatusServiceUnavailable:
			if res.StatusCode == http.StatusConflict {
				st.conflicts.Add(1)
			} else {
				st.unavailable.Add(1)
			}
			secs, _ := strconv.Atoi(res.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(secs, 1)) * 300 * time.Millisecond) // a compressed Retry-After
			continue
		}
		if res.Header.Get("Idempotent-Replayed") == "true" {
			st.replays.Add(1)
		}
		var p created
		if res.StatusCode == http.StatusCreated {
			if err := json.Unmarshal(b, &p); err != nil {
				return res.StatusCode, p, fmt.Errorf("bad body %q: %w", b, err)
			}
		}
		return res.StatusCode, p, nil
	}
}

// TestExactlyOnceUnderRetriesAndCrash drives the API as a black box: a
// client that times out on slow requests and retries them with the same
// Idempotency-Key, a server SIGKILLed and restarted while requests are in
// flight, and then checks in Postgres that every payment exists once.
func TestExactlyOnceUnderRetriesAndCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, testenv.PostgresURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+testenv.PostgresURL(), fmt.Sprintf(pgHint, testenv.PostgresURL(), err), err)
	defer pool.Close()
	schema := "httpapi_e2e_" + testenv.RandName()
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := &server{t: t, args: fmt.Sprintf("-addr %s -postgres %s -schema %s -lease 2s -slow-every 3 -slow-delay 1200ms",
		addr, testenv.PostgresURL(), schema)}
	srv.start()
	defer func() { srv.stop() }()
	var base atomic.Value
	base.Store(srv.url)

	client := &http.Client{Timeout: 400 * time.Millisecond}
	account := "acct_" + testenv.RandName()
	const n = 24
	type result struct {
		status int
		p      created
		err    error
	}
	results := make([]result, n)
	keys := make([]string, n)
	bodies := make([]string, n)
	for i := range n {
		keys[i] = testenv.RandName()
		bodies[i] = fmt.Sprintf(`{"reference":"order-%d","amount":%d,"currency":"EUR"}`, i, 1000+i)
	}
	var st stats
	var done atomic.Int64
	var wg sync.WaitGroup
	next := make(chan int)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				status, p, err := pay(ctx, client, &base, &st, account, keys[i], bodies[i])
				results[i] = result{status, p, err}
				done.Add(1)
			}
		}()
	}
	// Crash the server once a third of the payments are through, while
	// others (slow ones especially) are mid-flight, and bring it back.
	crashed := make(chan struct{})
	go func() {
		defer close(crashed)
		for done.Load() < n/3 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		srv.crash()
		time.Sleep(300 * time.Millisecond)
		srv.start()
	}()
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	<-crashed

	for i, r := range results {
		if r.err != nil || r.status != http.StatusCreated || r.p.Reference != fmt.Sprintf("order-%d", i) {
			t.Errorf("payment %d: status %d, %+v, %v", i, r.status, r.p, r.err)
		}
	}
	t.Logf("attempts %d, client timeouts %d, connection errors %d, 409s %d, 503s %d, replays %d",
		st.attempts.Load(), st.timeouts.Load(), st.connErrors.Load(), st.conflicts.Load(), st.unavailable.Load(), st.replays.Load())
	if st.timeouts.Load() == 0 || st.replays.Load() == 0 {
		t.Errorf("the run exercised no timeouts or no replays; the test lost its teeth")
	}

	// A new Idempotency-Key for an existing merchant reference: the
	// middleware runs the handler, the generated wrapper replays the payment.
	status, p, err := pay(ctx, client, &base, &st, account, testenv.RandName(), bodies[0])
	if err != nil || status != http.StatusCreated || p.ID != results[0].p.ID {
		t.Errorf("same reference, new key: %d %+v %v; want payment %s", status, p, err, results[0].p.ID)
	}
	// The same reference with another amount is refused.
	status, _, err = pay(ctx, client, &base, &st, account, testenv.RandName(), `{"reference":"order-0","amount":1,"currency":"EUR"}`)
	if err != nil || status != http.StatusUnprocessableEntity {
		t.Errorf("same reference, other amount: %d %v; want 422", status, err)
	}
	// Another account reusing the first account's key and body gets its
	// own payment, not a replay of the first account's response.
	other := "acct_" + testenv.RandName()
	status, p, err = pay(ctx, client, &base, &st, other, keys[1], bodies[1])
	if err != nil || status != http.StatusCreated || p.ID == results[1].p.ID {
		t.Errorf("other account, same key: %d %+v %v", status, p, err)
	}

	// The ground truth: one row per reference, the one the client was told.
	rows, err := pool.Query(ctx, `SELECT reference, count(*), min(id) FROM `+pgx.Identifier{schema, "payments"}.Sanitize()+`
		WHERE account_id = $1 GROUP BY reference`, account)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Count int64
		ID    string
	}
	got := map[string]row{}
	for rows.Next() {
		var ref string
		var r row
		if err := rows.Scan(&ref, &r.Count, &r.ID); err != nil {
			t.Fatal(err)
		}
		got[ref] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var takenOver int
	pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "payments"}.Sanitize()+` WHERE account_id = $1 AND fence > 1`, account).Scan(&takenOver) //nolint:errcheck
	t.Logf("payments written after a takeover (fence > 1): %d", takenOver)
	want := map[string]row{}
	for i, r := range results {
		want[fmt.Sprintf("order-%d", i)] = row{Count: 1, ID: r.p.ID}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payments in Postgres (-want +got):\n%s", diff)
	}
}

// TestReplayOverHTTP is a quick in-process check of the wiring: the
// server's replay equals its first response byte for byte.
func TestReplayOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, testenv.PostgresURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	testenv.Need(t, "PostgreSQL at "+testenv.PostgresURL(), fmt.Sprintf(pgHint, testenv.PostgresURL(), err), err)
	defer pool.Close()
	schema := "httpapi_e2e_" + testenv.RandName()
	t.Cleanup(func() {
		pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
	})
	var out bytes.Buffer
	rctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	pr, pw := io.Pipe()
	go func() {
		errc <- run(rctx, []string{"-addr", "127.0.0.1:0", "-schema", schema, "-postgres", testenv.PostgresURL()}, pw)
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(&out, pr) //nolint:errcheck
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	defer func() {
		stop()
		if err := <-errc; err != nil {
			t.Error(err)
		}
		pw.Close()
	}()

	post := func() (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/payments", strings.NewReader(`{"reference":"r-1","amount":5,"currency":"EUR"}`))
		req.Header.Set("Authorization", "Bearer sk_test_acct")
		req.Header.Set("Idempotency-Key", "k-1")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	r1, b1 := post()
	r2, b2 := post()
	if r1.StatusCode != 201 || r2.StatusCode != 201 || b1 != b2 || r2.Header.Get("Idempotent-Replayed") != "true" ||
		r1.Header.Get("Location") != r2.Header.Get("Location") {
		t.Errorf("first %d %q %v\nreplay %d %q %v", r1.StatusCode, b1, r1.Header, r2.StatusCode, b2, r2.Header)
	}
	// The payment can be read back where Location says.
	get, _ := http.NewRequest(http.MethodGet, url+r1.Header.Get("Location"), nil)
	get.Header.Set("Authorization", "Bearer sk_test_acct")
	gres, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := io.ReadAll(gres.Body)
	gres.Body.Close()
	if gres.StatusCode != 200 || string(gb) != b1 {
		t.Errorf("GET %s: %d %q, want 200 %q", r1.Header.Get("Location"), gres.StatusCode, gb, b1)
	}
	// Missing key and unknown API key are refused before anything runs.
	req, _ := http.NewRequest(http.MethodPost, url+"/payments", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer sk_test_acct")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Errorf("missing key: %d", res.StatusCode)
	}
}
