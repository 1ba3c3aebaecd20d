package idemctl

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/cmd/idemctl/internal/idemctl/fixture"
	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// A backend under test: the store URL idemctl gets, and the application's
// own store over the same records.
type testBackend struct {
	name string
	open func(t *testing.T) (storeURL string, app idemstore.Store)
	// expiredLingers: a record past its TTL stays until cleanup (Postgres,
	// file); Redis removes it itself.
	expiredLingers bool
}

var backends = []testBackend{
	{name: "redis", open: func(t *testing.T) (string, idemstore.Store) {
		addr := testenv.RedisAddr()
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rdb.Close() })
		testenv.Need(t, "Redis at "+addr, "Start it: redis-server --port 6379 --daemonize yes (or set IDEM_REDIS_ADDR).", rdb.Ping(context.Background()).Err())
		prefix := "idemctl-test:" + testenv.RandName() + ":"
		t.Cleanup(func() {
			keys, _ := rdb.Keys(context.Background(), prefix+"*").Result()
			if len(keys) > 0 {
				rdb.Del(context.Background(), keys...)
			}
		})
		st, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix(prefix), redisstore.WithEvictionCheck(redisstore.EvictionIgnore))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return "redis://" + addr + "/0?redis_prefix=" + url.QueryEscape(prefix), st
	}},
	{name: "redis-cluster", open: func(t *testing.T) (string, idemstore.Store) {
		addrs := testenv.Env("IDEM_REDIS_CLUSTER_ADDRS", "127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103")
		rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
		t.Cleanup(func() { rdb.Close() })
		ctx := context.Background()
		testenv.Need(t, "Redis Cluster at "+addrs, "Start it: bash scripts/redis-cluster.sh start (or make services), or set IDEM_REDIS_CLUSTER_ADDRS.", rdb.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }))
		prefix := "idemctl-test:" + testenv.RandName() + ":"
		t.Cleanup(func() {
			rdb.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error { //nolint:errcheck
				keys, _ := c.Keys(ctx, prefix+"*").Result()
				for _, k := range keys {
					c.Del(ctx, k)
				}
				return nil
			})
		})
		st, err := redisstore.New(context.Background(), rdb, redisstore.WithKeyPrefix(prefix), redisstore.WithEvictionCheck(redisstore.EvictionIgnore))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return "redis+cluster://" + addrs + "?redis_prefix=" + url.QueryEscape(prefix), st
	}},
	{name: "postgres", expiredLingers: true, open: func(t *testing.T) (string, idemstore.Store) {
		raw := testenv.PostgresURL()
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, raw)
		if err == nil {
			err = pool.Ping(ctx)
		}
		testenv.Need(t, "PostgreSQL at "+raw, "Start it (trust auth, database \"test\"): sudo service postgresql start (or set IDEM_POSTGRES_URL).", err)
		t.Cleanup(pool.Close)
		schema := "idemctl_test_" + testenv.RandName()
		t.Cleanup(func() {
			pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") //nolint:errcheck
		})
		if err := pgstore.Migrate(ctx, pool, pgstore.WithSchema(schema)); err != nil {
			t.Fatal(err)
		}
		st, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("schema", schema)
		u.RawQuery = q.Encode()
		return u.String(), st
	}},
	{name: "firestore", expiredLingers: true, open: openFirestoreBackend}, // firestore_test.go
	{name: "dynamodb", expiredLingers: true, open: openDynamoBackend},     // dynamodb_test.go
	{name: "dynamodb-single-table", expiredLingers: true, open: openDynamoSingleTable},
	{name: "file", expiredLingers: true, open: func(t *testing.T) (string, idemstore.Store) {
		dir := t.TempDir()
		st, err := filestore.New(dir, filestore.WithoutSync())
		if err != nil {
			t.Fatal(err)
		}
		return "file://" + dir, st
	}},
}

// ctl runs idemctl in-process against storeURL.
func ctl(t *testing.T, storeURL string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	full := append([]string{"-store", storeURL}, args...)
	code = Run(context.Background(), full, &o, &e, func(string) string { return "" })
	return o.String(), e.String(), code
}

