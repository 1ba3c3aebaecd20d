package generator

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var onlyCases = flag.String("cases", "", "TestBehaviour: build and run only the golden cases whose name matches this regexp (while working on a case)")

// TestBehaviour compiles every golden output case with its input package
// and the case's behaviour tests (testdata/<case>/*_test.go), in a scratch
// module that uses this repository's runtime, and runs them against the
// memory store: exactly once under concurrency, replays equal to the first
// result under go-cmp (after a real round trip through the stored bytes), each option's effect.
// All cases build and run in one go test invocation.
func TestBehaviour(t *testing.T) {
	root := slowRoot(t, "builds and runs every golden case")
	// The cases also run on Redis: runtime/redisstore is a module of its
	// own, so the scratch module requires it too.
	mod := newScratch(t, "idemgen.test/behaviour", "github.com/google/go-cmp v0.7.0", "runtime/redisstore")
	cases, _ := filepath.Glob(filepath.Join(root, "golden", "*", goldenOutput))
	if len(cases) == 0 {
		t.Fatal("no golden output cases")
	}
	pkgRE := regexp.MustCompile(`(?m)^package (\w+)$`)
	only := regexp.MustCompile(*onlyCases)
	for _, golden := range cases {
		name := filepath.Base(filepath.Dir(golden))
		if !only.MatchString(name) {
			continue
		}
		src := filepath.Join(root, "testdata", name)
		dst := filepath.Join(mod, name)
		files, _ := filepath.Glob(filepath.Join(src, "*.go"))
		tests := 0
		for _, f := range files {
			if filepath.Base(f) == goldenOutput {
				continue // a stray generated file in the input: the golden one is tested
			}
			if strings.HasSuffix(f, "_test.go") {
				tests++
			}
			copyFile(t, f, filepath.Join(dst, filepath.Base(f)))
		}
		if tests == 0 {
			t.Errorf("testdata/%s has no behaviour test (*_test.go)", name)
		}
		gen, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dst, goldenOutput), gen)
		m := pkgRE.FindSubmatch(gen)
		if m == nil {
			t.Fatalf("golden/%s: no package clause", name)
		}
		write(t, filepath.Join(dst, "zz_helpers_test.go"), []byte(strings.Replace(helpersSource, "package PKG", "package "+string(m[1]), 1)))
	}
	// The generated code passes go vet (all analyzers, not only go test's subset).
	vet := exec.Command("go", "vet", "./...")
	vet.Dir = mod
	vet.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := vet.CombinedOutput(); err != nil {
		t.Fatalf("go vet in the scratch module: %v\n%s", err, out)
	}
	args := []string{"test", "-count=1", "./..."}
	if raceEnabled {
		args = append(args[:1], append([]string{"-race"}, args[1:]...)...)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in the scratch module: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s:\n%s", strings.Join(args, " "), out)
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, data)
}

// helpersSource is added to every case's package in the scratch module.
const helpersSource = `package PKG

// Aliased imports: a case may declare package-level names idem, context…
import (
	zzcontext "context"
	zzfmt "fmt"
	zziter "iter"
	zzos "os"
	zzstrings "strings"
	zzsync "sync"
	zztesting "testing"
	zztime "time"

	zzredis "github.com/redis/go-redis/v9"

	zzidem "github.com/idemgen/idemgen/runtime/idem"
	zzidemstore "github.com/idemgen/idemgen/runtime/idemstore"
	zzmemstore "github.com/idemgen/idemgen/runtime/memstore"
	zzredisstore "github.com/idemgen/idemgen/runtime/redisstore"
)

// jsonStore is the memory store, except that replays decode the stored
// JSON instead of sharing the first call's value: what every other store
// does, and what makes "replay equals the original" a real test.
type jsonStore struct{ *zzmemstore.Store }

func (s jsonStore) Claim(ctx zzcontext.Context, req zzidemstore.ClaimRequest) (zzidemstore.ClaimResult, error) {
	r, err := s.Store.Claim(ctx, req)
	r.Result.Value = nil
	return r, err
}

// newGuard returns a guard over a fresh memory store.
func newGuard(t zztesting.TB) *zzidem.Guard {
	t.Helper()
	return zzidem.NewGuard(jsonStore{zzmemstore.New()})
}

// namedGuard is a guard and the store it runs on.
type namedGuard struct {
	store string
	g     *zzidem.Guard
}

// guards returns a guard over a fresh memory store and, when Redis
// answers at 127.0.0.1:6379 (or IDEM_REDIS_ADDR), one over a Redis store
// under a prefix of its own: replays there decode bytes that went through
// Redis.
func guards(t zztesting.TB) []namedGuard {
	t.Helper()
	out := []namedGuard{{"memory", newGuard(t)}}
	addr := zzos.Getenv("IDEM_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := zzredis.NewClient(&zzredis.Options{Addr: addr, DialTimeout: zztime.Second})
	ctx, cancel := zzcontext.WithTimeout(zzcontext.Background(), 2*zztime.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Logf("no Redis at %s (%v): memory store only", addr, err)
		rdb.Close()
		return out
	}
	prefix := zzfmt.Sprintf("idembehaviour:%s:%d:", t.Name(), zztime.Now().UnixNano())
	st, err := zzredisstore.New(ctx, rdb, zzredisstore.WithKeyPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		bg := zzcontext.Background()
		for it := rdb.Scan(bg, 0, prefix+"*", 100).Iterator(); it.Next(bg); {
			rdb.Del(bg, it.Val())
		}
		rdb.Close()
	})
	return append(out, namedGuard{"redis", zzidem.NewGuard(st)})
}

// storm runs f from n goroutines released at once and returns their errors.
func storm(n int, f func() error) []error {
	errs := make([]error, n)
	var start, done zzsync.WaitGroup
	start.Add(1)
	for i := 0; i < n; i++ {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			errs[i] = f()
		}()
	}
	start.Done()
	done.Wait()
	return errs
}

// counter counts executions of a wrapped function.
type counter struct {
	mu zzsync.Mutex
	n  int
}

func (c *counter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// collect ranges a stream to its end or its error.
func collect[T any](seq zziter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// errIs reports whether err is nil when want is "", else holds want.
func errIs(err error, want string) bool {
	if err == nil || want == "" {
		return (err == nil) == (want == "")
	}
	return zzstrings.Contains(err.Error(), want)
}
`
