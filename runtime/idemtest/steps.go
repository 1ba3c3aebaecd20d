package idemtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// stepCases check recovery points (idemstore.Stepper): run for stores that
// implement it.
var stepCases = []suiteCase{
	{"StepsSurviveTakeover", testStepsSurviveTakeover},
	{"StepsSurviveRelease", testStepsSurviveRelease},
	{"StaleOwnerCannotRecordStep", testStaleStep},
	{"StepKeepsFirstRecord", testStepKeepsFirst},
	{"StepsDroppedWithTheirRecord", testStepsExpire},
	{"GuardResumesAfterTakeover", testGuardResumes},
	{"StepNamesTheStoreCannotHold", testStepNames},
}

func (e *env) stepper() idemstore.Stepper { return e.s.(idemstore.Stepper) }

func (e *env) saveStep(l idemstore.Lease, name, data string) {
	e.t.Helper()
	if err := e.stepper().SaveStep(ctx, l, name, []byte(data)); err != nil {
		e.t.Fatalf("SaveStep(%s): %v", name, err)
	}
}

// wantSteps claims key with want as the claim's status and compares the
// steps it returns.
func (e *env) wantSteps(status idemstore.ClaimStatus, want map[string]string) idemstore.Lease {
	e.t.Helper()
	l, res := e.claim(e.key, fp("a"))
	if res.Status != status {
		e.t.Fatalf("Claim = %v, want %v", res.Status, status)
	}
	got := map[string]string{}
	for name, data := range res.Steps {
		got[name] = string(data)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		e.t.Fatalf("steps returned by the %v claim (-want +got):\n%s", status, diff)
	}
	return l
}

func testStepsSurviveTakeover(t *testing.T, e *env) {
	l := e.wantSteps(idemstore.ClaimAcquired, nil)
	e.saveStep(l, "charge", "ch_1")
	e.saveStep(l, "email", "")
	e.advance(e.pastLease())
	l2 := e.wantSteps(idemstore.ClaimTakenOver, map[string]string{"charge": "ch_1", "email": ""})
	if got := e.get(e.key).Steps; len(got) != 2 || string(got["charge"]) != "ch_1" {
		t.Errorf("Get's steps = %q, want charge and email (operators read them: idemctl show)", got)
	}
	e.saveStep(l2, "invoice", "in_1")
	e.advance(e.pastLease())
	e.wantSteps(idemstore.ClaimTakenOver, map[string]string{"charge": "ch_1", "email": "", "invoice": "in_1"})
}

func testStepsSurviveRelease(t *testing.T, e *env) {
	l := e.wantSteps(idemstore.ClaimAcquired, nil)
	e.saveStep(l, "charge", "ch_1")
	if err := e.s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	e.wantSteps(idemstore.ClaimAcquired, map[string]string{"charge": "ch_1"})
}