// mustCtl runs idemctl and requires exit status want.
func mustCtl(t *testing.T, want int, storeURL string, args ...string) string {
	t.Helper()
	out, errOut, code := ctl(t, storeURL, args...)
	if code != want {
		t.Fatalf("idemctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out
}

// The specs of package fixture's functions, for their keys.
var (
	specCharge = &idem.Spec{Name: "test.Charge"}                                       // completed
	specRefund = &idem.Spec{Name: "test.Refund", OnFailure: idem.FailureLock}          // failed, recorded
	specNotify = &idem.Spec{Name: "test.Notify"}                                       // failed, released
	specShip   = &idem.Spec{Name: "test.Ship", Lease: 30 * time.Second}                // in progress
	specPing   = &idem.Spec{Name: "test.Ping", Version: 2, TTL: 20 * time.Millisecond} // expires
)

func keyOf(t *testing.T, g *idem.Guard, spec *idem.Spec, id string) string {
	t.Helper()
	c, m := idemimpl.Begin(g, spec)
	m.Key().String(id)
	k, err := c.StoreKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func call[R any](g *idem.Guard, spec *idem.Spec, id string, fn func(context.Context) (R, error)) (R, error) {
	c, k := idemimpl.Begin(g, spec)
	k.Key().String(id)
	return idem.Do(context.Background(), c, fn)
}

// mask replaces what differs from run to run: times (non-zero ones become
// one fixed instant) and owners (kept only as "present").
func mask(vs []view) []view {
	fixed := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]view, len(vs))
	for i, v := range vs {
		for _, tp := range []*time.Time{&v.LeaseUntil, &v.ExpiresAt, &v.UpdatedAt, &v.ClaimedAt} {
			if !tp.IsZero() {
				*tp = fixed
			}
		}
		if v.Owner != "" {
			v.Owner = "OWNER"
		}
		out[i] = v
	}
	return out
}

var stampRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// fields splits aligned text into lines of fields, times masked.
func fields(s string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Fields(stampRE.ReplaceAllString(line, "TIME")))
	}
	return out
}

func TestCommands(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testCommands(t, b) })
	}
}

