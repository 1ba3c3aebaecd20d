package dynamostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// interposer runs before once, just before the next TransactWriteItems:
// after an ordered claim has read both items and decided, before it
// writes them.
type interposer struct {
	*dynamodb.Client
	before func()
	// resend sends the next transaction twice and answers the second
	// try, as when the first one's response is lost on a server that
	// does not honour ClientRequestToken (dynalite).
	resend bool
}

func (i *interposer) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f := i.before; f != nil {
		i.before = nil
		f()
	}
	if i.resend {
		i.resend = false
		if _, err := i.Client.TransactWriteItems(ctx, in, optFns...); err != nil {
			return nil, err
		}
	}
	return i.Client.TransactWriteItems(ctx, in, optFns...)
}

// An ordered claim's transaction is conditioned on both items as it read
// them: a write to either in between cancels it, and the claim decides
// again on what is there now.
func TestOrderedClaimPinsBothItems(t *testing.T) {
	client, table := dynamo(t)
	if !transactions(t, client, table) {
		t.SkipNow() // transactions fails the test instead under CI=true
	}
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	prefix := uniquePrefix(t)
	api := &interposer{Client: client}
	s := newStore(t, api, table, dynamostore.WithKeyPrefix(prefix))
	other := newStore(t, client, table, dynamostore.WithKeyPrefix(prefix))
	req := func(s *dynamostore.Store, key, f string, at time.Time) (idemstore.ClaimResult, error) {
		return s.Claim(bg, idemstore.ClaimRequest{Key: "e:{x}:" + key, Fingerprint: fingerprint(f), Owner: token(t),
			Lease: time.Minute, TTL: time.Hour, Order: idemstore.OrderClaim{Key: "e:{x}", At: at}})
	}
	must := func(res idemstore.ClaimResult, err error) idemstore.ClaimResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := must(req(s, "a", "a", base)); res.Status != idemstore.ClaimAcquired {
		t.Fatalf("first event = %v", res.Status)
	}

	// The entity moves on between the read and the write: the claim's
	// event is now out of order, and nothing of it is written.
	api.before = func() {
		if res := must(req(other, "late", "late", base.Add(time.Hour))); res.Status != idemstore.ClaimAcquired {
			t.Errorf("racing event = %v", res.Status)
		}
	}
	res := must(req(s, "b", "b", base.Add(30*time.Minute)))
	if res.Status != idemstore.ClaimOutOfOrder || !res.LastAccepted.Equal(base.Add(time.Hour)) {
		t.Fatalf("claim overtaken by a later event = %v (last %v), want out_of_order at %v", res.Status, res.LastAccepted, base.Add(time.Hour))
	}
	if _, err := s.Get(bg, "e:{x}:b"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("the refused event has a record: %v", err)
	}

	// The call's record is claimed in between: the claim finds it
	// running, and the entity does not move to the claim's time.
	api.before = func() {
		if res := must(req(other, "c", "c", base.Add(2*time.Hour))); res.Status != idemstore.ClaimAcquired {
			t.Errorf("racing claim = %v", res.Status)
		}
	}
	if res := must(req(s, "c", "c", base.Add(5*time.Hour))); res.Status != idemstore.ClaimInProgress {
		t.Fatalf("claim of a key claimed in between = %v, want in_progress", res.Status)
	}
	if res := must(req(s, "d", "d", base.Add(3*time.Hour))); res.Status != idemstore.ClaimAcquired {
		t.Fatalf("an event after the racing claim's = %v, want acquired (the lost claim must not have moved the entity)", res.Status)
	}
	// The claim's own transaction applied, its answer lost: the claim
	// finds its own owner in the item and owns the key.
	api.resend = true
	owner := token(t)
	res, err := s.Claim(bg, idemstore.ClaimRequest{Key: "e:{x}:e", Fingerprint: fingerprint("e"), Owner: owner,
		Lease: time.Minute, TTL: time.Hour, Order: idemstore.OrderClaim{Key: "e:{x}", At: base.Add(4 * time.Hour)}})
	if err != nil || res.Status != idemstore.ClaimAcquired || res.Fence != 1 {
		t.Fatalf("claim whose transaction's answer was lost = %v fence %d, %v; want acquired fence 1", res.Status, res.Fence, err)
	}
	if r, err := s.Get(bg, "e:{x}:e"); err != nil || r.Owner != owner {
		t.Fatalf("Get = %v, %v; want the claim's owner", r.Owner, err)
	}
	// The entity's order record is no record: List skips it.
	var keys []string
	if err := s.List(bg, "", func(r idemstore.Record) error { keys = append(keys, r.Key); return nil }); err != nil || len(keys) != 5 {
		t.Fatalf("List = %v, %v; want the 5 events' records and no order record", keys, err)
	}
}
