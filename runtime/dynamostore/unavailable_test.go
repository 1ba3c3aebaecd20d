package dynamostore_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

func refusedEndpoint(t *testing.T) (endpoint, addr string) {
	t.Helper()
	addr = testenv.RefusedAddr(t)
	return "http://" + addr, addr
}

// TestNewChecksReachability: New against a refused port fails at once,
// well inside a short ctx, with idem.ErrStoreUnavailable and the cause
// (before, New sent nothing and the first call failed after the SDK's
// retries); against a missing table it fails with the server's answer.
func TestNewChecksReachability(t *testing.T) {
	ep, addr := refusedEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	s, err := dynamostore.New(ctx, newClient(ep), "idem")
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("New took %v to fail", took)
	}
	if s != nil || !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), addr) {
		t.Fatalf("New = %v, %v; want idem.ErrStoreUnavailable, connection refused and the address", s, err)
	}
	if p := testenv.RepeatedPhrase(err.Error(), 3); p != "" {
		t.Errorf("New = %q says %q twice", err, p)
	}

	client, _ := dynamo(t)
	_, err = dynamostore.New(context.Background(), client, "idemgen_no_such_table")
	var rnf *types.ResourceNotFoundException
	if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.As(err, &rnf) || !strings.Contains(err.Error(), "idemgen_no_such_table") {
		t.Errorf("New on a missing table = %v; want idem.ErrStoreUnavailable around ResourceNotFoundException, naming the table", err)
	}
}

// TestUnavailableErrorsSayItOnce: every operation of a store whose
// endpoint refuses connections, and a Guard's call over it, fails with an
// error wrapping idem.ErrStoreUnavailable whose text repeats no phrase.
func TestUnavailableErrorsSayItOnce(t *testing.T) {
	client, table := dynamo(t)
	ep, _ := refusedEndpoint(t)
	// A store built while the endpoint answered, then pointed at one that
	// refuses: what an outage after start-up looks like.
	dead := newClient(ep, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	api := &switchable{live: client, dead: dead}
	s, err := dynamostore.New(context.Background(), api, table)
	if err != nil {
		t.Fatal(err)
	}
	api.down.Store(true)
	idemtest.Unavailable(t, s, false)
}

// switchable sends to live until down, then to dead.
type switchable struct {
	live, dead dynamostore.API
	down       atomic.Bool
}

func (s *switchable) api() dynamostore.API {
	if s.down.Load() {
		return s.dead
	}
	return s.live
}

func (s *switchable) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return s.api().GetItem(ctx, in, optFns...)
}

func (s *switchable) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return s.api().UpdateItem(ctx, in, optFns...)
}

func (s *switchable) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return s.api().DeleteItem(ctx, in, optFns...)
}

func (s *switchable) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return s.api().(dynamostore.ScanAPI).Scan(ctx, in, optFns...)
}

func (s *switchable) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return s.api().(dynamostore.TransactAPI).TransactWriteItems(ctx, in, optFns...)
}