func testCommands(t *testing.T, b testBackend) {
	storeURL, app := b.open(t)
	g := idem.NewGuard(app)

	// Through the generated wrappers (package fixture): a completed call,
	// a failure recorded under on_failure=lock, a failure released under
	// on_failure=unlock, a call that expires at once, and a call left
	// running.
	w := fixture.NewIdempotent(g)
	ctx := context.Background()
	if _, err := w.Charge(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Refund(ctx, "a"); err == nil {
		t.Fatal("Refund: want its error")
	}
	if _, err := w.Notify(ctx, "a"); err == nil {
		t.Fatal("Notify: want its error")
	}
	if _, err := w.Ping(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	fixture.ShipStarted, fixture.ShipGate = make(chan struct{}), make(chan struct{})
	unblock := fixture.ShipGate
	defer func() { fixture.ShipStarted, fixture.ShipGate = nil, nil }()
	shipErr := make(chan error, 1)
	go func() {
		_, err := w.Ship(ctx, "a")
		shipErr <- err
	}()
	<-fixture.ShipStarted
	defer func() {
		select {
		case <-unblock:
		default:
			close(unblock)
			<-shipErr
		}
	}()
	time.Sleep(60 * time.Millisecond) // Ping's 20ms TTL ends; Ship's claim is 60ms old

	kCharge, kRefund, kNotify, kPing, kShip := keyOf(t, g, specCharge, "a"), keyOf(t, g, specRefund, "a"),
		keyOf(t, g, specNotify, "a"), keyOf(t, g, specPing, "a"), keyOf(t, g, specShip, "a")
	fp := func(key string) string { return key[strings.LastIndexByte(key, ':')+1:] } // no payload: the fingerprint is the key hash
	failure, _ := json.Marshal(map[string]string{"message": "card declined"})

	// The fixture's wrappers store results with their generated codec.
	charged, err := idemimpl.TypedCodec[string]{Encode: func(e *idemimpl.Encoder, v *string) { e.String(*v) }}.Marshal("receipt-a")
	if err != nil {
		t.Fatal(err)
	}
	pinged, err := idemimpl.TypedCodec[int]{Encode: func(e *idemimpl.Encoder, v *int) { e.Int(int64(*v)) }}.Marshal(1)
	if err != nil {
		t.Fatal(err)
	}
	vCharge := view{Key: kCharge, Func: "test.Charge", State: "completed", Fence: 1, Fingerprint: fp(kCharge), ResultSize: len(charged), Live: true}
	vRefund := view{Key: kRefund, Func: "test.Refund", State: "failed", Fence: 1, Fingerprint: fp(kRefund), ResultSize: len(failure), Live: true}
	vNotify := view{Key: kNotify, Func: "test.Notify", State: "released", Fence: 1, Fingerprint: fp(kNotify), Live: true}
	vPing := view{Key: kPing, Func: "test.Ping", Version: 2, State: "completed", Fence: 1, Fingerprint: fp(kPing), ResultSize: len(pinged)}
	vShip := view{Key: kShip, Func: "test.Ship", State: "in_progress", Owner: "OWNER", Fence: 1, Fingerprint: fp(kShip), Live: true}
	// Every record has its four times; finished records keep their owner
	// in some stores, so owners are compared only where they must be set.
	withTimes := func(vs ...view) []view {
		fixed := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range vs {
			vs[i].UpdatedAt, vs[i].ExpiresAt, vs[i].LeaseUntil, vs[i].ClaimedAt = fixed, fixed, fixed, fixed
		}
		return vs
	}
	ownerOnlyInProgress := func(vs []view) []view {
		for i := range vs {
			if vs[i].State != "in_progress" {
				vs[i].Owner = ""
			}
			if vs[i].State == "released" {
				vs[i].LeaseUntil = time.Time{} // stores differ: the last lease or none
			}
		}
		return vs
	}
	listJSON := func(args ...string) []view {
		t.Helper()
		var got []view
		out := mustCtl(t, 0, storeURL, append([]string{"list", "-json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("list -json: %v\n%s", err, out)
		}
		return ownerOnlyInProgress(mask(got))
	}

	all := []view{vCharge, vNotify, vPing, vRefund, vShip} // sorted by key: by function name here
	if !b.expiredLingers {
		all = []view{vCharge, vNotify, vRefund, vShip}
	}
	want := ownerOnlyInProgress(withTimes(all...))
	if diff := cmp.Diff(want, listJSON()); diff != "" {
		t.Errorf("list -json (-want +got):\n%s", diff)
	}

	t.Run("another prefix", func(t *testing.T) {
		// An application with idem.WithKeyPrefix("other:") would see
		// nothing under the default prefix; here the roles are swapped.
		for _, cmd := range []string{"list", "stats"} {
			out, errOut, code := ctl(t, storeURL, "-prefix", "other:", cmd)
			if code != 0 || strings.Contains(out, "test.") {
				t.Errorf("%s: exit %d, stdout %q: want no records", cmd, code, out)
			}
			if !strings.Contains(errOut, `no records under -prefix "other:", but the store has records under another prefix, such as`) ||
				!strings.Contains(errOut, "\n  idem:test.") || !strings.Contains(errOut, "Set -prefix to the application's idem.WithKeyPrefix") {
				t.Errorf("%s: stderr %q: want the prefix hint with an example key", cmd, errOut)
			}
		}
		if _, errOut, _ := ctl(t, storeURL, "list", "-func", "NoSuchFunc"); strings.Contains(errOut, "another prefix") {
			t.Errorf("a -func that matches nothing under the right prefix gave the prefix hint: %q", errOut)
		}
	})

	t.Run("list filters", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []view
		}{
			{[]string{"-func", "test.Refund"}, []view{vRefund}},
			{[]string{"-func", "test.Ref"}, nil},           // names match whole
			{[]string{"-func", "Refund"}, []view{vRefund}}, // or their end after a '.' or '/'
			{[]string{"-func", "est.Refund"}, nil},
			{[]string{"-state", "failed", "-func", "Refund"}, []view{vRefund}},
			{[]string{"-state", "failed"}, []view{vRefund}},
			{[]string{"-state", "in_progress"}, []view{vShip}},
			{[]string{"-state", "released", "-func", "test.Notify"}, []view{vNotify}},
			{[]string{"-state", "in_progress", "-older", "30ms"}, []view{vShip}},
			{[]string{"-state", "in_progress", "-older", "1h"}, nil},
			{[]string{"-older", "1h"}, nil}, // -older is about in-progress records only
			{[]string{"-older", "30ms"}, []view{vShip}},
			{[]string{"-stale", "30ms"}, []view{vShip}}, // Ship's lease is 30s: no heartbeat yet
			{[]string{"-stale", "1h"}, nil},
			{[]string{"-limit", "1"}, []view{vCharge}},
		} {
			got := listJSON(tc.args...)
			want := ownerOnlyInProgress(withTimes(tc.want...))
			if want == nil {
				want = []view{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("list %s (-want +got):\n%s", strings.Join(tc.args, " "), diff)
			}
		}
		_, errOut, code := ctl(t, storeURL, "list", "-limit", "1")
		if code != 0 || !strings.Contains(errOut, "1 of ") {
			t.Errorf("list -limit 1: exit %d, stderr %q: want a note that more records exist", code, errOut)
		}
	})

	t.Run("list text", func(t *testing.T) {
		out := mustCtl(t, 0, storeURL, "list", "-func", "test.Ship")
		want := [][]string{
			{"KEY", "STATE", "FENCE", "CLAIMED", "UPDATED", "LEASE_UNTIL", "EXPIRES_AT", "SIZE"},
			{kShip, "in_progress", "1", "TIME", "TIME", "TIME", "TIME", "0"},
		}
		if diff := cmp.Diff(want, fields(out)); diff != "" {
			t.Errorf("list text (-want +got):\n%s\n%s", diff, out)
		}
	})

	wantStats := []statsRow{
		{Func: "test.Charge", Completed: 1, Total: 1},
		{Func: "test.Notify", Released: 1, Total: 1},
		{Func: "test.Ping", Version: 2, Expired: 1, Total: 1},
		{Func: "test.Refund", Failed: 1, Total: 1},
		{Func: "test.Ship", InProgress: 1, Total: 1},
	}
	if !b.expiredLingers {
		wantStats = append(wantStats[:2], wantStats[3:]...)
	}
	t.Run("stats", func(t *testing.T) {
		var got []statsRow
		if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "stats", "-json")), &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantStats, got); diff != "" {
			t.Errorf("stats -json (-want +got):\n%s", diff)
		}
		out := mustCtl(t, 0, storeURL, "stats", "-func", "test.Refund")
		wantText := [][]string{
			{"FUNCTION", "VERSION", "IN_PROGRESS", "LEASE_EXPIRED", "COMPLETED", "FAILED", "RELEASED", "EXPIRED", "TOTAL"},
			{"test.Refund", "0", "0", "0", "0", "1", "0", "0", "1"},
			{"TOTAL", "0", "0", "0", "1", "0", "0", "1"},
		}
		if diff := cmp.Diff(wantText, fields(out)); diff != "" {
			t.Errorf("stats text (-want +got):\n%s\n%s", diff, out)
		}
	})

	t.Run("show", func(t *testing.T) {
		var got view
		if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "show", kRefund, "-json", "-result")), &got); err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, got.Result); err != nil {
			t.Fatal(err)
		}
		got.Result = compact.Bytes()
		w := vRefund
		w.Error = "card declined"
		w.Result = failure
		if diff := cmp.Diff(ownerOnlyInProgress(withTimes(w)), ownerOnlyInProgress(mask([]view{got}))); diff != "" {
			t.Errorf("show -json (-want +got):\n%s", diff)
		}

		out := mustCtl(t, 0, storeURL, "show", kShip)
		rows := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, _ := strings.Cut(line, "  ")
			rows[k] = stampRE.ReplaceAllString(regexp.MustCompile(`\((in |)[0-9a-z.]+( ago|)\)`).ReplaceAllString(strings.TrimSpace(v), "(REL)"), "TIME")
		}
		owner := rows["owner"]
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(owner) {
			t.Errorf("show: owner %q, want 32 hex digits", owner)
		}
		wantRows := map[string]string{
			"key": kShip, "function": "test.Ship", "version": "0", "state": "in_progress", "owner": owner,
			"fence": "1", "lease until": "TIME (REL)", "expires at": "TIME (REL)", "updated": "TIME (REL)", "claimed": "TIME (REL)",
			"result size": "0 bytes", "fingerprint": fp(kShip),
		}
		if diff := cmp.Diff(wantRows, rows); diff != "" {
			t.Errorf("show text (-want +got):\n%s\n%s", diff, out)
		}

		_, errOut, code := ctl(t, storeURL, "show", "idem:test.Nope:v0:00")
		if code != ExitNotFound || !strings.Contains(errOut, "has no record") {
			t.Errorf("show of a missing key: exit %d, stderr %q; want %d and a message", code, errOut, ExitNotFound)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		_, errOut, code := ctl(t, storeURL, "delete", kShip)
		if code != ExitError || !strings.Contains(errOut, "idemctl release") {
			t.Errorf("delete of an in-progress key: exit %d, stderr %q; want 1 and advice to release", code, errOut)
		}
		_, errOut, code = ctl(t, storeURL, "release", kCharge)
		if code != ExitError || !strings.Contains(errOut, "-force") {
			t.Errorf("release of a completed key: exit %d, stderr %q; want 1 and -force advice", code, errOut)
		}
	})

	t.Run("release a running owner", func(t *testing.T) {
		out := mustCtl(t, 0, storeURL, "release", kShip)
		want := [][]string{
			{"released", kShip},
			{"before", "in_progress", "fence", "1", "owner", "OWNER"},
			{"after", "released", "fence", "2", "owner", "-"},
		}
		got := fields(out)[:3]
		got[1][5] = "OWNER"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("release (-want +got):\n%s\n%s", diff, out)
		}
		// The zombie finishes now: its completion is fenced out.
		close(unblock)
		if err := <-shipErr; !errors.Is(err, idem.ErrLeaseLost) {
			t.Errorf("Ship after release: %v, want an error wrapping idem.ErrLeaseLost", err)
		}
		var v view
		if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "show", "-json", kShip)), &v); err != nil {
			t.Fatal(err)
		}
		if v.State != "released" || v.Fence != 2 || v.ResultSize != 0 {
			t.Errorf("after the zombie's completion: %+v, want released, fence 2, no result", v)
		}
		// The next call runs again, above the released fence.
		var fence uint64
		if _, err := call(g, specShip, "a", func(ctx context.Context) (string, error) {
			fence, _ = idem.FenceFrom(ctx)
			return "shipped again", nil
		}); err != nil {
			t.Fatal(err)
		}
		if fence != 3 {
			t.Errorf("next owner's fence %d, want 3", fence)
		}
	})

	t.Run("delete", func(t *testing.T) {
		out := mustCtl(t, 0, storeURL, "delete", kCharge)
		if want := "deleted " + kCharge + " (was completed, fence 1)\n"; out != want {
			t.Errorf("delete: %q, want %q", out, want)
		}
		mustCtl(t, ExitNotFound, storeURL, "show", kCharge)
		mustCtl(t, ExitNotFound, storeURL, "delete", kCharge)
		mustCtl(t, ExitNotFound, storeURL, "release", kCharge)
	})

	t.Run("cleanup", func(t *testing.T) {
		var got struct{ Removed int }
		if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "cleanup", "-json")), &got); err != nil {
			t.Fatal(err)
		}
		want := 0
		if b.expiredLingers {
			want = 1 // Ping
		}
		if got.Removed != want {
			t.Errorf("cleanup removed %d, want %d", got.Removed, want)
		}
		var stats []statsRow
		if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "stats", "-json")), &stats); err != nil {
			t.Fatal(err)
		}
		wantStats := []statsRow{
			{Func: "test.Notify", Released: 1, Total: 1},
			{Func: "test.Refund", Failed: 1, Total: 1},
			{Func: "test.Ship", Completed: 1, Total: 1},
		}
		if diff := cmp.Diff(wantStats, stats); diff != "" {
			t.Errorf("stats after cleanup (-want +got):\n%s", diff)
		}
	})
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", []string{"-store", "file://" + dir}, 1, "usage: idemctl"},
		{"unknown command", []string{"-store", "file://" + dir, "frob"}, 1, `unknown command "frob"`},
		{"no store", []string{"list"}, 1, "no store: pass -store"},
		{"not a URL", []string{"-store", "localhost:6379", "list"}, 1, "is not a URL"},
		{"unknown scheme", []string{"-store", "mysql://x/y", "list"}, 1, `unknown store scheme "mysql"`},
		{"memory", []string{"-store", "memory://", "list"}, 1, "lives inside one process"},
		{"missing dir", []string{"-store", "file://" + dir + "/nope", "list"}, 1, "no such file or directory"},
		{"bad state", []string{"-store", "file://" + dir, "list", "-state", "done"}, 1, `-state "done"`},
		{"show without key", []string{"-store", "file://" + dir, "show"}, 1, "want exactly one KEY"},
		{"list with args", []string{"-store", "file://" + dir, "list", "x"}, 1, "unexpected arguments"},
		{"redis down", []string{"-store", "redis://127.0.0.1:1/0", "-timeout", "2s", "stats"}, 1, "connecting to Redis at redis://127.0.0.1:1/0"},
		{"postgres password hidden", []string{"-store", "postgres://u:secret@127.0.0.1:1/db", "-timeout", "2s", "stats"}, 1, "connecting to PostgreSQL at postgres://u:xxxxx@127.0.0.1:1/db"},
		{"bad redis option", []string{"-store", "redis://127.0.0.1:1/0?bogus=1", "stats"}, 1, "unexpected option"},
		{"help", []string{"-h"}, 0, "commands:"},
		{"empty store", []string{"list", "-store", "file://" + dir}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code := Run(context.Background(), tc.args, &o, &e, func(string) string { return "" })
			if code != tc.code || !strings.Contains(e.String(), tc.msg) {
				t.Errorf("idemctl %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, e.String(), tc.code, tc.msg)
			}
			if strings.Contains(e.String(), "secret") {
				t.Errorf("stderr shows the password: %q", e.String())
			}
		})
	}
}

