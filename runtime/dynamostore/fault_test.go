package dynamostore_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"

	"github.com/idemgen/idemgen/internal/testenv"
)

// privateServer is a dynalite of this test alone, on a spare port, keeping
// its tables on disk so that a killed server restarts with its items. It
// runs unmodified dynalite (--plain), so the store's fallback read is what
// answers failed conditions here.
type privateServer struct {
	t                 *testing.T
	port, dir, rundir string
	script            string
	pid               int
}

func startPrivateServer(t *testing.T) *privateServer {
	t.Helper()
	root := testenv.Root()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	p := &privateServer{t: t, port: port, dir: t.TempDir(), rundir: t.TempDir(), script: filepath.Join(root, "scripts", "dynalite.sh")}
	testenv.Need(t, "a private dynalite", "scripts/dynalite.sh starts one (it needs node and npm)", p.start())
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *privateServer) endpoint() string { return "http://127.0.0.1:" + p.port }

func (p *privateServer) start() error {
	cmd := exec.Command("bash", p.script, "start")
	cmd.Env = append(os.Environ(), "DYNALITE_PORT="+p.port, "DYNALITE_PATH="+p.dir, "DYNALITE_RUNDIR="+p.rundir, "DYNALITE_PLAIN=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return errors.New(strings.TrimSpace(string(out)) + ": " + err.Error())
	}
	b, err := os.ReadFile(filepath.Join(p.rundir, p.port+".pid"))
	if err != nil {
		return err
	}
	p.pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	return err
}

func (p *privateServer) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := syscall.Kill(p.pid, sig); err != nil {
		p.t.Fatalf("signal %v to dynalite %d: %v", sig, p.pid, err)
	}
}

