package capacity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/test/internal/emulator"
)

// unitRow is what DynamoDB bills one kind of call: the requests the store
// sent, and the capacity units the server reported for them.
type unitRow struct {
	What     string
	Requests string  // "UpdateItem ×2", in the order sent
	Read     float64 // read capacity units per call
	Write    float64 // write capacity units per call
	Failed   int     // conditional writes that failed (billed, unreported)
}

// meter asks every item request for its consumed capacity
// (ReturnConsumedCapacity TOTAL) and adds up what the responses report.
type meter struct {
	mu          sync.Mutex
	calls       []string
	read, write float64
	failed      int
}

func (m *meter) take() (calls []string, read, write float64, failed int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	calls, read, write, failed = m.calls, m.read, m.write, m.failed
	m.calls, m.read, m.write, m.failed = nil, 0, 0, 0
	return calls, read, write, failed
}

// middleware is the meter as a step of the client's stack, so the store's
// own requests are the ones measured.
func (m *meter) middleware(st *middleware.Stack) error {
	return st.Initialize.Add(middleware.InitializeMiddlewareFunc("idemgenUnits", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		total := types.ReturnConsumedCapacityTotal
		switch p := in.Parameters.(type) {
		case *dynamodb.GetItemInput:
			p.ReturnConsumedCapacity = total
		case *dynamodb.UpdateItemInput:
			p.ReturnConsumedCapacity = total
		case *dynamodb.PutItemInput:
			p.ReturnConsumedCapacity = total
		case *dynamodb.DeleteItemInput:
			p.ReturnConsumedCapacity = total
		}
		out, md, err := next.HandleInitialize(ctx, in)
		op := middleware.GetOperationName(ctx)
		var c *types.ConsumedCapacity
		switch r := out.Result.(type) {
		case *dynamodb.GetItemOutput:
			c = r.ConsumedCapacity
		case *dynamodb.UpdateItemOutput:
			c = r.ConsumedCapacity
		case *dynamodb.PutItemOutput:
			c = r.ConsumedCapacity
		case *dynamodb.DeleteItemOutput:
			c = r.ConsumedCapacity
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.calls = append(m.calls, op)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			m.failed++
		}
		if c != nil {
			m.read += deref(c.ReadCapacityUnits)
			m.write += deref(c.WriteCapacityUnits)
			if c.ReadCapacityUnits == nil && c.WriteCapacityUnits == nil && c.CapacityUnits != nil {
				if op == "GetItem" {
					m.read += *c.CapacityUnits
				} else {
					m.write += *c.CapacityUnits
				}
			}
		}
		return out, md, err
	}), middleware.After)
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// TestDynamoUnits measures the capacity units a first execution and a
// replay consume on DynamoDB, as the server reports them
// (ReturnConsumedCapacity), through a Guard over dynamostore: what a
// deployment is billed, where the emulator's throughput is not.
func TestDynamoUnits(t *testing.T) {
	if os.Getenv(workerEnv) != "" {
		t.Skip("worker process")
	}
	ctx := context.Background()
	ep := emulator.DynamoEndpoint()
	plain := emulator.Dynamo(ep, 0, 0)
	if _, err := plain.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		missing(t, "a DynamoDB-compatible server at "+ep, err, dynamoHowTo)
	}
	m := &meter{}
	client := dynamodb.New(plain.Options(), func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, m.middleware) })
	table := "idemunits_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := dynamostore.CreateTable(ctx, client, table); err != nil && !errors.Is(err, dynamostore.ErrTTLNotEnabled) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = plain.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: &table}) })
	// Two processes' stores: the one that executed the keys, and one that
	// meets them for the first time.
	var guards [2]*idem.Guard
	for i := range guards {
		st, err := dynamostore.New(ctx, client, table)
		if err != nil {
			t.Fatal(err)
		}
		guards[i] = idem.NewGuard(st)
	}
	const n = 20
	key := func(i int) string { return "units-" + strconv.Itoa(i) }
	measure := func(what string, g *idem.Guard) unitRow {
		m.take()
		for i := range n {
			if err := guarded(ctx, g, capSpec, key(i)); err != nil {
				t.Fatalf("%s of %s: %v", what, key(i), err)
			}
		}
		calls, read, write, failed := m.take()
		row := unitRow{What: what, Requests: requests(calls, n), Read: read / n, Write: write / n, Failed: failed / n}
		t.Logf("DynamoDB %s: %s, %.2f RCU, %.2f WCU, %d failed conditional writes per call", what, row.Requests, row.Read, row.Write, row.Failed)
		return row
	}
	rows := []unitRow{
		measure("first execution", guards[0]),
		measure("replay (a key this process executed or has replayed)", guards[0]),
		measure("replay (a key new to this process)", guards[1]),
		measure("replay (that key again)", guards[1]),
	}
	for _, r := range rows[1:] {
		if r.What != "replay (a key new to this process)" && (r.Write != 0 || r.Failed != 0) {
			t.Errorf("%s consumed %.2f WCU, %d failed conditional writes: a replay the hint knows must read only", r.What, r.Write, r.Failed)
		}
	}
	report.Lock()
	report.dynamoUnits = rows
	report.Unlock()
}

// requests names the requests of n calls, per call: "GetItem", or
// "UpdateItem ×2".
func requests(calls []string, n int) string {
	count := map[string]int{}
	var order []string
	for _, c := range calls {
		if count[c] == 0 {
			order = append(order, c)
		}
		count[c]++
	}
	var parts []string
	for _, c := range order {
		per := float64(count[c]) / float64(n)
		if per == 1 {
			parts = append(parts, c)
		} else {
			parts = append(parts, fmt.Sprintf("%s ×%g", c, per))
		}
	}
	return strings.Join(parts, " + ")
}

// writeUnits writes the DynamoDB capacity units table.
func writeUnits(b *strings.Builder, rows []unitRow) {
	if len(rows) == 0 {
		return
	}
	b.WriteString("## DynamoDB capacity units per call\n\n")
	b.WriteString("What DynamoDB bills, as the server reports it: every request the store sends through a Guard asks for `ReturnConsumedCapacity: TOTAL` (a client middleware, `TestDynamoUnits`), averaged over 20 calls of a 32-byte result. A conditional write that fails is billed at least one write unit by DynamoDB but its error reports none: those are counted in their own column. dynalite computes units by DynamoDB's rules (4 KB a read unit, strongly consistent; 1 KB a write unit).\n\n")
	b.WriteString("| call | requests per call | read units | write units | failed conditional writes |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %.2f | %.2f | %d |\n", r.What, r.Requests, r.Read, r.Write, r.Failed)
	}
	b.WriteString("\n")
}