func TestStoreFromEnv(t *testing.T) {
	dir := t.TempDir()
	var o, e bytes.Buffer
	code := Run(context.Background(), []string{"stats", "-json"}, &o, &e, func(k string) string {
		if k == "IDEMCTL_STORE" {
			return "file://" + dir
		}
		return ""
	})
	if code != 0 || strings.TrimSpace(o.String()) != "[]" {
		t.Errorf("stats with $IDEMCTL_STORE: exit %d, stdout %q, stderr %q", code, o.String(), e.String())
	}
	// -h says where the default comes from, once (it used to print the
	// environment's value as a second default).
	o.Reset()
	e.Reset()
	Run(context.Background(), []string{"-h"}, &o, &e, func(string) string { return "file://" + dir })
	if strings.Contains(e.String(), dir) || strings.Count(e.String(), "(default $IDEMCTL_STORE)") != 1 {
		t.Errorf("-h with $IDEMCTL_STORE set:\n%s", e.String())
	}
}

func TestSplitKey(t *testing.T) {
	for _, tc := range []struct {
		prefix, key string
		name        string
		version     int
		ok          bool
	}{
		{"idem:", "idem:billing.Charge:v0:ab12", "billing.Charge", 0, true},
		{"idem:", "idem:example.com/billing.Charge:v12:ab12", "example.com/billing.Charge", 12, true},
		{"idem:", "idem:shop.Order:v3:{ee01}:ab12", "shop.Order", 3, true},
		{"idem:", "idem:odd:v9:name:v1:ab12", "odd:v9:name", 1, true},
		{"", "x.F:v1:00", "x.F", 1, true},
		{"idem:", "other:x.F:v1:00", "", 0, false},
		{"idem:", "idem:x.F:vx:00", "", 0, false},
		{"idem:", "idem:x.F", "", 0, false},
		{"idem:", "idem::v1:00", "", 0, false},
	} {
		name, v, ok := splitKey(tc.prefix, tc.key)
		if name != tc.name || v != tc.version || ok != tc.ok {
			t.Errorf("splitKey(%q, %q) = %q, %d, %v; want %q, %d, %v", tc.prefix, tc.key, name, v, ok, tc.name, tc.version, tc.ok)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		json bool
	}{
		{[]string{"KEY", "-json"}, []string{"KEY"}, true},
		{[]string{"-json", "KEY"}, []string{"KEY"}, true},
		{[]string{"--", "-KEY"}, []string{"-KEY"}, false},
		{[]string{"A", "--", "-json"}, []string{"A", "-json"}, false},
	} {
		o := &options{}
		fs := newFlagSet()
		o.register(fs)
		pos, err := parseInterspersed(fs, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.pos, pos); diff != "" || o.json != tc.json {
			t.Errorf("%q: positional (-want +got):\n%s json=%v", tc.args, diff, o.json)
		}
	}
}

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// A value the store cannot decode is shown as an error (never as absent)
// and can be deleted.
func TestCorruptRecord(t *testing.T) {
	storeURL, app := backends[0].open(t) // redis
	st := app.(*redisstore.Store)
	u, _ := url.Parse(storeURL)
	rdb := redis.NewClient(&redis.Options{Addr: u.Host})
	defer rdb.Close()
	key := "idem:test.Bad:v0:00"
	if err := rdb.Set(context.Background(), st.RecordKey(key), "garbage", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := ctl(t, storeURL, "show", key)
	if code != ExitError || !strings.Contains(errOut, "corrupt") {
		t.Errorf("show of a corrupt record: exit %d, stderr %q; want 1 and 'corrupt'", code, errOut)
	}
	if out := mustCtl(t, 0, storeURL, "delete", key); out != "deleted "+key+" (was a corrupt record)\n" {
		t.Errorf("delete: %q", out)
	}
	mustCtl(t, ExitNotFound, storeURL, "show", key)
}

func TestNoTimeout(t *testing.T) {
	dir := t.TempDir()
	var o, e bytes.Buffer
	if code := Run(context.Background(), []string{"-timeout", "0", "-store", "file://" + dir, "cleanup"}, &o, &e, nil); code != 0 {
		t.Errorf("-timeout 0: exit %d, stderr %q", code, e.String())
	}
}

// An owner that stopped heartbeating an hour ago (its store clock set back
// an hour stands in for the wait): list -older finds it, marked as lease
// expired, and stats counts it apart from live owners.
func TestLeaseExpired(t *testing.T) {
	dir := t.TempDir()
	st, err := filestore.New(dir, filestore.WithoutSync(), filestore.WithClock(func() time.Time { return time.Now().Add(-time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	g := idem.NewGuard(st)
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := call(g, specShip, "old", func(context.Context) (string, error) {
			close(started)
			<-gate
			return "", nil
		})
		done <- err
	}()
	<-started
	defer func() { close(gate); <-done }()
	storeURL := "file://" + dir
	key := keyOf(t, g, specShip, "old")

	want := [][]string{
		{"KEY", "STATE", "FENCE", "CLAIMED", "UPDATED", "LEASE_UNTIL", "EXPIRES_AT", "SIZE"},
		{key, "in_progress", "(lease", "expired)", "1", "TIME", "TIME", "TIME", "TIME", "0"},
	}
	// Not heartbeated for an hour, and claimed an hour ago: both find it.
	for _, flag := range []string{"-stale", "-older"} {
		out := mustCtl(t, 0, storeURL, "list", flag, "30m")
		if diff := cmp.Diff(want, fields(out)); diff != "" {
			t.Errorf("list %s 30m (-want +got):\n%s\n%s", flag, diff, out)
		}
		if out := mustCtl(t, 0, storeURL, "list", flag, "2h", "-json"); strings.TrimSpace(out) != "[]" {
			t.Errorf("list %s 2h: %s, want []", flag, out)
		}
	}
	var stats []statsRow
	if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "stats", "-json")), &stats); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]statsRow{{Func: "test.Ship", LeaseExpired: 1, Total: 1}}, stats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

// An owner that still heartbeats but has run for an hour (its claim was
// stamped by a store clock an hour behind, its heartbeat by the real one):
// a hung function. list -older finds it by its claim time; list -stale,
// which looks at the last heartbeat, does not; show prints the claim time.
func TestHungOwner(t *testing.T) {
	dir := t.TempDir()
	var behind atomic.Bool
	behind.Store(true)
	st, err := filestore.New(dir, filestore.WithoutSync(), filestore.WithClock(func() time.Time {
		if behind.Load() {
			return time.Now().Add(-time.Hour)
		}
		return time.Now()
	}))
	if err != nil {
		t.Fatal(err)
	}
	g := idem.NewGuard(st)
	key := keyOf(t, g, specShip, "hung")
	ctx := context.Background()
	owner := idemstore.Token{1}
	res, err := st.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: owner, Lease: 10 * time.Minute, TTL: time.Hour})
	if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
		t.Fatalf("claim: %v %v", res.Status, err)
	}
	behind.Store(false)
	if err := st.Heartbeat(ctx, idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: 10 * time.Minute, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	storeURL := "file://" + dir

	out := mustCtl(t, 0, storeURL, "list", "-older", "30m")
	want := [][]string{
		{"KEY", "STATE", "FENCE", "CLAIMED", "UPDATED", "LEASE_UNTIL", "EXPIRES_AT", "SIZE"},
		{key, "in_progress", "1", "TIME", "TIME", "TIME", "TIME", "0"},
	}
	if diff := cmp.Diff(want, fields(out)); diff != "" {
		t.Errorf("list -older 30m (-want +got):\n%s\n%s", diff, out)
	}
	if out := mustCtl(t, 0, storeURL, "list", "-stale", "30m", "-json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("list -stale 30m: %s, want [] (the owner heartbeats)", out)
	}
	if out := mustCtl(t, 0, storeURL, "list", "-older", "2h", "-json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("list -older 2h: %s, want []", out)
	}
	var v view
	if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "show", "-json", key)), &v); err != nil {
		t.Fatal(err)
	}
	if ran := v.UpdatedAt.Sub(v.ClaimedAt); ran < 59*time.Minute || ran > 61*time.Minute {
		t.Errorf("show -json: claimed_at %v, updated_at %v; want the claim an hour before the heartbeat", v.ClaimedAt, v.UpdatedAt)
	}
	out = mustCtl(t, 0, storeURL, "show", key)
	if !regexp.MustCompile(`(?m)^claimed +\S+ \((59m\d+s|1h0m\d+s) ago\)$`).MatchString(out) {
		t.Errorf("show: want a claimed row an hour ago:\n%s", out)
	}
}