func testStaleStep(t *testing.T, e *env) {
	l := e.wantSteps(idemstore.ClaimAcquired, nil)
	e.advance(e.pastLease())
	l2 := e.wantSteps(idemstore.ClaimTakenOver, nil)
	if err := e.stepper().SaveStep(ctx, l, "charge", []byte("stale")); !isLeaseLost(err) {
		t.Errorf("SaveStep by the stale owner = %v, want ErrLeaseLost", err)
	}
	e.saveStep(l2, "charge", "ch_2")
	if err := e.stepper().SaveStep(ctx, l, "charge", []byte("stale")); !isLeaseLost(err) {
		t.Errorf("SaveStep over the new owner's step by the stale owner = %v, want ErrLeaseLost", err)
	}
	forged := l2
	forged.Fence++
	if err := e.stepper().SaveStep(ctx, forged, "other", []byte("x")); !isLeaseLost(err) {
		t.Errorf("SaveStep with a forged fence = %v, want ErrLeaseLost", err)
	}
	if err := e.s.Complete(ctx, l2, idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if err := e.stepper().SaveStep(ctx, l2, "late", []byte("x")); !isLeaseLost(err) {
		t.Errorf("SaveStep after Complete = %v, want ErrLeaseLost", err)
	}
	e.advance(e.pastLease())
	e.s.Delete(ctx, e.key) // the record is completed: claims replay it
	e.wantSteps(idemstore.ClaimAcquired, nil)
}

func testStepKeepsFirst(t *testing.T, e *env) {
	l := e.wantSteps(idemstore.ClaimAcquired, nil)
	e.saveStep(l, "charge", "first")
	e.saveStep(l, "charge", "second")
	e.advance(e.pastLease())
	e.wantSteps(idemstore.ClaimTakenOver, map[string]string{"charge": "first"})
}

func testStepsExpire(t *testing.T, e *env) {
	l := e.wantSteps(idemstore.ClaimAcquired, nil)
	e.saveStep(l, "charge", "ch_1")
	e.advance(e.lease + e.ttl + e.pastLease()) // past the record's retention
	e.wantSteps(idemstore.ClaimAcquired, nil)
	l = e.mustOwn(e.key+":deleted", fp("a"), idemstore.ClaimAcquired)
	e.saveStep(l, "charge", "ch_1")
	if err := e.s.Delete(ctx, l.Key); err != nil {
		t.Fatal(err)
	}
	if _, res := e.claim(l.Key, fp("a")); res.Status != idemstore.ClaimAcquired || len(res.Steps) != 0 {
		t.Fatalf("claim after Delete = %v with steps %v, want acquired without steps", res.Status, res.Steps)
	}
}

// testGuardResumes runs a three-step function through a Guard: the first
// run dies (panics) after two steps; the retry replays them and runs only
// the third.
func testGuardResumes(t *testing.T, e *env) {
	g := idem.NewGuard(e.s)
	spec := e.spec("resume")
	var ran [3]atomic.Int32
	crash := errors.New("crash")
	body := func(die bool) func(ctx context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			var out []string
			for i, name := range []string{"charge", "email", "invoice"} {
				if die && i == 2 {
					panic(crash)
				}
				v, err := idem.Step(ctx, name, func(ctx context.Context) (string, error) {
					ran[i].Add(1)
					return fmt.Sprintf("%s-%d", name, ran[i].Load()), nil
				})
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			return out, nil
		}
	}
	func() {
		defer func() {
			if p := recover(); p != crash {
				t.Fatalf("first run: recovered %v, want the crash", p)
			}
		}()
		_, _ = e.guardCall(ctx, g, spec, "order-1", body(true))
	}()
	got, err := e.guardCall(ctx, g, spec, "order-1", body(false))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"charge-1", "email-1", "invoice-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result of the resumed call (-want +got):\n%s", diff)
	}
	for i, n := range []int32{1, 1, 1} {
		if ran[i].Load() != n {
			t.Errorf("step %d ran %d times, want %d", i, ran[i].Load(), n)
		}
	}
}

