package filestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// The multi-process and crash tests re-execute the test binary: the child
// runs TestChildProcess with its role in the environment.
const (
	envRole  = "IDEM_FILESTORE_CHILD" // "race" or "crash"
	envDir   = "IDEM_FILESTORE_DIR"
	envID    = "IDEM_FILESTORE_ID"
	envPoint = "IDEM_FILESTORE_POINT" // crash: hook point to die at, or "external"
	envNth   = "IDEM_FILESTORE_NTH"   // crash: die at the nth time the point is reached
)

const (
	raceProcs      = 4
	raceGoroutines = 16
	raceKeys       = 200
	crashKeys      = 4 // keys each crash child works through
)

var raceSpec = idem.Spec{Name: "filestore.race", OnDuplicate: idem.DuplicateWait,
	Lease: 10 * time.Second, Wait: 30 * time.Second, TTL: time.Hour}

var crashSpec = idem.Spec{Name: "filestore.crash", OnDuplicate: idem.DuplicateWait,
	Lease: time.Minute, TTL: time.Hour}

func child(t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	// The race runtime sleeps 1s at exit unless told not to.
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), args...)
	cmd.Stderr = &bytes.Buffer{}
	return cmd
}

// TestChildProcess is the body of a re-executed test binary; it does nothing
// in a normal run.
func TestChildProcess(t *testing.T) {
	switch os.Getenv(envRole) {
	case "race":
		raceChild(t)
	case "crash":
		crashChild(t)
	}
}

