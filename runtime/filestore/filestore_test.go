package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"

	"github.com/idemgen/idemgen/internal/testenv"
)

func newClock() *idemtest.Clock {
	return idemtest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := New(t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, now func() time.Time) idemstore.Store {
			return newStore(t, WithClock(now), WithPollInterval(5*time.Millisecond))
		},
		ManualClock: true,
		Corrupt: func(t *testing.T, s idemstore.Store, key string) {
			if err := os.WriteFile(s.(*Store).paths(key).rec, []byte("not a record"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		Legacy: legacyRecord,
		Raw:    rawFiles,
	})
}

// legacyRecord rewrites key's record file in format version 1, as the
// store wrote it before records carried ClaimedAt.
func legacyRecord(t *testing.T, s idemstore.Store, key string) {
	t.Helper()
	p := s.(*Store).paths(key)
	r, ok, err := s.(*Store).read(&p, key)
	if err != nil || !ok {
		t.Fatalf("reading %s: %v (found %v)", key, err, ok)
	}
	if err := os.WriteFile(p.rec, encodeRecordV1(&r), 0o600); err != nil {
		t.Fatal(err)
	}
}

// multiHead spreads calls round-robin over several Store values opened on
// one directory. They share no in-process state (stripes, descriptors), so
// they exclude each other only as separate processes do: through flock and
// rename. Running the suite through it checks the cross-process paths.
type multiHead struct {
	heads []*Store
	n     atomic.Uint64
}

func (m *multiHead) next() *Store { return m.heads[m.n.Add(1)%uint64(len(m.heads))] }

func (m *multiHead) Claim(ctx context.Context, r idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	return m.next().Claim(ctx, r)
}
func (m *multiHead) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	return m.next().Heartbeat(ctx, l)
}
func (m *multiHead) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return m.next().Complete(ctx, l, r)
}
func (m *multiHead) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return m.next().Fail(ctx, l, r)
}
func (m *multiHead) Release(ctx context.Context, l idemstore.Lease) error {
	return m.next().Release(ctx, l)
}
func (m *multiHead) Get(ctx context.Context, k string) (idemstore.Record, error) {
	return m.next().Get(ctx, k)
}
func (m *multiHead) Delete(ctx context.Context, k string) error { return m.next().Delete(ctx, k) }
func (m *multiHead) Wait(ctx context.Context, k string) error   { return m.next().Wait(ctx, k) }
func (m *multiHead) SupportsOrdering() bool                     { return true }
func (m *multiHead) List(ctx context.Context, p string, fn func(idemstore.Record) error) error {
	return m.next().List(ctx, p, fn)
}
func (m *multiHead) ForceRelease(ctx context.Context, k string) (idemstore.Record, error) {
	return m.next().ForceRelease(ctx, k)
}
func (m *multiHead) Cleanup(ctx context.Context) (int, error) { return m.next().Cleanup(ctx) }
func (m *multiHead) AppendItem(ctx context.Context, l idemstore.Lease, seq uint64, data []byte) error {
	return m.next().AppendItem(ctx, l, seq, data)
}
func (m *multiHead) ReadStream(ctx context.Context, r idemstore.StreamRead) (idemstore.StreamBatch, error) {
	return m.next().ReadStream(ctx, r)
}

func TestConformanceCrossProcessPaths(t *testing.T) {
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, now func() time.Time) idemstore.Store {
			dir := t.TempDir()
			m := &multiHead{}
			for range 3 {
				s, err := New(dir, WithClock(now), WithoutSync(), WithPollInterval(5*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				m.heads = append(m.heads, s)
			}
			return m
		},
		ManualClock: true,
	})
}

// The suite with the host clock, as processes sharing a directory run it.
func TestConformanceRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run skipped in -short mode")
	}
	idemtest.RunStoreSuite(t, idemtest.Harness{
		New: func(t *testing.T, _ func() time.Time) idemstore.Store {
			return newStore(t, WithoutSync(), WithPollInterval(5*time.Millisecond))
		},
		Lease: 300 * time.Millisecond,
	})
}

func tok(i int) (t idemstore.Token) {
	t[0], t[15] = 0xAB, byte(i)
	t[14] = byte(i >> 8)
	return t
}

func fp(i int) (f idemstore.Fingerprint) {
	f[0] = byte(i + 1)
	return f
}