// A record without a claim time (written before stores kept one) counts
// for -older from its last update, the latest its claim can have been.
func TestClaimedBeforeWithoutClaimTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cutoff := now.Add(-time.Hour)
	for _, tc := range []struct {
		claimed, updated time.Time
		want             bool
	}{
		{now.Add(-2 * time.Hour), now, true},                            // heartbeating, claimed 2h ago
		{now.Add(-30 * time.Minute), now.Add(-30 * time.Minute), false}, // claimed 30m ago
		{time.Time{}, now.Add(-2 * time.Hour), true},                    // unknown claim, last update 2h ago
		{time.Time{}, now, false},                                       // unknown claim, updated now: cannot tell
	} {
		v := view{ClaimedAt: tc.claimed, UpdatedAt: tc.updated}
		if got := v.claimedBefore(cutoff); got != tc.want {
			t.Errorf("claimed %v, updated %v: claimedBefore = %v, want %v", tc.claimed, tc.updated, got, tc.want)
		}
	}
}

// show lists a call's completed steps; the step in flight is not among
// them.
func TestShowSteps(t *testing.T) {
	dir := t.TempDir()
	st, err := filestore.New(dir, filestore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	g := idem.NewGuard(st)
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := call(g, specShip, "stepped", func(ctx context.Context) (string, error) {
			if _, err := idem.Step(ctx, "label", func(context.Context) (string, error) { return "LBL-1", nil }); err != nil {
				return "", err
			}
			if _, err := idem.Step(ctx, "book", func(context.Context) (int, error) { return 42, nil }); err != nil {
				return "", err
			}
			_, err := idem.Step(ctx, "notify", func(context.Context) (bool, error) {
				close(started)
				<-gate
				return true, nil
			})
			return "", err
		})
		done <- err
	}()
	<-started
	defer func() { close(gate); <-done }()
	storeURL := "file://" + dir
	key := keyOf(t, g, specShip, "stepped")

	var v view
	if err := json.Unmarshal([]byte(mustCtl(t, 0, storeURL, "show", "-json", "-result", key)), &v); err != nil {
		t.Fatal(err)
	}
	want := []stepView{{Name: "book", Size: 2, Result: json.RawMessage("42")}, {Name: "label", Size: 7, Result: json.RawMessage(`"LBL-1"`)}}
	if diff := cmp.Diff(want, v.Steps); diff != "" {
		t.Errorf("show -json steps (-want +got):\n%s", diff)
	}
	var rows []string
	for _, line := range strings.Split(mustCtl(t, 0, storeURL, "show", key), "\n") {
		if strings.HasPrefix(line, "step ") {
			rows = append(rows, strings.Join(strings.Fields(line), " "))
		}
	}
	if diff := cmp.Diff([]string{"step book (2 bytes)", "step label (7 bytes)"}, rows); diff != "" {
		t.Errorf("show text steps (-want +got):\n%s", diff)
	}
}

