package dynamostore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

var bg = context.Background()

func token(t testing.TB) idemstore.Token {
	var tok idemstore.Token
	if _, err := rand.Read(tok[:]); err != nil {
		t.Fatal(err)
	}
	return tok
}

func fingerprint(s string) idemstore.Fingerprint {
	var f idemstore.Fingerprint
	copy(f[:], s)
	return f
}

func claim(t testing.TB, s idemstore.Store, key string, f idemstore.Fingerprint, lease time.Duration) (idemstore.Lease, idemstore.ClaimResult) {
	t.Helper()
	owner := token(t)
	res, err := s.Claim(bg, idemstore.ClaimRequest{Key: key, Fingerprint: f, Owner: owner, Lease: lease, TTL: time.Hour})
	if err != nil {
		t.Fatalf("Claim(%s): %v", key, err)
	}
	return idemstore.Lease{Key: key, Owner: owner, Fence: res.Fence, Duration: lease, TTL: time.Hour}, res
}

// A replay is one request (a consistent GetItem: the key was completed by
// this store, so its hint sends the claim to a read first) and a first
// execution two, counted on the wire through idem.Guard and idem.Do;
// heartbeats are off the path (the lease is long).
func TestRoundTrips(t *testing.T) {
	_, table := dynamo(t)
	for _, tc := range []struct {
		name          string
		opts          []func(*dynamodb.Options)
		first, replay map[string]int
	}{
		{
			name:   "returns_item_on_failure",
			first:  map[string]int{"UpdateItem": 2},
			replay: map[string]int{"GetItem": 1},
		},
		{
			name:   "fallback_read",
			opts:   []func(*dynamodb.Options){withoutReturnOnFailure},
			first:  map[string]int{"UpdateItem": 2},
			replay: map[string]int{"GetItem": 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c counter
			client := newClient(endpoint(), append(tc.opts, c.option)...)
			s := newStore(t, client, table)
			g := idem.NewGuard(s)
			spec := &idem.Spec{Name: "dynamostore_test.RoundTrips", Lease: time.Minute, TTL: time.Hour}
			var runs atomic.Int64
			call := func() string {
				t.Helper()
				c := g.Begin(spec, "order-1")
				v, err := idem.Do(bg, c, func(ctx context.Context) (string, error) {
					return fmt.Sprintf("run %d", runs.Add(1)), nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			c.take()
			if v := call(); v != "run 1" {
				t.Fatalf("first call = %q", v)
			}
			if diff := cmp.Diff(tc.first, c.take()); diff != "" {
				t.Errorf("first execution requests (-want +got):\n%s", diff)
			}
			for i := 0; i < 3; i++ {
				if v := call(); v != "run 1" {
					t.Fatalf("replay = %q, want run 1", v)
				}
				if diff := cmp.Diff(tc.replay, c.take()); diff != "" {
					t.Errorf("replay requests (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// The lease is judged by the caller's clock with the skew margin: no
// takeover (and no waking) until lease + margin have passed on the
// claimer's clock.
func TestSkewMargin(t *testing.T) {
	client, table := dynamo(t)
	clock := idemtest.NewClock(time.Now())
	s := newStore(t, client, table, dynamostore.WithClock(clock.Now), dynamostore.WithSkewMargin(2*time.Second))
	const lease = 10 * time.Second
	l, res := claim(t, s, "k", fingerprint("a"), lease)
	if res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim = %v", res.Status)
	}
	for _, step := range []struct {
		advance time.Duration
		want    idemstore.ClaimStatus
	}{
		{lease, idemstore.ClaimInProgress},                           // lease over by the owner's clock
		{2*time.Second - time.Nanosecond, idemstore.ClaimInProgress}, // 1ns short of the margin
		{time.Nanosecond, idemstore.ClaimTakenOver},
	} {
		clock.Advance(step.advance)
		if step.want == idemstore.ClaimInProgress {
			ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
			err := s.Wait(ctx, "k")
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Wait inside the margin = %v, want it to keep waiting", err)
			}
		}
		l2, res := claim(t, s, "k", fingerprint("a"), lease)
		if res.Status != step.want {
			t.Fatalf("claim after %v = %v, want %v", step.advance, res.Status, step.want)
		}
		if res.Status == idemstore.ClaimTakenOver && l2.Fence != l.Fence+1 {
			t.Fatalf("takeover fence %d, want %d", l2.Fence, l.Fence+1)
		}
	}
}

// Leases expire by the real clock too, and Wait wakes by polling.
func TestRealClockLeaseExpiry(t *testing.T) {
	client, table := dynamo(t)
	// Long enough that two claims fit in it on a loaded machine.
	const lease, margin = time.Second, 200 * time.Millisecond
	s := newStore(t, client, table, dynamostore.WithSkewMargin(margin))
	start := time.Now()
	l, _ := claim(t, s, "k", fingerprint("a"), lease)
	if _, res := claim(t, s, "k", fingerprint("a"), lease); res.Status != idemstore.ClaimInProgress {
		t.Fatalf("second claim = %v, want in_progress", res.Status)
	}
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := s.Wait(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < lease+margin {
		t.Fatalf("Wait returned after %v, before lease + margin (%v)", waited, lease+margin)
	}
	l2, res := claim(t, s, "k", fingerprint("a"), lease)
	if res.Status != idemstore.ClaimTakenOver || l2.Fence != l.Fence+1 {
		t.Fatalf("claim after expiry = %v fence %d, want taken_over fence %d", res.Status, l2.Fence, l.Fence+1)
	}
}

// A result that cannot fit is rejected before any request, the record is
// untouched; the largest result that fits is stored and replayed.
func TestItemTooLarge(t *testing.T) {
	_, table := dynamo(t)
	var c counter
	client := newClient(endpoint(), c.option)
	for _, layout := range [][]dynamostore.Option{nil, {dynamostore.WithKeyPrefix("a-rather-long-prefix-for-single-table-designs#")}} {
		s := newStore(t, client, table, layout...)
		key := "idem:pkg.Func:v0:" + fmt.Sprintf("%064x", 1)
		max := s.MaxResultSize(key)
		if max < 409000 || max >= dynamostore.MaxItemSize {
			t.Fatalf("MaxResultSize = %d, want a little under %d", max, dynamostore.MaxItemSize)
		}
		l, _ := claim(t, s, key, fingerprint("a"), time.Minute)
		before, err := s.Get(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		c.take()
		big := make([]byte, max+1)
		for _, op := range []func(idemstore.Lease, idemstore.Result) error{
			func(l idemstore.Lease, r idemstore.Result) error { return s.Complete(bg, l, r) },
			func(l idemstore.Lease, r idemstore.Result) error { return s.Fail(bg, l, r) },
		} {
			err := op(l, idemstore.Result{Data: big})
			if !errors.Is(err, dynamostore.ErrItemTooLarge) {
				t.Fatalf("oversized result = %v, want ErrItemTooLarge", err)
			}
			t.Logf("error text: %v", err)
		}
		if n := c.take(); len(n) != 0 {
			t.Fatalf("oversized results sent requests: %v", n)
		}
		after, err := s.Get(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Fatalf("record changed (-before +after):\n%s", diff)
		}
		fits := make([]byte, max)
		_, _ = rand.Read(fits)
		if err := s.Complete(bg, l, idemstore.Result{Data: fits}); err != nil {
			t.Fatalf("Complete with MaxResultSize bytes: %v", err)
		}
		if _, res := claim(t, s, key, fingerprint("a"), time.Minute); res.Status != idemstore.ClaimCompleted || !bytes.Equal(res.Result.Data, fits) {
			t.Fatalf("replay of the largest result = %v (%d bytes)", res.Status, len(res.Result.Data))
		}
	}
}

// rawItem reads an item as DynamoDB holds it.
func rawItem(t *testing.T, client *dynamodb.Client, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := client.GetItem(bg, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// The item's layout on the wire: key attributes, readable state, the TTL
// attribute in seconds past the expiry plus the margin.
func TestItemLayout(t *testing.T) {
	client, _ := dynamo(t)
	layout := []dynamostore.Option{dynamostore.WithPartitionKey("PK"), dynamostore.WithSortKey("SK", "IDEM"),
		dynamostore.WithTTLAttribute("expires"), dynamostore.WithKeyPrefix("IDEM#")}
	table := "idemgen_layout_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	makeTable(t, client, table, layout...)
	now := time.Unix(1_800_000_000, 250_000_000)
	s, err := dynamostore.New(context.Background(), client, table, append(layout, dynamostore.WithClock(func() time.Time { return now }))...)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := claim(t, s, "k1", fingerprint("a"), 10*time.Second)
	if err := s.Complete(bg, l, idemstore.Result{Data: []byte(`{"ok":true}`)}); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, client, table, map[string]types.AttributeValue{
		"PK": &types.AttributeValueMemberS{Value: "IDEM#k1"}, "SK": &types.AttributeValueMemberS{Value: "IDEM"}})
	exp := now.Add(time.Hour)
	fpa := fingerprint("a")
	want := map[string]string{
		"PK":          "S IDEM#k1",
		"SK":          "S IDEM",
		"state":       "S completed",
		"owner":       "B " + hex.EncodeToString(l.Owner[:]),
		"fence":       "N 1",
		"fp":          "B " + hex.EncodeToString(fpa[:]),
		"result":      "B " + hex.EncodeToString([]byte(`{"ok":true}`)),
		"lease_until": "N " + strconv.FormatInt(now.Add(10*time.Second).UnixNano(), 10),
		"expires_at":  "N " + strconv.FormatInt(exp.UnixNano(), 10),
		"updated_at":  "N " + strconv.FormatInt(now.UnixNano(), 10),
		"claimed_at":  "N " + strconv.FormatInt(now.UnixNano(), 10),
		// expiry + 1s margin, rounded up to whole seconds
		"expires": "N " + strconv.FormatInt(exp.Unix()+2, 10),
	}
	if diff := cmp.Diff(want, flat(item)); diff != "" {
		t.Fatalf("item (-want +got):\n%s", diff)
	}
}

// flat shows an item as attribute -> "TYPE value" (binaries in hex).
func flat(item map[string]types.AttributeValue) map[string]string {
	out := map[string]string{}
	for k, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = "S " + v.Value
		case *types.AttributeValueMemberN:
			out[k] = "N " + v.Value
		case *types.AttributeValueMemberB:
			out[k] = "B " + hex.EncodeToString(v.Value)
		default:
			out[k] = fmt.Sprintf("%T", v)
		}
	}
	return out
}

// An item the store cannot read is ErrCorruptRecord, never absent: no
// claim runs over it and Get, Wait report it.
func TestCorruptItem(t *testing.T) {
	client, table := dynamo(t)
	prefix := uniquePrefix(t)
	s := openStore(t, client, table, dynamostore.WithKeyPrefix(prefix))
	claim(t, s, "template", fingerprint("a"), time.Hour)
	base := rawItem(t, client, table, map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: prefix + "template"}})
	for _, tc := range []struct {
		name   string
		mutate func(map[string]types.AttributeValue)
	}{
		{"unknown_state", func(m map[string]types.AttributeValue) { m["state"] = &types.AttributeValueMemberS{Value: "done"} }},
		{"state_as_number", func(m map[string]types.AttributeValue) { m["state"] = &types.AttributeValueMemberN{Value: "2"} }},
		{"short_owner", func(m map[string]types.AttributeValue) { m["owner"] = &types.AttributeValueMemberB{Value: []byte{1}} }},
		{"no_fingerprint", func(m map[string]types.AttributeValue) { delete(m, "fp") }},
		{"fence_zero", func(m map[string]types.AttributeValue) { m["fence"] = &types.AttributeValueMemberN{Value: "0"} }},
		{"lease_as_string", func(m map[string]types.AttributeValue) {
			m["lease_until"] = &types.AttributeValueMemberS{Value: "soon"}
		}},
		{"result_as_string", func(m map[string]types.AttributeValue) { m["result"] = &types.AttributeValueMemberS{Value: "x"} }},
		{"steps_as_string", func(m map[string]types.AttributeValue) { m["steps"] = &types.AttributeValueMemberS{Value: "x"} }},
		{"step_as_number", func(m map[string]types.AttributeValue) {
			m["steps"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"charge": &types.AttributeValueMemberN{Value: "1"}}}
		}},
		{"step_key_not_escaped_so", func(m map[string]types.AttributeValue) {
			m["steps"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"~charge": &types.AttributeValueMemberB{Value: []byte("x")}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := map[string]types.AttributeValue{}
			for k, v := range base {
				item[k] = v
			}
			key := tc.name
			item["pk"] = &types.AttributeValueMemberS{Value: prefix + key}
			tc.mutate(item)
			if _, err := client.PutItem(bg, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
				t.Fatal(err)
			}
			_, err := s.Claim(bg, idemstore.ClaimRequest{Key: key, Fingerprint: fingerprint("a"), Owner: token(t), Lease: time.Minute, TTL: time.Hour})
			if !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Claim = %v, want ErrCorruptRecord", err)
			}
			if _, err := s.Get(bg, key); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Get = %v, want ErrCorruptRecord", err)
			}
			if err := s.Wait(bg, key); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Wait = %v, want ErrCorruptRecord", err)
			}
			if got := rawItem(t, client, table, map[string]types.AttributeValue{"pk": item["pk"]}); !cmp.Equal(flat(item), flat(got)) {
				t.Errorf("the corrupt item was changed: %v", flat(got))
			}
			// An operator can still remove it.
			if err := s.Delete(bg, key); err != nil {
				t.Errorf("Delete = %v", err)
			}
		})
	}
	// A lease that has expired by the claim's condition is taken over even
	// when parts of the item the claim overwrites are unreadable.
	t.Run("expired_lease_unreadable_result", func(t *testing.T) {
		item := map[string]types.AttributeValue{}
		for k, v := range base {
			item[k] = v
		}
		item["pk"] = &types.AttributeValueMemberS{Value: prefix + "expired"}
		item["lease_until"] = &types.AttributeValueMemberN{Value: "1.5"}
		item["result"] = &types.AttributeValueMemberS{Value: "x"}
		if _, err := client.PutItem(bg, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
		_, res := claim(t, s, "expired", fingerprint("a"), time.Minute)
		if res.Status != idemstore.ClaimTakenOver || res.Fence != 2 {
			t.Fatalf("claim = %v fence %d, want taken_over fence 2", res.Status, res.Fence)
		}
		if _, err := s.Get(bg, "expired"); err != nil {
			t.Fatalf("Get after the takeover = %v", err)
		}
	})
}

// dropFirstResponse is an HTTP transport that loses the response of the
// first request of each armed operation after the server has applied it,
// as a connection reset would: the SDK retries, and the retry finds the
// store's own write.
type dropFirstResponse struct {
	next  http.RoundTripper
	armed atomic.Bool
}

func (d *dropFirstResponse) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.next.RoundTrip(r)
	if err == nil && d.armed.CompareAndSwap(true, false) {
		resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return resp, err
}

func TestRetryAfterLostResponse(t *testing.T) {
	_, table := dynamo(t)
	for _, tc := range []struct {
		name string
		opts []func(*dynamodb.Options)
	}{
		{"returns_item_on_failure", nil},
		{"fallback_read", []func(*dynamodb.Options){withoutReturnOnFailure}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drop := &dropFirstResponse{next: http.DefaultTransport}
			var c counter
			client := newClient(endpoint(), append(tc.opts, c.option, func(o *dynamodb.Options) {
				o.HTTPClient = &http.Client{Transport: drop}
				// Retry at once: the test is about what the retry finds.
				o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
					so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
				})
			})...)
			s := newStore(t, client, table)
			owner := token(t)
			req := idemstore.ClaimRequest{Key: "k", Fingerprint: fingerprint("a"), Owner: owner, Lease: time.Minute, TTL: time.Hour}
			drop.armed.Store(true)
			res, err := s.Claim(bg, req)
			if err != nil || res.Status != idemstore.ClaimAcquired || res.Fence != 1 {
				t.Fatalf("Claim with a lost response = %v fence %d, %v; want acquired fence 1", res.Status, res.Fence, err)
			}
			if n := c.take(); n["UpdateItem"] != 2 {
				t.Fatalf("requests %v: the response was not lost and retried", n)
			}
			l := idemstore.Lease{Key: "k", Owner: owner, Fence: 1, Duration: time.Minute, TTL: time.Hour}
			for _, op := range []struct {
				name string
				do   func() error
			}{
				{"Heartbeat", func() error { return s.Heartbeat(bg, l) }},
				{"SaveStep", func() error { return s.SaveStep(bg, l, "charge", []byte("ch_1")) }},
				{"Complete", func() error { return s.Complete(bg, l, idemstore.Result{Data: []byte(`42`)}) }},
			} {
				drop.armed.Store(true)
				if err := op.do(); err != nil {
					t.Fatalf("%s with a lost response = %v, want nil", op.name, err)
				}
				if op.name == "SaveStep" {
					if r, err := s.Get(bg, "k"); err != nil || string(r.Steps["charge"]) != "ch_1" {
						t.Fatalf("Get after the retried SaveStep = %q, %v; want the step", r.Steps, err)
					}
				}
			}
			if r, err := s.Get(bg, "k"); err != nil || r.State != idemstore.StateCompleted || string(r.Result) != "42" {
				t.Fatalf("Get = %v %q, %v", r.State, r.Result, err)
			}
			// Without a retry, the same write again is a conflict.
			if err := s.Complete(bg, l, idemstore.Result{Data: []byte(`42`)}); !errors.Is(err, idem.ErrLeaseLost) {
				t.Fatalf("second Complete = %v, want ErrLeaseLost", err)
			}
			// A retried claim by another owner still sees the completion.
			drop.armed.Store(true)
			if res, err := s.Claim(bg, idemstore.ClaimRequest{Key: "k", Fingerprint: fingerprint("a"), Owner: token(t), Lease: time.Minute, TTL: time.Hour}); err != nil || res.Status != idemstore.ClaimCompleted {
				t.Fatalf("claim by another owner = %v, %v; want completed", res.Status, err)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	client := newClient(endpoint())
	for _, tc := range []struct {
		name  string
		table string
		opts  []dynamostore.Option
	}{
		{"no_table", "", nil},
		{"empty_partition_key", "t", []dynamostore.Option{dynamostore.WithPartitionKey("")}},
		{"sort_key_without_value", "t", []dynamostore.Option{dynamostore.WithSortKey("sk", "")}},
		{"sort_key_is_partition_key", "t", []dynamostore.Option{dynamostore.WithSortKey("pk", "x")}},
		{"key_named_like_a_record_attribute", "t", []dynamostore.Option{dynamostore.WithPartitionKey("state")}},
		{"ttl_is_a_key", "t", []dynamostore.Option{dynamostore.WithTTLAttribute("pk")}},
		{"negative_margin", "t", []dynamostore.Option{dynamostore.WithSkewMargin(-time.Second)}},
		{"bad_poll_range", "t", []dynamostore.Option{dynamostore.WithPollInterval(time.Second, time.Millisecond)}},
		{"zero_cleanup_limit", "t", []dynamostore.Option{dynamostore.WithCleanupLimit(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := dynamostore.New(context.Background(), client, tc.table, tc.opts...); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
	if _, err := dynamostore.New(context.Background(), nil, "t"); err == nil {
		t.Fatal("New accepted a nil client")
	}
}

// A key DynamoDB cannot hold is an invalid key, not a store outage, in
// every operation: DynamoDB's own ValidationException would read as one.
func TestKeyTooLong(t *testing.T) {
	client, table := dynamo(t)
	s := newStore(t, client, table)
	key := string(bytes.Repeat([]byte{'k'}, 2048))
	l := idemstore.Lease{Key: key, Owner: token(t), Fence: 1, Duration: time.Second, TTL: time.Second}
	ops := []struct {
		name string
		do   func() error
	}{
		{"Claim", func() error {
			_, err := s.Claim(bg, idemstore.ClaimRequest{Key: key, Owner: l.Owner, Lease: time.Second, TTL: time.Second})
			return err
		}},
		{"Heartbeat", func() error { return s.Heartbeat(bg, l) }},
		{"Complete", func() error { return s.Complete(bg, l, idemstore.Result{Data: []byte("r")}) }},
		{"Fail", func() error { return s.Fail(bg, l, idemstore.Result{Data: []byte("r")}) }},
		{"Release", func() error { return s.Release(bg, l) }},
		{"Get", func() error { _, err := s.Get(bg, key); return err }},
		{"Delete", func() error { return s.Delete(bg, key) }},
		{"Wait", func() error { return s.Wait(bg, key) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			if err := op.do(); !errors.Is(err, idem.ErrInvalidKey) {
				t.Fatalf("%s with a %d-byte key = %v, want ErrInvalidKey", op.name, len(key), err)
			}
		})
	}
}

// CreateTable makes the key schema the layout names, and is idempotent.
func TestCreateTable(t *testing.T) {
	client, _ := dynamo(t)
	for _, tc := range []struct {
		name string
		opts []dynamostore.Option
		want map[string]types.KeyType
	}{
		{"default", nil, map[string]types.KeyType{"pk": types.KeyTypeHash}},
		{"single_table", []dynamostore.Option{dynamostore.WithPartitionKey("PK"), dynamostore.WithSortKey("SK", "IDEM")},
			map[string]types.KeyType{"PK": types.KeyTypeHash, "SK": types.KeyTypeRange}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := "idemgen_create_" + tc.name + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
			for i := 0; i < 2; i++ {
				if err := dynamostore.CreateTable(bg, client, table, tc.opts...); err != nil && !isTTLUnsupported(err) {
					t.Fatalf("CreateTable #%d: %v", i+1, err)
				}
			}
			made.Store(table, struct{}{}) // dropped by TestMain
			out, err := client.DescribeTable(bg, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]types.KeyType{}
			for _, k := range out.Table.KeySchema {
				got[aws.ToString(k.AttributeName)] = k.KeyType
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("key schema (-want +got):\n%s", diff)
			}
			if out.Table.TableStatus != types.TableStatusActive {
				t.Fatalf("table status %v", out.Table.TableStatus)
			}
		})
	}
}
