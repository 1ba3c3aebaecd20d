package dynamostore_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

func saveStep(t *testing.T, s *dynamostore.Store, l idemstore.Lease, name, data string) {
	t.Helper()
	if err := s.SaveStep(bg, l, name, []byte(data)); err != nil {
		t.Fatalf("SaveStep(%q): %v", name, err)
	}
}

func stepStrings(steps map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range steps {
		out[k] = string(v)
	}
	return out
}

// A step is one UpdateItem; a takeover that resumes a call is still one
// (the old item, steps included, comes back with the claim's answer),
// and so is a release's next claim. A claim over an item past its
// retention that still holds an abandoned call's steps costs one more
// UpdateItem, and the new call sees none of them.
func TestStepRoundTrips(t *testing.T) {
	_, table := dynamo(t)
	for _, tc := range []struct {
		name string
		opts []func(*dynamodb.Options)
		// conditionRead: the server returns no item with a failed
		// condition, so the store reads it.
		conditionRead int
	}{
		{"returns_item_on_failure", nil, 0},
		{"fallback_read", []func(*dynamodb.Options){withoutReturnOnFailure}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c counter
			client := newClient(endpoint(), append(tc.opts, c.option)...)
			clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
			s := newStore(t, client, table, dynamostore.WithClock(clock.Now))
			const lease = 10 * time.Second
			l, res := claim(t, s, "k", fingerprint("a"), lease)
			if res.Status != idemstore.ClaimAcquired || len(res.Steps) != 0 {
				t.Fatalf("first claim = %v with steps %q", res.Status, res.Steps)
			}
			c.take()
			saveStep(t, s, l, "charge", "ch_1")
			saveStep(t, s, l, "email", "")
			if diff := cmp.Diff(map[string]int{"UpdateItem": 2}, c.take()); diff != "" {
				t.Errorf("two steps' requests (-want +got):\n%s", diff)
			}

			clock.Advance(lease + 2*time.Second) // past the lease and the skew margin
			l2, res := claim(t, s, "k", fingerprint("a"), lease)
			want := map[string]string{"charge": "ch_1", "email": ""}
			if res.Status != idemstore.ClaimTakenOver || res.Fence != 2 || !cmp.Equal(want, stepStrings(res.Steps)) {
				t.Fatalf("takeover = %v fence %d steps %q, want taken_over fence 2 with %q", res.Status, res.Fence, res.Steps, want)
			}
			if diff := cmp.Diff(map[string]int{"UpdateItem": 1}, c.take()); diff != "" {
				t.Errorf("takeover's requests (-want +got):\n%s", diff)
			}

			if err := s.Release(bg, l2); err != nil {
				t.Fatal(err)
			}
			c.take()
			l3, res := claim(t, s, "k", fingerprint("a"), lease)
			if res.Status != idemstore.ClaimAcquired || res.Fence != 3 || !cmp.Equal(want, stepStrings(res.Steps)) {
				t.Fatalf("claim after a release = %v fence %d steps %q, want acquired fence 3 with %q", res.Status, res.Fence, res.Steps, want)
			}
			if diff := cmp.Diff(map[string]int{"UpdateItem": 1}, c.take()); diff != "" {
				t.Errorf("claim after a release: requests (-want +got):\n%s", diff)
			}

			// The owner dies; the item outlives its retention (DynamoDB's
			// time to live deletes it days later, if ever).
			_ = l3
			clock.Advance(lease + time.Hour + 2*time.Second)
			_, res = claim(t, s, "k", fingerprint("b"), lease)
			if res.Status != idemstore.ClaimAcquired || res.Fence != 4 || len(res.Steps) != 0 {
				t.Fatalf("claim past the retention = %v fence %d steps %q, want acquired fence 4 without steps", res.Status, res.Fence, res.Steps)
			}
			wantN := map[string]int{"UpdateItem": 2}
			if tc.conditionRead > 0 {
				wantN["GetItem"] = tc.conditionRead
			}
			if diff := cmp.Diff(wantN, c.take()); diff != "" {
				t.Errorf("claim past the retention over steps: requests (-want +got):\n%s", diff)
			}
			if r, err := s.Get(bg, "k"); err != nil || len(r.Steps) != 0 {
				t.Fatalf("Get after the new claim = %q, %v; want no steps", r.Steps, err)
			}
		})
	}
}

