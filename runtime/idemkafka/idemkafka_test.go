package idemkafka_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemkafka"
	"github.com/idemgen/idemgen/runtime/idemqueue"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func TestIDFuncs(t *testing.T) {
	h := func(kv ...string) []kgo.RecordHeader {
		var hs []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			hs = append(hs, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return hs
	}
	def := idemkafka.HeaderID(idemkafka.DefaultIDHeaders...)
	tests := []struct {
		name string
		f    idemkafka.IDFunc
		r    *kgo.Record
		want string
	}{
		{"idempotency-key", def, &kgo.Record{Headers: h("idempotency-key", "a", "message-id", "b")}, "a"},
		{"message-id when no idempotency-key", def, &kgo.Record{Headers: h("other", "x", "message-id", "b")}, "b"},
		{"empty header skipped", def, &kgo.Record{Headers: h("idempotency-key", "", "message-id", "b")}, "b"},
		{"none", def, &kgo.Record{Headers: h("Idempotency-Key", "a")}, ""},
		{"custom header", idemkafka.HeaderID("event-id"), &kgo.Record{Headers: h("event-id", "e1")}, "e1"},
		{"position", idemkafka.PositionID, &kgo.Record{Topic: "t", Partition: 3, Offset: 42}, "t/3/42"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f(tc.r); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// rec is a record to produce: its ID header (none when noID), value, and
// how many times its handler fails before it succeeds.
type rec struct {
	id    string
	noID  bool
	value string
	fails int
}

// TestCommitRules consumes a one-partition topic and checks, for each
// mix of records, the order the handler ran in, what was dead-lettered,
// that the committed offset never passed a record that was not done, and
// that it reaches the end.
// TestNewNeedsWhereToConsumeFrom: New refuses to build without brokers,
// a group and topics (no broker is contacted).
func TestNewNeedsWhereToConsumeFrom(t *testing.T) {
	q := idemqueue.New(idem.NewGuard(memstore.New()))
	h := func(context.Context, *kgo.Record) error { return nil }
	all := []idemkafka.Option{idemkafka.WithBrokers("127.0.0.1:1"), idemkafka.WithGroup("g"), idemkafka.WithTopics("t")}
	tests := []struct {
		name    string
		opts    []idemkafka.Option
		wantErr bool
	}{
		{"all three", all, false},
		{"no brokers", all[1:], true},
		{"no group", []idemkafka.Option{all[0], all[2]}, true},
		{"no topics", all[:2], true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := idemkafka.New(q, h, tc.opts...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("New: %v, want error: %v", err, tc.wantErr)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

func TestCommitRules(t *testing.T) {
	needKafka(t)
	tests := []struct {
		name       string
		recs       []rec
		noDLQ      bool
		wantRuns   []string // handler runs, in order ("id:attempt" for failures)
		wantDead   []string // values on the dead-letter topic
		wantStatus []string // outcome per attempt: id status
	}{
		{
			name:       "duplicates run once",
			recs:       []rec{{id: "a", value: "1"}, {id: "b", value: "2"}, {id: "a", value: "1"}},
			wantRuns:   []string{"a", "b"},
			wantStatus: []string{"a ran", "b ran", "a duplicate"},
		},
		{
			name:       "a failing record blocks its partition until it succeeds",
			recs:       []rec{{id: "a", value: "1"}, {id: "b", value: "2", fails: 2}, {id: "c", value: "3"}},
			wantRuns:   []string{"a", "b:fail", "b:fail", "b", "c"},
			wantStatus: []string{"a ran", "b failed", "b failed", "b ran", "c ran"},
		},
		{
			name:       "no ID and payload mismatch are dead-lettered, then committed",
			recs:       []rec{{id: "a", value: "1"}, {noID: true, value: "x"}, {id: "a", value: "other"}, {id: "c", value: "3"}},
			wantRuns:   []string{"a", "c"},
			wantDead:   []string{"x", "other"},
			wantStatus: []string{"a ran", " failed dead", "a failed dead", "c ran"},
		},
		{
			name:       "without a dead-letter hook a permanent failure is skipped",
			recs:       []rec{{noID: true, value: "x"}, {id: "b", value: "2"}},
			noDLQ:      true,
			wantRuns:   []string{"b"},
			wantStatus: []string{" failed dead", "b ran"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			run := testenv.RandName()
			topic, dlq, group := "idemkafka-rules-"+run, "idemkafka-rules-"+run+".dlq", "rules-"+run
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers()...))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			for _, tp := range []string{topic, dlq} {
				if _, err := adm.CreateTopic(ctx, 1, 1, nil, tp); err != nil {
					t.Fatal(err)
				}
			}
			var rs []*kgo.Record
			for _, r := range tc.recs {
				kr := &kgo.Record{Topic: topic, Value: []byte(r.value)}
				if !r.noID {
					kr.Headers = []kgo.RecordHeader{{Key: "idempotency-key", Value: []byte(r.id)}}
				}
				rs = append(rs, kr)
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			var runs, statuses []string
			fails := map[int64]int{}
			// highestDone is the largest offset whose record was done
			// when a commit was seen; a commit beyond done+1 is a bug.
			doneUpTo := int64(0)
			h := func(ctx context.Context, r *kgo.Record) error {
				mu.Lock()
				defer mu.Unlock()
				id := string(r.Headers[0].Value)
				if fails[r.Offset] < tc.recs[r.Offset].fails {
					fails[r.Offset]++
					runs = append(runs, id+":fail")
					return errors.New("not yet")
				}
				runs = append(runs, id)
				return nil
			}
			opts := []idemkafka.Option{
				idemkafka.WithRetryBackoff(50*time.Millisecond, 200*time.Millisecond),
				idemkafka.WithCommitInterval(20 * time.Millisecond),
				idemkafka.WithOutcome(func(o idemkafka.Outcome) {
					mu.Lock()
					defer mu.Unlock()
					s := o.ID + " " + o.Status.String()
					if o.Dead {
						s += " dead"
					}
					statuses = append(statuses, s)
					if o.Status.Ack() || o.Dead {
						doneUpTo = o.Record.Offset + 1
					}
				}),
			}
			if !tc.noDLQ {
				opts = append(opts, idemkafka.WithDeadLetterTopic(dlq))
			}
			q := idemqueue.New(idem.NewGuard(memstore.New()), idemcall.WithName("rules"))
			c, err := idemkafka.New(q, h, append([]idemkafka.Option{idemkafka.WithBrokers(brokers()...), idemkafka.WithGroup(group), idemkafka.WithTopics(topic),
				idemkafka.WithClientOptions(kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))}, opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() { errc <- c.Run(runCtx) }()
			want := int64(len(tc.recs))
			for {
				off, err := adm.FetchOffsets(ctx, group)
				committed := int64(-1)
				if err == nil {
					if o, ok := off.Lookup(topic, 0); ok {
						committed = o.At
					}
				}
				mu.Lock()
				done := doneUpTo
				mu.Unlock()
				if committed > done {
					t.Errorf("committed offset %d is beyond the records done (%d)", committed, done)
				}
				if committed == want {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("committed offset %d, want %d", committed, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
			stop()
			if err := <-errc; err != nil {
				t.Fatalf("Run: %v", err)
			}

			var dead []string
			if len(tc.wantDead) > 0 {
				rd, err := kgo.NewClient(kgo.SeedBrokers(brokers()...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				for len(dead) < len(tc.wantDead) && ctx.Err() == nil {
					rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
						dead = append(dead, string(r.Value))
						hs := map[string]string{}
						for _, h := range r.Headers {
							hs[h.Key] = string(h.Value)
						}
						if hs["idemkafka-topic"] != topic || hs["idemkafka-error"] == "" || hs["idemkafka-offset"] == "" {
							t.Errorf("dead letter %q lacks its origin headers: %v", r.Value, hs)
						}
					})
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.wantRuns, runs); diff != "" {
				t.Errorf("handler runs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStatus, statuses); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDead, dead); diff != "" {
				t.Errorf("dead letters (-want +got):\n%s", diff)
			}
		})
	}
}