// appendLedger records one execution of key. O_APPEND makes each line one
// atomic append even when processes race.
func appendLedger(dir, key, line string) error {
	f, err := os.OpenFile(filepath.Join(dir, "ledger", key), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func ledger(t *testing.T, dir, key string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ledger", key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func raceChild(t *testing.T) {
	dir, id := os.Getenv(envDir), os.Getenv(envID)
	s, err := New(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	g := idem.NewGuard(s)
	fmt.Println("ready")
	// Start together: the parent creates "go" once every child is up.
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	results := make([][raceKeys]string, raceGoroutines)
	var wg sync.WaitGroup
	for gi := range raceGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(gi)))
			for _, k := range rng.Perm(raceKeys) {
				key := fmt.Sprintf("key-%03d", k)
				c := g.Begin(&raceSpec, key)
				v, err := idem.Do(context.Background(), c, func(ctx context.Context) (string, error) {
					who := fmt.Sprintf("p%s.g%d.pid%d", id, gi, os.Getpid())
					if err := appendLedger(dir, key, who); err != nil {
						return "", err
					}
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
					return who, nil
				})
				if err != nil {
					t.Errorf("%s: %v", key, err)
					return
				}
				results[gi][k] = v
			}
		}()
	}
	wg.Wait()
	b, _ := json.Marshal(results)
	if err := os.WriteFile(filepath.Join(dir, "out", id+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMultiProcess: 4 processes × 16 goroutines race on the same 200 keys
// through idem.Guard and idem.Do on one store directory. Every key must run
// exactly once (one ledger line) and every caller must get that run's result.
func TestMultiProcess(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"ledger", "out"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cmds := make([]*exec.Cmd, raceProcs)
	outs := make([]io.Reader, raceProcs)
	for i := range cmds {
		cmds[i] = child(t, envRole+"=race", envDir+"="+dir, envID+"="+strconv.Itoa(i))
		var err error
		if outs[i], err = cmds[i].StdoutPipe(); err != nil {
			t.Fatal(err)
		}
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, out := range outs {
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("child %d: %q %v: %s", i, line, err, cmds[i].Stderr)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, cmd.Stderr)
		}
	}
	t.Logf("children ran for %v", time.Since(began))
	s, err := New(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(map[string]string, raceKeys) // key → the one run's identity
	for k := range raceKeys {
		key := fmt.Sprintf("key-%03d", k)
		runs := ledger(t, dir, key)
		if len(runs) == 1 {
			ran[key] = runs[0]
		}
		if len(runs) != 1 {
			t.Errorf("%s executed %d times: %v", key, len(runs), runs)
			continue
		}
		// Fence 1: no caller ever took the key over.
		rec, err := s.Get(context.Background(), storeKey(&raceSpec, key))
		if err != nil || rec.State != idemstore.StateCompleted || rec.Fence != 1 || string(recordBody(t, rec.Result)) != strconv.Quote(runs[0]) {
			t.Errorf("%s: record %+v, %v; want completed, fence 1, result %q", key, rec, err, runs[0])
		}
	}
	callers := 0
	for i := range raceProcs {
		b, err := os.ReadFile(filepath.Join(dir, "out", strconv.Itoa(i)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var results [][raceKeys]string
		if err := json.Unmarshal(b, &results); err != nil {
			t.Fatal(err)
		}
		for gi, rs := range results {
			for k, v := range rs {
				key := fmt.Sprintf("key-%03d", k)
				if run, ok := ran[key]; ok && v != run {
					t.Errorf("process %d goroutine %d got %q for %s, the run was %q", i, gi, v, key, run)
				}
				callers++
			}
		}
	}
	if want := raceProcs * raceGoroutines * raceKeys; callers != want {
		t.Errorf("%d results, want %d", callers, want)
	}
}

// storeKey returns the store key a Guard builds for a call of spec with the
// string key k.
func storeKey(spec *idem.Spec, k string) string {
	c := idem.NewGuard(memstore.New()).Begin(spec, k)
	key, err := c.StoreKey()
	if err != nil {
		panic(err)
	}
	return key
}

// crashChild works through its keys with a Guard and SIGKILLs itself at
// the nth time it reaches the chosen point (or is killed by the parent at a
// random moment when the point is "external").
func crashChild(t *testing.T) {
	dir, id, point := os.Getenv(envDir), os.Getenv(envID), os.Getenv(envPoint)
	nth, _ := strconv.Atoi(os.Getenv(envNth))
	s, err := New(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	die := func(p string) {
		if p == point {
			if seen == nth {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
			seen++
		}
	}
	crashHook = die
	g := idem.NewGuard(s)
	fmt.Println("ready")
	for k := range crashKeys {
		key := fmt.Sprintf("t%s-k%d", id, k)
		c := g.Begin(&crashSpec, key)
		_, err := idem.Do(context.Background(), c, func(ctx context.Context) (string, error) {
			die("run-start")
			if err := appendLedger(dir, key, key); err != nil {
				return "", err
			}
			die("run-end")
			return "done-" + key, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

var crashPoints = []string{
	"claim-locked", "claim-tmp-partial", "claim-tmp-written", "claim-tmp-synced", "claim-renamed",
	"run-start", "run-end",
	"complete-locked", "complete-tmp-partial", "complete-tmp-written", "complete-tmp-synced", "complete-renamed",
	"external",
}

// TestCrash kills a child process holding a claim at every point of claim,
// run and complete (and at random moments): 52 trials sharing one store.
// Afterwards every key is completed once, or in progress and claimable
// once its lease is over (not before), or absent and never run; and every
// record file decodes.
func TestCrash(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "ledger"), 0o700); err != nil {
		t.Fatal(err)
	}
	type trial struct {
		id    int
		point string
		nth   int
	}
	var trials []trial
	for rep := range 4 {
		for _, p := range crashPoints {
			trials = append(trials, trial{id: len(trials), point: p, nth: (rep + len(trials)) % crashKeys})
		}
	}
	work := make(chan trial)
	var wg sync.WaitGroup
	var mu sync.Mutex
	killedAt := map[string]int{}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tr := range work {
				cmd := child(t, envRole+"=crash", envDir+"="+dir, envID+"="+strconv.Itoa(tr.id),
					envPoint+"="+tr.point, envNth+"="+strconv.Itoa(tr.nth))
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Error(err)
					return
				}
				if err := cmd.Start(); err != nil {
					t.Error(err)
					return
				}
				if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
					t.Errorf("trial %d: %q %v", tr.id, line, err)
				}
				if tr.point == "external" {
					time.Sleep(time.Duration(rand.IntN(15000)) * time.Microsecond)
					cmd.Process.Kill()
				}
				err = cmd.Wait()
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
					mu.Lock()
					killedAt[tr.point]++
					mu.Unlock()
				case err != nil:
					t.Errorf("trial %d (%s): %v\n%s", tr.id, tr.point, err, cmd.Stderr)
				case tr.point != "external":
					t.Errorf("trial %d: child finished without reaching %s #%d", tr.id, tr.point, tr.nth)
				}
			}
		}()
	}
	for _, tr := range trials {
		work <- tr
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d trials, killed at: %v", len(trials), killedAt)

	// No torn record anywhere: every .rec file decodes.
	root := filepath.Join(dir, "store")
	recs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, recExt) {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := decodeRecord(b); err != nil {
			t.Errorf("torn record %s: %v", path, err)
		}
		recs++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	now, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	later, err := New(root, WithClock(func() time.Time { return time.Now().Add(crashSpec.Lease + time.Second) }))
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, tr := range trials {
		for k := range crashKeys {
			name := fmt.Sprintf("t%d-k%d", tr.id, k)
			runs := ledger(t, dir, name)
			key := storeKey(&crashSpec, name)
			rec, err := now.Get(ctx, key)
			switch {
			case errors.Is(err, idem.ErrNotFound):
				states["absent"]++
				if len(runs) != 0 {
					t.Errorf("%s ran %d times but has no record", name, len(runs))
				}
			case err != nil:
				t.Errorf("%s: %v", name, err)
			case rec.State == idemstore.StateCompleted:
				states["completed"]++
				if len(runs) != 1 || string(recordBody(t, rec.Result)) != strconv.Quote("done-"+name) {
					t.Errorf("%s completed with %q after %d runs", name, rec.Result, len(runs))
				}
			case rec.State == idemstore.StateInProgress:
				states["in_progress"]++
				if len(runs) > 1 {
					t.Errorf("%s ran %d times", name, len(runs))
				}
				req := idemstore.ClaimRequest{Key: key, Fingerprint: rec.Fingerprint, Owner: tok(1), Lease: time.Minute, TTL: time.Hour}
				// The dead owner's lease still holds…
				if res, err := now.Claim(ctx, req); err != nil || res.Status != idemstore.ClaimInProgress {
					t.Errorf("%s during the dead owner's lease: %+v, %v", name, res, err)
				}
				// …and once it is over the key is taken over with the next fence.
				res, err := later.Claim(ctx, req)
				if err != nil || res.Status != idemstore.ClaimTakenOver || res.Fence != rec.Fence+1 {
					t.Errorf("%s after the lease: %+v, %v; want taken over at fence %d", name, res, err, rec.Fence+1)
				}
			default:
				t.Errorf("%s: unexpected record %+v", name, rec)
			}
		}
	}
	t.Logf("%d record files; keys: %v", recs, states)
	if states["in_progress"] == 0 || states["completed"] == 0 {
		t.Errorf("trials did not cover both outcomes: %v", states)
	}

	// Cleanup after everything expired removes every file a crash left.
	end, err := New(root, WithClock(func() time.Time { return time.Now().Add(48 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := end.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, path)
		}
		return err
	})
	if d := cmp.Diff([]string(nil), left); d != "" {
		t.Errorf("files left after Cleanup:\n%s", d)
	}
}

// recordBody is what the function stored, behind the record's identity
// header.
func recordBody(t testing.TB, data []byte) []byte {
	t.Helper()
	_, body, _, err := idemimpl.SplitRecord(data)
	if err != nil {
		t.Errorf("record %q: %v", data, err)
	}
	return body
}
