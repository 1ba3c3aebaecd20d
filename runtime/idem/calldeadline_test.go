package idem_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestCallerDeadlineNeverFailsOpen: a claim that timed out at the
// caller's deadline is the caller's deadline, however the store phrased
// it and even before the ctx's own timer fired: the call says
// context.DeadlineExceeded, not ErrStoreUnavailable, and a fail-open
// Guard does not run the function. A store timeout well before the
// caller's deadline is still an outage.
func TestCallerDeadlineNeverFailsOpen(t *testing.T) {
	timeout := fmt.Errorf("read tcp: %w", os.ErrDeadlineExceeded)
	cases := []struct {
		name     string
		storeErr error
		deadline time.Duration // from now
		want     string        // "deadline" or "unavailable"
	}{
		{"store says deadline, deadline passed", fmt.Errorf("store: %w", context.DeadlineExceeded), -time.Millisecond, "deadline"},
		{"store says unavailable, deadline passed", fmt.Errorf("%w: %w", idem.ErrStoreUnavailable, timeout), -time.Millisecond, "deadline"},
		{"store says unavailable, deadline due now", fmt.Errorf("%w: %w", idem.ErrStoreUnavailable, timeout), 0, "deadline"},
		{"store timed out, deadline an hour away", fmt.Errorf("%w: %w", idem.ErrStoreUnavailable, timeout), time.Hour, "unavailable"},
		{"store refused, deadline passed", fmt.Errorf("%w: connection refused", idem.ErrStoreUnavailable), -time.Millisecond, "unavailable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := idem.NewGuard(rejecting{memstore.New(), tc.storeErr})
			_, err := call(idemtest.DueCtx(context.Background(), time.Now().Add(tc.deadline)), g, &idem.Spec{Name: "test.F"}, "k",
				func(context.Context) (int, error) { return 1, nil })
			wantDeadlineOrOutage(t, err, tc.want)
			runs := 0
			fo := idem.NewGuard(rejecting{memstore.New(), tc.storeErr}, idem.WithFailOpen())
			_, _ = call(idemtest.DueCtx(context.Background(), time.Now().Add(tc.deadline)), fo, &idem.Spec{Name: "test.F"}, "k",
				func(context.Context) (int, error) { runs++; return 1, nil })
			if wantRuns := map[string]int{"deadline": 0, "unavailable": 1}[tc.want]; runs != wantRuns {
				t.Errorf("fail-open Guard ran fn %d times, want %d", runs, wantRuns)
			}
		})
	}
}

// timedOutWait is a store whose key is always held by another owner and
// whose Wait fails as a client that noticed its ctx's deadline first.
type timedOutWait struct{ idemstore.Store }

func (timedOutWait) Claim(context.Context, idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	return idemstore.ClaimResult{Status: idemstore.ClaimInProgress, Fence: 1, LeaseUntil: time.Now().Add(time.Minute)}, nil
}

func (timedOutWait) Wait(context.Context, string) error {
	return fmt.Errorf("%w: wait: %w", idem.ErrStoreUnavailable, os.ErrDeadlineExceeded)
}

// TestCallerDeadlineDuringWait: a wait caller whose store's Wait timed
// out at the caller's deadline, before the ctx's timer fired, gets
// context.DeadlineExceeded, not ErrStoreUnavailable; with its deadline far
// off, the same store error is an outage.
func TestCallerDeadlineDuringWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		want     string
	}{
		{"deadline passed", -time.Millisecond, "deadline"},
		{"deadline an hour away", time.Hour, "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := idem.NewGuard(timedOutWait{memstore.New()})
			spec := &idem.Spec{Name: "test.W", OnDuplicate: idem.DuplicateWait, Wait: 2 * time.Hour}
			_, err := call(idemtest.DueCtx(context.Background(), time.Now().Add(tc.deadline)), g, spec, "k",
				func(context.Context) (int, error) { return 1, nil })
			wantDeadlineOrOutage(t, err, tc.want)
		})
	}
}

// wantDeadlineOrOutage checks that err says the caller's deadline (want
// "deadline") or an outage ("unavailable"), and not the other.
func wantDeadlineOrOutage(t *testing.T, err error, want string) {
	t.Helper()
	type outcome struct{ Deadline, Unavailable bool }
	w := outcome{Deadline: want == "deadline", Unavailable: want == "unavailable"}
	got := outcome{errors.Is(err, context.DeadlineExceeded), errors.Is(err, idem.ErrStoreUnavailable)}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("err %v (-want +got):\n%s", err, diff)
	}
}