// The steps map on the wire: names as they are, but for the few that
// need escaping; a release keeps it, a completion removes it.
func TestStepItemLayout(t *testing.T) {
	client, table := dynamo(t)
	prefix := uniquePrefix(t)
	s := newStore(t, client, table, dynamostore.WithKeyPrefix(prefix))
	pk := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: prefix + "k"}}
	stepsOf := func() map[string]string {
		t.Helper()
		v, ok := rawItem(t, client, table, pk)["steps"]
		if !ok {
			return nil
		}
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			t.Fatalf("steps is %T, want a map", v)
		}
		return flat(m.Value)
	}
	l, _ := claim(t, s, "k", fingerprint("a"), time.Minute)
	if got := stepsOf(); got == nil || len(got) != 0 {
		t.Fatalf("a claimed item's steps = %v, want an empty map", got)
	}
	names := map[string]string{"charge": "ch_1", "": "empty name", "~x": "tilde", "__name__": "reserved in Firestore", "a.b": "dot", "e": ""}
	for name, data := range names {
		saveStep(t, s, l, name, data)
	}
	want := map[string]string{
		"charge":    "B " + hexOf("ch_1"),
		"~":         "B " + hexOf("empty name"),
		"~~x":       "B " + hexOf("tilde"),
		"~__name__": "B " + hexOf("reserved in Firestore"),
		"a.b":       "B " + hexOf("dot"),
		"e":         "B ",
	}
	if diff := cmp.Diff(want, stepsOf()); diff != "" {
		t.Fatalf("steps map (-want +got):\n%s", diff)
	}
	r, err := s.Get(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names, stepStrings(r.Steps)); diff != "" {
		t.Fatalf("Get's steps (-want +got):\n%s", diff)
	}
	if err := s.Release(bg, l); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, stepsOf()); diff != "" {
		t.Fatalf("steps map after a release (-want +got):\n%s", diff)
	}
	l, res := claim(t, s, "k", fingerprint("a"), time.Minute)
	if diff := cmp.Diff(names, stepStrings(res.Steps)); diff != "" {
		t.Fatalf("claim's steps after a release (-want +got):\n%s", diff)
	}
	if err := s.Complete(bg, l, idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if got := stepsOf(); got != nil {
		t.Fatalf("a completed item's steps = %v, want no attribute (the result replays)", got)
	}
	if r, err := s.Get(bg, "k"); err != nil || r.Steps != nil {
		t.Fatalf("Get of the completed record: steps %q, %v", r.Steps, err)
	}
}

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }

// Steps count towards the 400 KB item: one that cannot fit is refused
// before any request, one that would take the item over the limit by
// DynamoDB, both as ErrItemTooLarge, and the record keeps what it had. A
// completion drops the steps, so the largest result still fits after them.
func TestStepTooLarge(t *testing.T) {
	_, table := dynamo(t)
	var c counter
	client := newClient(endpoint(), c.option)
	s := newStore(t, client, table)
	key := "idem:pkg.Func:v0:" + "0123456789abcdef"
	l, _ := claim(t, s, key, fingerprint("a"), time.Minute)
	c.take()
	if err := s.SaveStep(bg, l, "huge", make([]byte, dynamostore.MaxItemSize)); !errors.Is(err, dynamostore.ErrItemTooLarge) || !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("a step over 400 KB = %v, want ErrItemTooLarge", err)
	}
	if n := c.take(); len(n) != 0 {
		t.Fatalf("the oversized step sent requests: %v", n)
	}
	half := make([]byte, dynamostore.MaxItemSize/2)
	_, _ = rand.Read(half)
	saveStep(t, s, l, "first", string(half))
	err := s.SaveStep(bg, l, "second", half)
	if !errors.Is(err, dynamostore.ErrItemTooLarge) || !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("a step taking the item over 400 KB = %v, want ErrItemTooLarge", err)
	}
	t.Logf("error text: %v", err)
	r, err := s.Get(bg, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 1 || !bytes.Equal(r.Steps["first"], half) {
		t.Fatalf("steps after the refused one: %d, want the first only", len(r.Steps))
	}
	// The lease still holds: a stale owner is told so first.
	if err := s.SaveStep(bg, idemstore.Lease{Key: key, Owner: token(t), Fence: l.Fence}, "second", half); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("an oversized step by another owner = %v, want ErrLeaseLost", err)
	}
	fits := make([]byte, s.MaxResultSize(key))
	if err := s.Complete(bg, l, idemstore.Result{Data: fits}); err != nil {
		t.Fatalf("Complete with MaxResultSize bytes after steps: %v", err)
	}
}
