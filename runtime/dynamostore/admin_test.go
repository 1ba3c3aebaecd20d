package dynamostore_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// Cleanup deletes at most WithCleanupLimit items per call, only items
// past their retention (an abandoned in-progress one only past its
// retention plus the skew margin), and never an item that is not a valid
// record; List reports such an item as corrupt after listing the rest.
func TestCleanupBoundAndList(t *testing.T) {
	client, table := dynamo(t)
	clock := idemtest.NewClock(time.Now())
	prefix := uniquePrefix(t)
	s := newStore(t, client, table, dynamostore.WithClock(clock.Now), dynamostore.WithKeyPrefix(prefix),
		dynamostore.WithCleanupLimit(2))
	for i := range 5 {
		l, _ := claim(t, s, fmt.Sprintf("done:%d", i), fingerprint("a"), time.Minute)
		if err := s.Complete(bg, l, idemstore.Result{Data: []byte("1")}); err != nil {
			t.Fatal(err)
		}
	}
	claim(t, s, "running", fingerprint("a"), time.Minute) // retained for lease + TTL (1h)
	// A foreign item under the prefix.
	if _, err := client.PutItem(bg, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		"pk":         &types.AttributeValueMemberS{Value: prefix + "foreign"},
		"expires_at": &types.AttributeValueMemberN{Value: "1"},
	}}); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		t.Helper()
		var keys []string
		err := s.List(bg, "", func(r idemstore.Record) error { keys = append(keys, r.Key); return nil })
		if !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("List over a foreign item = %v, want ErrCorruptRecord", err)
		}
		sort.Strings(keys)
		return keys
	}
	if got := list(); len(got) != 6 {
		t.Fatalf("List = %v, want the 6 records", got)
	}
	clock.Advance(time.Hour + time.Second) // the completed ones are past their retention, the running one is not
	for _, want := range []int{2, 2, 1, 0} {
		n, err := s.Cleanup(bg)
		if err != nil || n != want {
			t.Fatalf("Cleanup = %d, %v; want %d", n, err, want)
		}
	}
	if got := list(); len(got) != 1 || got[0] != "running" {
		t.Fatalf("List after Cleanup = %v, want [running]", got)
	}
	clock.Advance(time.Minute - time.Second) // exactly lease + TTL, but not the skew margin
	if n, err := s.Cleanup(bg); err != nil || n != 0 {
		t.Fatalf("Cleanup inside the skew margin = %d, %v; want 0", n, err)
	}
	clock.Advance(dynamostore.DefaultSkewMargin)
	if n, err := s.Cleanup(bg); err != nil || n != 1 {
		t.Fatalf("Cleanup past the margin = %d, %v; want 1", n, err)
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("List after Cleanup = %v, want none", got)
	}
}
