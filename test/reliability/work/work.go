// Package work holds the guarded functions the reliability harness drives
// through their generated wrappers (idem_gen.go, written by the real
// generator). Each function performs a side effect that no wrapper can
// fake: it inserts one row per execution into a Postgres ledger, tagged
// with the fence idem.FenceFrom(ctx) reports, and some of them make a
// business write guarded by that fence.
package work

//go:generate go run github.com/idemgen/idemgen/cmd/idemgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Outcome is a guarded function's result. Nonce is fresh per execution,
// so two callers holding equal outcomes got the same execution's result.
type Outcome struct {
	Key   string `json:"key"`
	Fence uint64 `json:"fence"`
	PID   int    `json:"pid"`
	Nonce string `json:"nonce"`
	// BizAccepted says whether the fence-guarded business write (Zombie,
	// Contend) was accepted.
	BizAccepted bool `json:"biz_accepted"`
}

// Hooks let the harness steer a worker: how long the function runs after
// its side effect, and progress markers it prints for the harness to time
// signals by.
type Hooks struct {
	// Hold is how long the function keeps running after its ledger row.
	Hold func(key string) time.Duration
	// Mark reports a phase ("running", "ran") of the call of key.
	Mark func(phase, key string, fence uint64)
	// Exit says whether Exit's call of key ends its goroutine with
	// runtime.Goexit after its ledger row, as t.Fatal does in a test.
	Exit func(key string) bool
}

// Effects is the receiver of the guarded methods.
type Effects struct {
	Ledger *Ledger
	Hooks  Hooks
}

// Storm is the duplicate-storm function: one ledger row per execution.
//
//idem:name=rel.storm lease=10s on_duplicate=wait wait=2m ttl=1h
func (e *Effects) Storm(ctx context.Context, key string) (Outcome, error) {
	return e.run(ctx, "storm", key, false)
}

// Crash runs long enough to be killed while running (Hooks.Hold).
//
//idem:name=rel.crash lease=1s on_duplicate=wait wait=20s ttl=1h
func (e *Effects) Crash(ctx context.Context, key string) (Outcome, error) {
	return e.run(ctx, "crash", key, false)
}

// Zombie is paused (SIGSTOP) while it runs; after it resumes it makes its
// fence-guarded business write without looking at its ctx, as a process
// that does not know it was paused would.
//
//idem:name=rel.zombie lease=1s on_duplicate=wait wait=20s ttl=1h
func (e *Effects) Zombie(ctx context.Context, key string) (Outcome, error) {
	return e.run(ctx, "zombie", key, true)
}

// Contend is called concurrently by many processes under network faults
// and skewed clocks; duplicates of a running call return at once.
//
//idem:name=rel.contend lease=1s on_duplicate=return ttl=1h
func (e *Effects) Contend(ctx context.Context, key string) (Outcome, error) {
	return e.run(ctx, "contend", key, true)
}

// Skew is called concurrently by processes whose clocks are offset; its
// runs can outlast a heartbeat interval, so leases are renewed under skew.
//
//idem:name=rel.skew lease=2s on_duplicate=return ttl=1h
func (e *Effects) Skew(ctx context.Context, key string) (Outcome, error) {
	return e.run(ctx, "skew", key, true)
}

// Reading is Measure's result. Its Value is NaN, which encoding/json
// cannot encode; the generated codec stores floats bit for bit.
type Reading struct {
	Outcome
	Value float64 `json:"value"`
}

// Measure records one execution and returns a Reading holding NaN.
//
//idem:name=rel.measure lease=10s ttl=1h
func (e *Effects) Measure(ctx context.Context, key string) (Reading, error) {
	out, err := e.run(ctx, "measure", key, false)
	return Reading{Outcome: out, Value: math.NaN()}, err
}

// Gauge has a hand-written JSON marshaling pair that refuses NaN, as a
// strict one would: the generated codec stores a type through its own
// pair, so its refusal is the result's.
type Gauge struct{ V float64 }

// MarshalJSON refuses NaN.
func (g Gauge) MarshalJSON() ([]byte, error) {
	if math.IsNaN(g.V) {
		return nil, errors.New("gauge: NaN is not a reading")
	}
	return json.Marshal(g.V)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (g *Gauge) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &g.V) }

// StrictReading is Strict's result.
type StrictReading struct {
	Outcome
	Gauge Gauge `json:"gauge"`
}