// show opens sealed records with the keyring of $IDEMCTL_KEYRING or
// -keyring-file, and says "sealed" without one.
func TestShowSealed(t *testing.T) {
	dir := t.TempDir()
	st, err := filestore.New(dir, filestore.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	keyring := "k1:" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	ring, err := idemseal.Parse(keyring)
	if err != nil {
		t.Fatal(err)
	}
	g := idem.NewGuard(st, idem.WithSealer(ring))
	if _, err := call(g, specShip, "sealed", func(ctx context.Context) (string, error) {
		return "label LBL-7", nil
	}); err != nil {
		t.Fatal(err)
	}
	key := keyOf(t, g, specShip, "sealed")
	storeURL := "file://" + dir
	run := func(env string, args ...string) view {
		t.Helper()
		var o, e bytes.Buffer
		full := append([]string{"-store", storeURL, "show", "-json", "-result"}, args...)
		if code := Run(context.Background(), append(full, key), &o, &e, func(k string) string {
			return map[string]string{"IDEMCTL_KEYRING": env}[k]
		}); code != 0 {
			t.Fatalf("show: exit %d: %s", code, e.String())
		}
		var v view
		if err := json.Unmarshal(o.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := run(""); !v.Sealed || v.Result != nil {
		t.Errorf("without a keyring: sealed=%v result %s; want sealed and no result", v.Sealed, v.Result)
	}
	if v := run(keyring); v.Sealed || string(v.Result) != `"label LBL-7"` {
		t.Errorf("with $IDEMCTL_KEYRING: sealed=%v result %s; want the result", v.Sealed, v.Result)
	}
	file := filepath.Join(t.TempDir(), "ring")
	if err := os.WriteFile(file, []byte(keyring+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := run("", "-keyring-file", file); v.Sealed || string(v.Result) != `"label LBL-7"` {
		t.Errorf("with -keyring-file: sealed=%v result %s; want the result", v.Sealed, v.Result)
	}
}
