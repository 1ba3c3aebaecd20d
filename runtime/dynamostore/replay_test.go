package dynamostore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// metered passes calls to a client, asking each for its consumed
// capacity, and records them: operation and capacity units.
type metered struct {
	*dynamodb.Client
	mu    sync.Mutex
	calls []string
	read  float64
	write float64
}

func (m *metered) note(op string, c *types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, op)
	if c != nil && c.CapacityUnits != nil {
		if op == "GetItem" {
			m.read += *c.CapacityUnits
		} else {
			m.write += *c.CapacityUnits
		}
	}
}

func (m *metered) reset() ([]string, float64, float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, r, w := m.calls, m.read, m.write
	m.calls, m.read, m.write = nil, 0, 0
	return c, r, w
}

func (m *metered) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.Client.GetItem(ctx, in, o...)
	if err == nil {
		m.note("GetItem", out.ConsumedCapacity)
	}
	return out, err
}

func (m *metered) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.Client.UpdateItem(ctx, in, o...)
	var c *types.ConsumedCapacity
	if out != nil {
		c = out.ConsumedCapacity
	}
	m.note("UpdateItem", c)
	return out, err
}

func (m *metered) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	m.note("DeleteItem", nil)
	return m.Client.DeleteItem(ctx, in, o...)
}

// TestReplayReadsOnly: a claim of a key whose live record is completed or
// failed with the claim's fingerprint is one consistent GetItem (read
// units only); every other claim still takes the conditional UpdateItem.
func TestReplayReadsOnly(t *testing.T) {
	client, table := dynamo(t)
	m := &metered{Client: client}
	s := newStore(t, m, table)
	owner := token(t)
	for _, key := range []string{"completed", "failed", "released", "running"} {
		l, res := claim(t, s, key, fingerprint("a"), time.Minute)
		if res.Status != idemstore.ClaimAcquired {
			t.Fatalf("claim %s: %v", key, res.Status)
		}
		var err error
		switch key {
		case "completed":
			err = s.Complete(bg, l, idemstore.Result{Data: []byte("r")})
		case "failed":
			err = s.Fail(bg, l, idemstore.Result{Data: []byte("e")})
		case "released":
			err = s.Release(bg, l)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		key, fp   string
		want      idemstore.ClaimStatus
		wantCalls []string
	}{
		{"completed", "a", idemstore.ClaimCompleted, []string{"GetItem"}},
		{"failed", "a", idemstore.ClaimFailed, []string{"GetItem"}},
		{"completed", "b", idemstore.ClaimMismatch, []string{"GetItem", "UpdateItem"}},
		// A release takes the key out of the hint, and a claim this
		// store made is not a sign of a duplicate: no read first.
		{"released", "a", idemstore.ClaimAcquired, []string{"UpdateItem"}},
		{"running", "a", idemstore.ClaimInProgress, []string{"UpdateItem"}},
	} {
		m.reset()
		res, err := s.Claim(bg, idemstore.ClaimRequest{Key: tc.key, Owner: owner, Fingerprint: fingerprint(tc.fp), Lease: time.Minute, TTL: time.Hour})
		calls, read, write := m.reset()
		if err != nil || res.Status != tc.want {
			t.Errorf("%s/%s: %v %v, want %v", tc.key, tc.fp, res.Status, err, tc.want)
		}
		if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
			t.Errorf("%s/%s: calls (-want +got):\n%s", tc.key, tc.fp, diff)
		}
		if !slices.Contains(tc.wantCalls, "UpdateItem") && write != 0 {
			t.Errorf("%s/%s: %v write units, want none", tc.key, tc.fp, write)
		}
		t.Logf("%s/%s: %v, read units %v, write units %v", tc.key, tc.fp, calls, read, write)
	}
}