// Strict records one execution and returns a result its own marshaler
// refuses: the hostile-input scenario's unencodable result.
//
//idem:name=rel.strict lease=10s ttl=1h
func (e *Effects) Strict(ctx context.Context, key string) (StrictReading, error) {
	out, err := e.run(ctx, "strict", key, false)
	return StrictReading{Outcome: out, Gauge: Gauge{math.NaN()}}, err
}

// Exit records one execution and then, when Hooks.Exit says so, leaves
// through runtime.Goexit instead of returning.
//
//idem:name=rel.exit lease=10s on_duplicate=wait wait=20s ttl=1h
func (e *Effects) Exit(ctx context.Context, key string) (Outcome, error) {
	out, err := e.run(ctx, "exit", key, false)
	if e.Hooks.Exit != nil && e.Hooks.Exit(key) {
		runtime.Goexit()
	}
	return out, err
}

// Ordered records one execution of an event of entity at time at (order=
// entity:at): its claim reads and advances the entity's order record in
// the same script as the call's record, two keys of one Cluster slot. The
// grace accepts any order the harness delivers events in.
//
//idem:name=rel.ordered key=key order=entity:at grace=24h lease=10s on_duplicate=wait wait=2m ttl=1h
func (e *Effects) Ordered(ctx context.Context, key, entity string, at time.Time) (Outcome, error) {
	return e.run(ctx, "ordered", key, false)
}

// StepNames are Steps' recovery points, in the order it runs them.
var StepNames = []string{"charge", "email", "invoice"}

// StepLedgerKey is the ledger key of a step's executions.
func StepLedgerKey(key, step string) string { return key + "#" + step }

// Steps is the recovery-points function: three steps, each inserting its
// own ledger row (under StepLedgerKey) and then running for Hooks.Hold,
// so that a kill lands inside a step or between two. It marks "step:NAME"
// when a step starts and "stepped:NAME" once its result is recorded.
//
//idem:name=rel.steps lease=1s on_duplicate=wait wait=20s ttl=1h
func (e *Effects) Steps(ctx context.Context, key string) (Outcome, error) {
	fence, ok := idem.FenceFrom(ctx)
	if !ok {
		return Outcome{}, fmt.Errorf("work: steps called without a guard (no fence in ctx)")
	}
	out := Outcome{Key: key, Fence: fence, PID: os.Getpid(), Nonce: nonce()}
	for _, step := range StepNames {
		_, err := idem.Step(ctx, step, func(ctx context.Context) (string, error) {
			e.mark("step:"+step, key, fence)
			lk := StepLedgerKey(key, step)
			id, err := e.Ledger.Record(context.WithoutCancel(ctx), "steps", lk, fence, out.PID, out.Nonce)
			if err != nil {
				return "", err
			}
			if e.Hooks.Hold != nil {
				time.Sleep(e.Hooks.Hold(key))
			}
			if err := e.Ledger.Finish(context.WithoutCancel(ctx), id, ctx.Err() == nil, false); err != nil {
				return "", err
			}
			return out.Nonce, nil
		})
		if err != nil {
			return Outcome{}, err
		}
		e.mark("stepped:"+step, key, fence)
	}
	return out, nil
}

func (e *Effects) run(ctx context.Context, scenario, key string, biz bool) (Outcome, error) {
	fence, ok := idem.FenceFrom(ctx)
	if !ok {
		return Outcome{}, fmt.Errorf("work: %s called without a guard (no fence in ctx)", scenario)
	}
	out := Outcome{Key: key, Fence: fence, PID: os.Getpid(), Nonce: nonce()}
	// The ledger write ignores ctx cancellation: an execution that started
	// must be on record whatever happens to its lease afterwards.
	id, err := e.Ledger.Record(context.WithoutCancel(ctx), scenario, key, fence, out.PID, out.Nonce)
	if err != nil {
		return Outcome{}, err
	}
	e.mark("running", key, fence)
	if e.Hooks.Hold != nil {
		// Deliberately not interrupted by ctx: the worst case for
		// exclusivity is a function that does not notice a lost lease.
		time.Sleep(e.Hooks.Hold(key))
	}
	if biz {
		out.BizAccepted, err = e.Ledger.Biz(context.WithoutCancel(ctx), key, fence, out.PID, out.Nonce)
		if err != nil {
			return Outcome{}, err
		}
	}
	if err := e.Ledger.Finish(context.WithoutCancel(ctx), id, ctx.Err() == nil, out.BizAccepted); err != nil {
		return Outcome{}, err
	}
	e.mark("ran", key, fence)
	return out, nil
}

func (e *Effects) mark(phase, key string, fence uint64) {
	if e.Hooks.Mark != nil {
		e.Hooks.Mark(phase, key, fence)
	}
}

func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