// TestDifferential drives the file store and the memory store (the
// reference semantics) with the same random operations on a shared manual
// clock and requires identical answers.
func TestDifferential(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			clk := newClock()
			mem := memstore.New(memstore.WithClock(clk.Now))
			fst := newStore(t, WithClock(clk.Now), WithoutSync())
			rng := rand.New(rand.NewPCG(seed, 7))
			ctx := context.Background()
			keys := []string{"a", "b", "idem:pkg.F:v0:0123", string([]byte{0, 0xff, '/', '.'})}
			var leases []idemstore.Lease
			owner := 0
			cmpOpts := []cmp.Option{cmpopts.EquateEmpty()}
			for step := 0; step < 400; step++ {
				key := keys[rng.IntN(len(keys))]
				where := fmt.Sprintf("step %d", step)
				switch op := rng.IntN(10); op {
				case 0, 1, 2:
					if _, err := fst.Get(ctx, key); errors.Is(err, idem.ErrNotFound) {
						// Past its retention a record is gone, and the
						// contract leaves its fence open: the memory store
						// may have swept it (the fence restarts), the file
						// store keeps it until Cleanup (the fence carries
						// over). Start both afresh.
						_, _ = mem.Delete(ctx, key), fst.Delete(ctx, key)
					}
					owner++
					req := idemstore.ClaimRequest{Key: key, Fingerprint: fp(rng.IntN(2)), Owner: tok(owner),
						Lease: time.Duration(1+rng.IntN(10)) * time.Second, TTL: time.Duration(rng.IntN(30)) * time.Second}
					if rng.IntN(2) == 0 { // per-entity ordering
						req.Order = idemstore.OrderClaim{Key: fmt.Sprint("entity:{", rng.IntN(2), "}"),
							At:    clk.Now().Add(time.Duration(rng.IntN(120)-60) * time.Second),
							Grace: time.Duration(rng.IntN(3)) * 10 * time.Second, Override: rng.IntN(10) == 0}
					}
					mr, merr := mem.Claim(ctx, req)
					fr, ferr := fst.Claim(ctx, req)
					if merr != nil || ferr != nil {
						t.Fatalf("%s: claim errors mem=%v file=%v", where, merr, ferr)
					}
					mr.Result.Value = nil
					if d := cmp.Diff(mr, fr, cmpOpts...); d != "" {
						t.Fatalf("%s: claim %q (-mem +file):\n%s", where, key, d)
					}
					if mr.Status == idemstore.ClaimAcquired || mr.Status == idemstore.ClaimTakenOver {
						leases = append(leases, idemstore.Lease{Key: key, Owner: req.Owner, Fence: mr.Fence,
							Duration: time.Duration(1+rng.IntN(10)) * time.Second, TTL: time.Duration(rng.IntN(30)) * time.Second})
					}
				case 3, 4, 5:
					if len(leases) == 0 {
						continue
					}
					l := leases[rng.IntN(len(leases))]
					data := []byte(fmt.Sprintf("result-%d", step))
					var merr, ferr error
					switch rng.IntN(4) {
					case 0:
						merr, ferr = mem.Heartbeat(ctx, l), fst.Heartbeat(ctx, l)
					case 1:
						merr, ferr = mem.Complete(ctx, l, idemstore.Result{Data: data}), fst.Complete(ctx, l, idemstore.Result{Data: data})
					case 2:
						merr, ferr = mem.Fail(ctx, l, idemstore.Result{Data: data}), fst.Fail(ctx, l, idemstore.Result{Data: data})
					case 3:
						merr, ferr = mem.Release(ctx, l), fst.Release(ctx, l)
					}
					sameErr(t, where+": fenced write", idem.ErrLeaseLost, merr, ferr)
				case 6, 7:
					mr, merr := mem.Get(ctx, key)
					fr, ferr := fst.Get(ctx, key)
					sameRecord(t, fmt.Sprintf("%s: get %q", where, key), mr, fr, merr, ferr)
				case 8:
					if rng.IntN(2) == 0 {
						mr, merr := mem.ForceRelease(ctx, key)
						fr, ferr := fst.ForceRelease(ctx, key)
						sameRecord(t, fmt.Sprintf("%s: force release %q", where, key), mr, fr, merr, ferr)
						continue
					}
					if rng.IntN(2) != 0 {
						continue
					}
					sameErr(t, where+": delete", idem.ErrNotFound, mem.Delete(ctx, key), fst.Delete(ctx, key))
				case 9:
					clk.Advance(time.Duration(rng.IntN(8000)) * time.Millisecond)
				}
			}
		})
	}
}

