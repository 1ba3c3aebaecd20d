package idem_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

var stepSpec = &idem.Spec{Name: "steps.Order", Lease: 30 * time.Second, TTL: time.Hour}

func doOrder(ctx context.Context, g *idem.Guard, id string, fn func(ctx context.Context) (string, error)) (string, error) {
	c := g.Begin(stepSpec, id)
	return idem.Do(ctx, c, fn)
}

// noSteps hides the memory store's SaveStep.
type noSteps struct{ idemstore.Store }

type stepRecorder struct {
	mu  sync.Mutex
	evs []string
}

func (r *stepRecorder) Observe(e idem.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Step != "" {
		r.evs = append(r.evs, e.Outcome.String()+":"+e.Step)
	}
}

func TestStepMisuse(t *testing.T) {
	ctx := context.Background()
	ran := 0
	step := func(ctx context.Context) (int, error) { ran++; return 1, nil }
	tests := []struct {
		name  string
		store idemstore.Store
		fn    func(ctx context.Context) (string, error)
	}{
		{"outside a guarded call", nil, func(context.Context) (string, error) {
			_, err := idem.Step(context.Background(), "charge", step)
			return "", err
		}},
		{"name used twice", memstore.New(), func(ctx context.Context) (string, error) {
			if _, err := idem.Step(ctx, "charge", step); err != nil {
				return "", err
			}
			_, err := idem.Step(ctx, "charge", step)
			return "", err
		}},
		{"store keeps no steps", noSteps{memstore.New()}, func(ctx context.Context) (string, error) {
			_, err := idem.Step(ctx, "charge", step)
			return "", err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran = 0
			var err error
			if tt.store == nil {
				_, err = tt.fn(ctx)
			} else {
				_, err = doOrder(ctx, idem.NewGuard(tt.store), "o1", tt.fn)
			}
			if !errors.Is(err, idem.ErrStep) {
				t.Fatalf("err = %v, want ErrStep", err)
			}
			if want := map[string]int{"name used twice": 1}[tt.name]; ran != want {
				t.Errorf("the step's function ran %d times, want %d", ran, want)
			}
		})
	}
}

// A step's function error is returned as it is and not recorded: the
// step runs again on the retry.
func TestStepErrorNotRecorded(t *testing.T) {
	ctx := context.Background()
	g := idem.NewGuard(memstore.New())
	boom := errors.New("card declined")
	runs := 0
	fn := func(ctx context.Context) (string, error) {
		return idem.Step(ctx, "charge", func(ctx context.Context) (string, error) {
			runs++
			if runs == 1 {
				return "", boom
			}
			return "ch_2", nil
		})
	}
	if _, err := doOrder(ctx, g, "o1", fn); !errors.Is(err, boom) {
		t.Fatalf("first call: %v, want the step's error", err)
	}
	v, err := doOrder(ctx, g, "o1", fn)
	if err != nil || v != "ch_2" || runs != 2 {
		t.Fatalf("retry = %q, %v after %d runs; want ch_2 after 2", v, err, runs)
	}
}

// An owner whose lease was taken over cannot record a step: it learns
// ErrLeaseLost and its ctx is canceled with that cause; its successor
// replays the steps recorded before the takeover and runs the rest.
func TestStepStaleOwner(t *testing.T) {
	ctx := context.Background()
	clock := idemtest.NewClock(time.Now())
	rec := &stepRecorder{}
	g := idem.NewGuard(memstore.New(memstore.WithClock(clock.Now)), idem.WithObserver(rec))
	var staleErr, staleCause error
	var keys []string
	first := func(ctx context.Context) (string, error) {
		k, _ := idem.StepKey(ctx, "email")
		keys = append(keys, k)
		if _, err := idem.Step(ctx, "charge", func(context.Context) (string, error) { return "ch_1", nil }); err != nil {
			return "", err
		}
		clock.Advance(time.Minute) // the lease runs out; a successor takes over and finishes
		second := func(ctx context.Context) (string, error) {
			k, _ := idem.StepKey(ctx, "email")
			keys = append(keys, k)
			ch, err := idem.Step(ctx, "charge", func(context.Context) (string, error) { return "ch_2", nil })
			if err != nil {
				return "", err
			}
			em, err := idem.Step(ctx, "email", func(context.Context) (string, error) { return "em_2", nil })
			return ch + "+" + em, err
		}
		if v, err := doOrder(context.Background(), g, "o1", second); err != nil || v != "ch_1+em_2" {
			t.Errorf("successor = %q, %v; want ch_1+em_2 (charge replayed)", v, err)
		}
		_, staleErr = idem.Step(ctx, "email", func(context.Context) (string, error) { return "em_1", nil })
		staleCause = context.Cause(ctx)
		return "stale", staleErr
	}
	if _, err := doOrder(ctx, g, "o1", first); !errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("stale owner's call = %v, want ErrLeaseLost", err)
	}
	if !errors.Is(staleErr, idem.ErrLeaseLost) || !errors.Is(staleCause, idem.ErrLeaseLost) {
		t.Errorf("stale owner's step = %v, ctx cause %v; want ErrLeaseLost for both", staleErr, staleCause)
	}
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
		t.Errorf("StepKey across the takeover = %q, want the same key twice", keys)
	}
	want := []string{"step_ran:charge", "step_replayed:charge", "step_ran:email", "lease_lost:email"}
	if diff := cmp.Diff(want, rec.evs); diff != "" {
		t.Errorf("step events (-want +got):\n%s", diff)
	}
}

// StepKey differs by step and by call.
func TestStepKeyDistinct(t *testing.T) {
	ctx := context.Background()
	g := idem.NewGuard(memstore.New())
	seen := map[string]string{}
	for _, id := range []string{"o1", "o2"} {
		_, err := doOrder(ctx, g, id, func(ctx context.Context) (string, error) {
			for _, name := range []string{"charge", "email", ""} {
				k, err := idem.StepKey(ctx, name)
				if err != nil {
					return "", err
				}
				if prev, dup := seen[k]; dup {
					t.Errorf("StepKey(%s, %q) = StepKey(%s)", id, name, prev)
				}
				seen[k] = id + "/" + name
			}
			return "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := idem.StepKey(ctx, "charge"); !errors.Is(err, idem.ErrStep) {
		t.Errorf("StepKey outside a call = %v, want ErrStep", err)
	}
}

// upperCodec stores strings in upper case: a replay through it shows the
// step's codec, not the Guard's, read the record.
type upperCodec struct{}

func (upperCodec) Marshal(v any) ([]byte, error) { return []byte(strings.ToUpper(*v.(*string))), nil }
func (upperCodec) Unmarshal(data []byte, v any) error {
	*v.(*string) = string(data)
	return nil
}

func TestStepWithCodec(t *testing.T) {
	ctx := context.Background()
	g := idem.NewGuard(memstore.New())
	fail := errors.New("fail after the step")
	fn := func(ctx context.Context) (string, error) {
		v, err := idem.StepWith(ctx, "charge", upperCodec{}, func(context.Context) (string, error) { return "ch_1", nil })
		if err != nil {
			return "", err
		}
		return v, fail
	}
	if v, err := doOrder(ctx, g, "o1", fn); v != "ch_1" || !errors.Is(err, fail) {
		t.Fatalf("first run = %q, %v", v, err)
	}
	if v, err := doOrder(ctx, g, "o1", fn); v != "CH_1" || !errors.Is(err, fail) {
		t.Fatalf("resumed run = %q, %v; want the step replayed through its codec (CH_1)", v, err)
	}
}