// kill ends the server at once (SIGKILL works on a stopped process too)
// and waits until its port is free.
func (p *privateServer) kill() {
	if p.pid == 0 {
		return
	}
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	for i := 0; i < 100; i++ {
		if syscall.Kill(p.pid, 0) != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.pid = 0
}

func (p *privateServer) restart() {
	p.t.Helper()
	p.kill()
	if err := p.start(); err != nil {
		p.t.Fatalf("restarting dynalite: %v", err)
	}
}

// The server stops (SIGSTOP: requests reach its socket, nothing answers) or
// dies in the middle of a claim and of a completion. The caller gets
// idem.ErrStoreUnavailable, never a wrong answer, and afterwards the item
// is in one consistent state: the write fully applied or not at all.
func TestFaults(t *testing.T) {
	t.Parallel() // its own server
	srv := startPrivateServer(t)
	// hung is a user's store whose client has a short request timeout and
	// no retries, so a hung server surfaces quickly; it makes the calls
	// that meet the fault. s, on the same table and clock, is patient: it
	// sets up and checks, so a loaded machine's slow restart does not
	// count as a fault.
	clientFor := func(timeout time.Duration) *dynamodb.Client {
		return newClient(srv.endpoint(), func(o *dynamodb.Options) {
			o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(timeout)
			o.RetryMaxAttempts = 1
		})
	}
	client := clientFor(20 * time.Second)
	const table = "idemgen_faults"
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	if err := dynamostore.CreateTable(ctx, client, table); err != nil && !isTTLUnsupported(err) {
		t.Fatal(err)
	}
	clock := idemtest.NewClock(time.Now())
	s, err := dynamostore.New(context.Background(), client, table, dynamostore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	hung, err := dynamostore.New(context.Background(), clientFor(500*time.Millisecond), table, dynamostore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	const lease = 10 * time.Second
	req := func(key string, owner idemstore.Token) idemstore.ClaimRequest {
		return idemstore.ClaimRequest{Key: key, Fingerprint: fingerprint("a"), Owner: owner, Lease: lease, TTL: time.Hour}
	}
	// acquire claims key for a new owner on the running server.
	acquire := func(t *testing.T, key string) (idemstore.Token, idemstore.Lease) {
		t.Helper()
		a := token(t)
		res, err := s.Claim(bg, req(key, a))
		if err != nil || res.Status != idemstore.ClaimAcquired {
			t.Fatalf("claim = %v, %v", res.Status, err)
		}
		return a, idemstore.Lease{Key: key, Owner: a, Fence: res.Fence, Duration: lease, TTL: time.Hour}
	}
	unavailable := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, idem.ErrStoreUnavailable) || errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("%s = %v, want an error wrapping idem.ErrStoreUnavailable", what, err)
		}
	}
	get := func(key string) (idemstore.Record, bool) {
		t.Helper()
		r, err := s.Get(bg, key)
		// A pooled connection the paused and resumed server dropped fails
		// one read ("use of closed network connection"); this helper reads
		// the server's state, so it asks again on a fresh connection.
		for i := 0; i < 5 && errors.Is(err, idem.ErrStoreUnavailable); i++ {
			time.Sleep(100 * time.Millisecond)
			r, err = s.Get(bg, key)
		}
		if errors.Is(err, idem.ErrNotFound) {
			return r, false
		}
		if err != nil {
			t.Fatalf("Get(%s): %v", key, err)
		}
		return r, true
	}

	// settle gives a resumed server time to apply a request its client gave
	// up on: it polls until applied() or 5s have passed (then the server
	// dropped the request), so the test never races a late write.
	settle := func(applied func() bool) bool {
		deadline := time.Now().Add(5 * time.Second)
		for !applied() {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return true
	}

	t.Run("claim_server_killed", func(t *testing.T) {
		a := token(t)
		srv.signal(syscall.SIGSTOP)
		_, err := hung.Claim(bg, req("c1", a))
		unavailable("Claim on a hung server", err)
		srv.restart() // the request died with the server
		if r, ok := get("c1"); ok {
			t.Fatalf("a claim that never reached the server left a record: %+v", r)
		}
		if res, err := s.Claim(bg, req("c1", token(t))); err != nil || res.Status != idemstore.ClaimAcquired || res.Fence != 1 {
			t.Fatalf("claim after restart = %v fence %d, %v", res.Status, res.Fence, err)
		}
	})

	t.Run("claim_applied_after_caller_gave_up", func(t *testing.T) {
		a := token(t)
		srv.signal(syscall.SIGSTOP)
		_, err := hung.Claim(bg, req("c2", a))
		unavailable("Claim on a hung server", err)
		srv.signal(syscall.SIGCONT) // the server may still apply it
		applied := settle(func() bool { _, ok := get("c2"); return ok })
		b := token(t)
		la := idemstore.Lease{Key: "c2", Owner: a, Fence: 1, Duration: lease, TTL: time.Hour}
		if applied {
			t.Log("the server applied the claim after the caller gave up")
			// Applied: A owns it without knowing; B waits for A's lease,
			// then takes over, and A's writes are refused.
			if r, _ := get("c2"); r.State != idemstore.StateInProgress || r.Owner != a || r.Fence != 1 {
				t.Fatalf("late claim left %v owner %v fence %d", r.State, r.Owner, r.Fence)
			}
			if res, err := s.Claim(bg, req("c2", b)); err != nil || res.Status != idemstore.ClaimInProgress {
				t.Fatalf("claim while A's lease stands = %v, %v", res.Status, err)
			}
			clock.Advance(lease + dynamostore.DefaultSkewMargin)
			if res, err := s.Claim(bg, req("c2", b)); err != nil || res.Status != idemstore.ClaimTakenOver || res.Fence != 2 {
				t.Fatalf("claim after A's lease = %v fence %d, %v; want taken_over fence 2", res.Status, res.Fence, err)
			}
		} else {
			t.Log("the server dropped the claim")
			if res, err := s.Claim(bg, req("c2", b)); err != nil || res.Status != idemstore.ClaimAcquired {
				t.Fatalf("claim = %v, %v; want acquired", res.Status, err)
			}
		}
		if err := s.Complete(bg, la, idemstore.Result{Data: []byte(`"A"`)}); !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("A's Complete = %v, want ErrLeaseLost", err)
		}
	})

	t.Run("complete_server_killed", func(t *testing.T) {
		a, la := acquire(t, "c3")
		srv.signal(syscall.SIGSTOP)
		unavailable("Complete on a hung server", hung.Complete(bg, la, idemstore.Result{Data: []byte(`"done"`)}))
		srv.restart()
		r, ok := get("c3")
		if !ok || r.State != idemstore.StateInProgress || r.Owner != a || r.Fence != la.Fence || r.Result != nil {
			t.Fatalf("after the lost completion: found %v, %v owner %v fence %d result %q; want A's in-progress record", ok, r.State, r.Owner, r.Fence, r.Result)
		}
		// The owner still holds the key and completes it now.
		if err := s.Complete(bg, la, idemstore.Result{Data: []byte(`"done"`)}); err != nil {
			t.Fatalf("Complete after restart = %v", err)
		}
		if res, err := s.Claim(bg, req("c3", token(t))); err != nil || res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != `"done"` {
			t.Fatalf("replay = %v %q, %v", res.Status, res.Result.Data, err)
		}
	})

	t.Run("complete_applied_after_caller_gave_up", func(t *testing.T) {
		a, la := acquire(t, "c4")
		data := []byte(strings.Repeat("x", 64<<10))
		srv.signal(syscall.SIGSTOP)
		unavailable("Complete on a hung server", hung.Complete(bg, la, idemstore.Result{Data: data}))
		srv.signal(syscall.SIGCONT)
		settle(func() bool { r, _ := get("c4"); return r.State == idemstore.StateCompleted })
		r, _ := get("c4")
		switch {
		case r.State == idemstore.StateCompleted && string(r.Result) == string(data) && r.Fence == la.Fence:
			t.Log("the server applied the completion after the caller gave up")
			// Applied whole. A retry by the caller is told the lease is
			// gone (it cannot tell the completion was its own), and the
			// result replays.
			if err := s.Complete(bg, la, idemstore.Result{Data: data}); !errors.Is(err, idem.ErrLeaseLost) {
				t.Fatalf("repeated Complete = %v, want ErrLeaseLost", err)
			}
		case r.State == idemstore.StateInProgress && r.Owner == a && r.Result == nil:
			t.Log("the server dropped the completion")
			if err := s.Complete(bg, la, idemstore.Result{Data: data}); err != nil {
				t.Fatalf("Complete retry = %v", err)
			}
		default:
			t.Fatalf("inconsistent item: %v fence %d, %d result bytes", r.State, r.Fence, len(r.Result))
		}
		if res, err := s.Claim(bg, req("c4", token(t))); err != nil || res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != string(data) {
			t.Fatalf("replay = %v (%d bytes), %v", res.Status, len(res.Result.Data), err)
		}
	})

	t.Run("guard_fails_closed_when_server_is_down", func(t *testing.T) {
		srv.kill()
		defer srv.restart()
		g := idem.NewGuard(hung)
		spec := &idem.Spec{Name: "dynamostore_test.Faults", Lease: lease, TTL: time.Hour}
		c := g.Begin(spec, "c5")
		ran := false
		_, err := idem.Do(bg, c, func(ctx context.Context) (int, error) { ran = true; return 1, nil })
		unavailable("Do with the server down", err)
		if ran {
			t.Fatal("the function ran although the store was down")
		}
		for name, op := range map[string]func() error{
			"Heartbeat": func() error { return hung.Heartbeat(bg, idemstore.Lease{Key: "c5", Fence: 1, Duration: lease}) },
			"Get":       func() error { _, err := hung.Get(bg, "c5"); return err },
			"Delete":    func() error { return hung.Delete(bg, "c5") },
			"Wait":      func() error { return hung.Wait(bg, "c5") },
		} {
			unavailable(name+" with the server down", op())
		}
	})
}