// sameErr fails t unless the memory store's error merr and the file
// store's ferr are both nil, or both not nil and alike in wrapping target.
func sameErr(t *testing.T, what string, target, merr, ferr error) {
	t.Helper()
	if errors.Is(merr, target) != errors.Is(ferr, target) || (merr == nil) != (ferr == nil) {
		t.Fatalf("%s: mem=%v file=%v", what, merr, ferr)
	}
}

// sameRecord is sameErr for idem.ErrNotFound, and then the records too.
func sameRecord(t *testing.T, what string, mr, fr idemstore.Record, merr, ferr error) {
	t.Helper()
	sameErr(t, what, idem.ErrNotFound, merr, ferr)
	if d := cmp.Diff(mr, fr, cmpopts.EquateEmpty()); d != "" {
		t.Fatalf("%s (-mem +file):\n%s", what, d)
	}
}

func TestLayoutAndPermissions(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	s := newStore(t)
	ctx := context.Background()
	key := "idem:billing.CreateInvoice:v0:" + string(make([]byte, 300)) // any bytes, any length
	if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: tok(1), Lease: time.Second, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	p := s.paths(key)
	rel, _ := filepath.Rel(s.Root(), p.rec)
	if len(rel) != 2+1+2+1+64+len(recExt) {
		t.Errorf("record path %q: want ab/cd/<sha256hex>.rec", rel)
	}
	var got []string
	err := filepath.WalkDir(s.Root(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(filePerm)
		if d.IsDir() {
			want = fs.ModeDir | dirPerm
		}
		if path == s.Root() {
			return nil // t.TempDir made it
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
		r, _ := filepath.Rel(s.Root(), path)
		got = append(got, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h := filepath.Base(p.rec)[:64]
	want := []string{h[:2], filepath.Join(h[:2], h[2:4]), filepath.Join(h[:2], h[2:4], h+lockExt), filepath.Join(h[:2], h[2:4], h+recExt)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	fresh := filepath.Join(t.TempDir(), "a", "b")
	if _, err := New(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != dirPerm {
		t.Errorf("new root: %v %v, want mode 0700", fi.Mode(), err)
	}
}

func TestCorruptRecord(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		corrupt func(b []byte) []byte
	}{
		{"empty", func(b []byte) []byte { return nil }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }},
		{"header only", func(b []byte) []byte { return b[:headerSize] }},
		{"flipped bit in result", func(b []byte) []byte { b[len(b)-6] ^= 1; return b }},
		{"flipped bit in fence", func(b []byte) []byte { b[9] ^= 0x80; return b }},
		{"zeroed tail", func(b []byte) []byte { clear(b[len(b)/2:]); return b }},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"future version", func(b []byte) []byte { b[6] = 99; return b }},
		{"length field too large", func(b []byte) []byte { b[100] = 0x7f; return b }},
		{"other key", func([]byte) []byte {
			return encodeRecord(&idemstore.Record{Key: "someone else", State: idemstore.StateCompleted, ExpiresAt: time.Now().Add(time.Hour)})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, WithoutSync())
			key := "k"
			finished(t, s, key, "hello")
			p := s.paths(key)
			b, err := os.ReadFile(p.rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p.rec, tc.corrupt(b), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: tok(2), Lease: time.Second, TTL: time.Hour})
			if !errors.Is(err, idem.ErrCorruptRecord) {
				t.Fatalf("Claim: %v, want ErrCorruptRecord", err)
			}
			t.Log(err)
			if _, err := s.Get(ctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Get: %v, want ErrCorruptRecord", err)
			}
			if err := s.Wait(ctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Wait: %v, want ErrCorruptRecord", err)
			}
			l := idemstore.Lease{Key: key, Owner: tok(1), Fence: 1, Duration: time.Second, TTL: time.Hour}
			if err := s.Heartbeat(ctx, l); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Heartbeat: %v, want ErrCorruptRecord", err)
			}
			if n, err := s.Cleanup(ctx); !errors.Is(err, idem.ErrCorruptRecord) || n != 0 {
				t.Errorf("Cleanup: %d, %v; want 0 and ErrCorruptRecord", n, err)
			}
			if _, err := os.Stat(p.rec); err != nil {
				t.Errorf("Cleanup removed the corrupt record: %v", err)
			}
			// Delete is the operator's way out.
			if err := s.Delete(ctx, key); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: tok(3), Lease: time.Second, TTL: time.Hour})
			if err != nil || res.Status != idemstore.ClaimAcquired {
				t.Fatalf("Claim after Delete: %+v, %v", res, err)
			}
		})
	}
}