// testStepNames: a step name the store cannot hold is refused before the
// step runs (idem.ErrStep), on the first run and the retry alike; any
// other name runs once and replays on the retry. Never a step that runs
// and then fails to be recorded, so that it runs again on every retry.
// Invalid UTF-8 is refused everywhere: DynamoDB and Firestore would store
// "\xff" as "\uFFFD", making two names one.
func testStepNames(t *testing.T, e *env) {
	g := idem.NewGuard(e.s)
	spec := e.spec("stepnames")
	cases := []struct {
		name, step string
		refused    bool // else: either outcome, consistently
	}{
		{"InvalidUTF8", "\xff", true},
		{"InvalidUTF8Inside", "charge\xc3(", true},
		{"ReplacementCharacter", "\uFFFD", false},
		{"Empty", "", false},
		{"Long1600", strings.Repeat("s", 1600), false},
		{"Long1600Quoted", strings.Repeat("`", 1600), false},
		{"Long70000", strings.Repeat("s", 70000), false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			crash := errors.New("crash")
			var stepErrs []error
			body := func(die bool) func(ctx context.Context) (any, error) {
				return func(ctx context.Context) (any, error) {
					_, err := idem.Step(ctx, tc.step, func(context.Context) (int, error) { return int(runs.Add(1)), nil })
					stepErrs = append(stepErrs, err)
					if die {
						panic(crash)
					}
					return nil, err
				}
			}
			id := fmt.Sprintf("step-%d", i)
			func() {
				defer func() {
					if p := recover(); p != crash {
						t.Fatalf("first run: recovered %v, want the crash", p)
					}
				}()
				_, _ = e.guardCall(ctx, g, spec, id, body(true))
			}()
			_, _ = e.guardCall(ctx, g, spec, id, body(false))
			type outcome struct {
				Refused  []bool // errors.Is(err, idem.ErrStep) per run
				Failed   []bool // err != nil per run
				StepRuns int32
			}
			got := outcome{StepRuns: runs.Load()}
			for _, err := range stepErrs {
				got.Refused = append(got.Refused, errors.Is(err, idem.ErrStep))
				got.Failed = append(got.Failed, err != nil)
			}
			refused := outcome{Refused: []bool{true, true}, Failed: []bool{true, true}}
			held := outcome{Refused: []bool{false, false}, Failed: []bool{false, false}, StepRuns: 1}
			switch {
			case cmp.Equal(got, refused):
				t.Logf("%T refuses a %d-byte step name: %.300v", e.s, len(tc.step), stepErrs[0])
			case tc.refused:
				t.Errorf("step %.20q: %+v, errors %.300v; want %+v", tc.step, got, stepErrs, refused)
			case !cmp.Equal(got, held):
				t.Errorf("step of %d bytes: %+v, errors %.300v; want %+v (held) or %+v (refused before it runs)",
					len(tc.step), got, stepErrs, held, refused)
			}
		})
	}
}

// CheckStepTooLarge checks a store whose steps are limited so that one
// step of 1000 bytes is too large and two of 500 are too: the first step
// is refused with idem.ErrResultTooLarge by its own size, the second of
// two by the steps already recorded (its error naming wantSize, the size
// the store measured, e.g. "1002 bytes"), and a step already recorded is
// not refused (it keeps its first data). It returns the lease it holds on
// key, for the store's own checks of what it kept.
// s must implement idemstore.Stepper.
func CheckStepTooLarge(t *testing.T, s idemstore.Store, key string, owner idemstore.Token, wantSize string) idemstore.Lease {
	t.Helper()
	st := s.(idemstore.Stepper)
	l := checkTooLarge(t, s, key, owner, wantSize, "SaveStep", func(l idemstore.Lease, n int, data []byte) error {
		return st.SaveStep(ctx, l, [...]string{"huge", "a", "b"}[n], data)
	})
	if err := st.SaveStep(ctx, l, "a", make([]byte, 600)); err != nil {
		t.Fatalf("SaveStep of a step already recorded = %v, want nil (it keeps its first data)", err)
	}
	return l
}

// checkTooLarge claims key for owner on s and makes the three writes of
// CheckStepTooLarge and CheckItemTooLarge with put (what names it): the
// 0th, of 1000 bytes, refused with idem.ErrResultTooLarge; the 1st, of
// 500, accepted; the 2nd, of 500 more, refused naming wantSize. It
// returns the lease.
func checkTooLarge(t *testing.T, s idemstore.Store, key string, owner idemstore.Token, wantSize, what string, put func(l idemstore.Lease, n int, data []byte) error) idemstore.Lease {
	t.Helper()
	l := idemstore.Lease{Key: key, Owner: owner, Duration: time.Minute, TTL: time.Hour}
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
	if err != nil {
		t.Fatal(err)
	}
	l.Fence = res.Fence
	if err := put(l, 0, make([]byte, 1000)); !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("%s of 1000 bytes = %v, want ErrResultTooLarge", what, err)
	}
	if err := put(l, 1, make([]byte, 500)); err != nil {
		t.Fatal(err)
	}
	err = put(l, 2, make([]byte, 500))
	if !errors.Is(err, idem.ErrResultTooLarge) || !strings.Contains(err.Error(), wantSize) {
		t.Fatalf("%s past the limit = %v, want ErrResultTooLarge naming %s", what, err, wantSize)
	}
	return l
}