// finished claims key and completes it with data.
func finished(t testing.TB, s idemstore.Store, key, data string) {
	t.Helper()
	ctx := context.Background()
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: tok(1), Lease: time.Minute, TTL: time.Hour})
	if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
		t.Fatalf("claim %q: %+v %v", key, res, err)
	}
	l := idemstore.Lease{Key: key, Owner: tok(1), Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
	if err := s.Complete(ctx, l, idemstore.Result{Data: []byte(data)}); err != nil {
		t.Fatal(err)
	}
}

func TestNotWritable(t *testing.T) {
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// Root ignores mode bits; the immutable attribute stops it.
		if err := runCmd("chattr", "+i", dir); err != nil {
			// A file system capability, not a service: skipped under CI too.
			t.Skipf("running as root and chattr +i failed (%v): cannot make a directory root may not write (skipped regardless of CI)", err)
		}
		t.Cleanup(func() { _ = runCmd("chattr", "-i", dir) })
	} else if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	} else {
		t.Cleanup(func() { os.Chmod(dir, 0o700) })
	}
	for _, d := range []string{dir, filepath.Join(dir, "sub")} {
		_, err := New(d)
		if err == nil {
			t.Fatalf("New(%s) on a read-only directory succeeded", d)
		}
		if !errors.Is(err, fs.ErrPermission) || !errors.Is(err, idem.ErrStoreUnavailable) {
			t.Errorf("New(%s): %v, want an error wrapping fs.ErrPermission and idem.ErrStoreUnavailable", d, err)
		}
		if p := testenv.RepeatedPhrase(err.Error(), 3); p != "" {
			t.Errorf("New(%s) = %q says %q twice", d, err, p)
		}
		if n := strings.Count(err.Error(), d); n != 1 {
			t.Errorf("New(%s) = %q names the directory %d times, want once", d, err, n)
		}
		t.Log(err)
	}
}

func TestNotADirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(f); !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("New on a regular file = %v, want idem.ErrStoreUnavailable", err)
	}
	if _, err := New(""); err == nil {
		t.Fatal("New(\"\") succeeded")
	}
}

func TestDiskFull(t *testing.T) {
	_, err := os.Stat("/dev/full")
	testenv.Need(t, "/dev/full", "every Linux machine has it; the ENOSPC test cannot run without it", err)
	ctx := context.Background()
	s := newStore(t)
	finished(t, s, "done", `"stored"`)
	// Writes now land in /dev/full, which fails every write with ENOSPC.
	s.openTemp = func(string) (*os.File, error) { return os.OpenFile("/dev/full", os.O_WRONLY, 0) }
	_, err = s.Claim(ctx, idemstore.ClaimRequest{Key: "new", Owner: tok(2), Lease: time.Second, TTL: time.Hour})
	if !errors.Is(err, idem.ErrStoreFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Claim on a full disk: %v, want ErrStoreFull and ENOSPC", err)
	}
	t.Log(err)
	if _, err := s.Get(ctx, "new"); !errors.Is(err, idem.ErrNotFound) {
		t.Errorf("failed claim left a record: %v", err)
	}
	// Replays only read: they keep working.
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "done", Owner: tok(3), Lease: time.Second, TTL: time.Hour})
	if err != nil || res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != `"stored"` {
		t.Fatalf("replay on a full disk: %+v, %v", res, err)
	}
	// Through a Guard it is ErrStoreUnavailable wrapping ErrStoreFull.
	g := idem.NewGuard(s)
	c := g.Begin(&idem.Spec{Name: "test.Full"}, "x")
	ran := false
	_, err = idem.Do(ctx, c, func(context.Context) (int, error) { ran = true; return 1, nil })
	if ran || !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, idem.ErrStoreFull) {
		t.Fatalf("Do on a full disk: ran=%v err=%v", ran, err)
	}
}

func TestCanceledContextChangesNothing(t *testing.T) {
	s := newStore(t, WithoutSync())
	bg := context.Background()
	res, err := s.Claim(bg, idemstore.ClaimRequest{Key: "k", Owner: tok(1), Lease: time.Minute, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(s.paths("k").rec)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	l := idemstore.Lease{Key: "k", Owner: tok(1), Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
	ops := map[string]func() error{
		"claim": func() error {
			_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k2", Owner: tok(2), Lease: time.Minute, TTL: time.Hour})
			return err
		},
		"heartbeat": func() error { return s.Heartbeat(ctx, l) },
		"complete":  func() error { return s.Complete(ctx, l, idemstore.Result{Data: []byte("x")}) },
		"fail":      func() error { return s.Fail(ctx, l, idemstore.Result{Data: []byte("x")}) },
		"release":   func() error { return s.Release(ctx, l) },
		"get":       func() error { _, err := s.Get(ctx, "k"); return err },
		"delete":    func() error { return s.Delete(ctx, "k") },
		"wait":      func() error { return s.Wait(ctx, "k") },
		"cleanup":   func() error { _, err := s.Cleanup(ctx); return err },
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
	after, _ := os.ReadFile(s.paths("k").rec)
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("record changed:\n%s", d)
	}
	if _, err := s.Get(bg, "k2"); !errors.Is(err, idem.ErrNotFound) {
		t.Errorf("canceled claim created a record: %v", err)
	}
}

// TestLockWaitHonorsDeadline holds a key's flock from another descriptor
// (as another process would) and checks that a claim gives up at its
// deadline instead of hanging.
func TestLockWaitHonorsDeadline(t *testing.T) {
	s := newStore(t, WithoutSync())
	p := s.paths("k")
	if err := s.ensureDir(p.dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p.lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: tok(1), Lease: time.Minute, TTL: time.Hour})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Claim under a held lock: %v, want DeadlineExceeded", err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if _, err := s.Claim(context.Background(), idemstore.ClaimRequest{Key: "k", Owner: tok(1), Lease: time.Minute, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

func TestCleanup(t *testing.T) {
	clk := newClock()
	s := newStore(t, WithClock(clk.Now), WithoutSync())
	ctx := context.Background()
	claim := func(key string, lease, ttl time.Duration) idemstore.Lease {
		t.Helper()
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: tok(1), Lease: lease, TTL: ttl})
		if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
			t.Fatalf("claim %q: %+v %v", key, res, err)
		}
		return idemstore.Lease{Key: key, Owner: tok(1), Fence: res.Fence, Duration: lease, TTL: ttl}
	}
	short := claim("short", time.Second, time.Second)
	if err := s.Complete(ctx, short, idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	long := claim("long", time.Second, time.Hour)
	if err := s.Complete(ctx, long, idemstore.Result{Data: []byte("2")}); err != nil {
		t.Fatal(err)
	}
	claim("crashed", time.Second, 10*time.Second) // in progress, never finished
	claim("running", time.Hour, time.Hour)
	rel := claim("released", time.Second, time.Second)
	if err := s.Release(ctx, rel); err != nil {
		t.Fatal(err)
	}
	// Leftovers of a crash: a temp file next to a live record, and a lock
	// and temp file of a key whose claim never landed.
	if err := os.WriteFile(s.paths("long").tmp, []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	orphan := s.paths("orphan")
	if err := s.ensureDir(orphan.dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{orphan.lock, orphan.tmp} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Unrelated files are left alone.
	stray := filepath.Join(s.Root(), "README")
	os.WriteFile(stray, nil, 0o600)

	if n, err := s.Cleanup(ctx); err != nil || n != 0 {
		t.Fatalf("Cleanup before expiry: %d, %v", n, err)
	}
	clk.Advance(30 * time.Second)
	n, err := s.Cleanup(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Cleanup: %d, %v; want 3 (short, crashed, released)", n, err)
	}
	for _, k := range []string{"short", "crashed", "released"} {
		for _, f := range []string{s.paths(k).rec, s.paths(k).lock} {
			if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: still there after Cleanup (%v)", f, err)
			}
		}
	}
	for _, f := range []string{orphan.lock, orphan.tmp, s.paths("long").tmp} {
		if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s not removed (%v)", f, err)
		}
	}
	for _, k := range []string{"long", "running"} {
		if _, err := s.Get(ctx, k); err != nil {
			t.Errorf("live %q: %v", k, err)
		}
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("Cleanup removed an unrelated file: %v", err)
	}
	// A cleaned key starts afresh; a live key still replays.
	if l := claim("short", time.Second, time.Second); l.Fence != 1 {
		t.Errorf("fence after cleanup: %d, want 1", l.Fence)
	}
}

// TestLockExclusiveWhileCleanupUnlinks checks the lock-file protocol: two
// Store values on one directory (separate descriptors, so they exclude each
// other only through flock, as two processes would) lock the same keys
// while a third runs Cleanup, which unlinks the lock files of keys without
// a record. No two holders may ever be inside a key's lock at once.
func TestLockExclusiveWhileCleanupUnlinks(t *testing.T) {
	dir := t.TempDir()
	var stores [3]*Store
	for i := range stores {
		s, err := New(dir, WithoutSync())
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	cleanups := 0
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := stores[2].Cleanup(ctx); err != nil && ctx.Err() == nil {
				t.Error(err)
				return
			}
			cleanups++
		}
	}()
	const keys = 3
	var inside [keys]atomic.Int32
	var workers sync.WaitGroup
	for w := range 8 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			s := stores[w%2]
			for i := range 300 {
				k := i % keys
				p := s.paths(fmt.Sprint(k))
				l, err := s.lock(ctx, &p)
				if err != nil {
					t.Error(err)
					return
				}
				if n := inside[k].Add(1); n != 1 {
					t.Errorf("key %d: %d holders at once", k, n)
				}
				runtime.Gosched()
				inside[k].Add(-1)
				l.unlock()
			}
		}()
	}
	workers.Wait()
	cancel()
	wg.Wait()
	t.Logf("%d cleanups ran", cleanups)
}

func runCmd(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return nil
}

// TestUnavailableErrorsSayItOnce: with its directory gone (replaced by a
// file), every operation of a store fails with a message that repeats no
// phrase, and a Guard's call reports idem.ErrStoreUnavailable once.
func TestUnavailableErrorsSayItOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := New(dir, WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := idemstore.Lease{Key: "k", Owner: tok(1), Fence: 1, Duration: time.Second, TTL: time.Minute}
	g := idem.NewGuard(s)
	ops := []struct {
		name string
		run  func() error
	}{
		{"claim", func() error {
			_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: tok(1), Lease: time.Second, TTL: time.Minute})
			return err
		}},
		{"heartbeat", func() error { return s.Heartbeat(ctx, l) }},
		{"complete", func() error { return s.Complete(ctx, l, idemstore.Result{Data: []byte("1")}) }},
		{"get", func() error { _, err := s.Get(ctx, "k"); return err }},
		{"delete", func() error { return s.Delete(ctx, "k") }},
		{"wait", func() error { return s.Wait(ctx, "k") }},
		{"list", func() error { return s.List(ctx, "", func(idemstore.Record) error { return nil }) }},
		{"force release", func() error { _, err := s.ForceRelease(ctx, "k"); return err }},
		{"cleanup", func() error { _, err := s.Cleanup(ctx); return err }},
		{"guard", func() error {
			c := g.Begin(&idem.Spec{Name: "test.Unavailable"}, "k")
			_, err := idem.Do(ctx, c, func(context.Context) (int, error) { return 1, nil })
			if !errors.Is(err, idem.ErrStoreUnavailable) {
				t.Errorf("guard = %v, want idem.ErrStoreUnavailable", err)
			}
			return err
		}},
	}
	for _, op := range ops {
		err := op.run()
		if err == nil {
			t.Errorf("%s succeeded without its directory", op.name)
			continue
		}
		if p := testenv.RepeatedPhrase(err.Error(), 3); p != "" {
			t.Errorf("%s = %q: says %q twice", op.name, err, p)
		}
	}
}

// rawFiles reads every file under the store's root, as a reader of its
// directory (or a backup of it) would.
func rawFiles(t *testing.T, s idemstore.Store) [][]byte {
	var out [][]byte
	err := filepath.WalkDir(s.(*Store).Root(), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out = append(out, b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
