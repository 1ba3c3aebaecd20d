package firestorestore_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

func stepStrings(steps map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range steps {
		out[k] = string(v)
	}
	return out
}

func mustClaim(t *testing.T, s *firestorestore.Store, req idemstore.ClaimRequest, want idemstore.ClaimStatus) (idemstore.Lease, idemstore.ClaimResult) {
	t.Helper()
	res, err := s.Claim(context.Background(), req)
	if err != nil || res.Status != want {
		t.Fatalf("claim = %+v, %v; want %v", res, err, want)
	}
	return idemstore.Lease{Key: req.Key, Owner: req.Owner, Fence: res.Fence, Duration: req.Lease, TTL: req.TTL}, res
}

// A step is one commit and no read when the store made the lease's last
// write; through another store (another process) it reads first, and so
// does a store whose last write was not the last. A step
// already recorded is not written again. A takeover that resumes the
// call is the claim's read and write, as without steps, and brings the
// steps back.
func TestStepRoundTrips(t *testing.T) {
	emulator(t)
	cnt := &rpcCounter{}
	c := emulatorClient(t, testenv.FirestoreEmulatorHost(), cnt)
	s := newStore(t, c)
	other, err := firestorestore.New(context.Background(), c, s.Collection().ID)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Fingerprint: idemstore.Fingerprint{1}, Lease: 500 * time.Millisecond, TTL: time.Hour}
	l, _ := mustClaim(t, s, req, idemstore.ClaimAcquired)
	cnt.reset()
	for _, tc := range []struct {
		name  string
		store *firestorestore.Store
		step  string
		want  map[string]int
	}{
		{"a step", s, "charge", map[string]int{"Commit": 1}},
		{"another step", s, "email", map[string]int{"Commit": 1}},
		{"a step through another store", other, "invoice", map[string]int{"BatchGetDocuments": 1, "Commit": 1}},
		// Its last write is no longer the document's: the preconditioned
		// commit fails, a read shows the lease holds, the commit again.
		{"the first store again", s, "ship", map[string]int{"BatchGetDocuments": 1, "Commit": 2}},
		{"a step recorded already", s, "charge", map[string]int{"BatchGetDocuments": 1}},
	} {
		if err := tc.store.SaveStep(ctx, l, tc.step, []byte(tc.step+"-1")); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, cnt.reset()); diff != "" {
			t.Errorf("%s: calls (-want +got):\n%s", tc.name, diff)
		}
	}
	time.Sleep(600 * time.Millisecond) // past the lease
	req.Owner = idemstore.Token{2}
	l2, res := mustClaim(t, s, req, idemstore.ClaimTakenOver)
	want := map[string]string{"charge": "charge-1", "email": "email-1", "invoice": "invoice-1", "ship": "ship-1"}
	if diff := cmp.Diff(want, stepStrings(res.Steps)); diff != "" {
		t.Errorf("takeover's steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"BatchGetDocuments": 1, "Commit": 1}, cnt.reset()); diff != "" {
		t.Errorf("takeover: calls (-want +got):\n%s", diff)
	}
	if err := s.SaveStep(ctx, l2, "refund", nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"Commit": 1}, cnt.reset()); diff != "" {
		t.Errorf("a step after the takeover: calls (-want +got):\n%s", diff)
	}
}

// A stale owner, through the store that claimed or another one, can
// neither record a step nor overwrite one, and the document keeps the new
// owner's.
func TestStepStaleOwner(t *testing.T) {
	a, b := twoProcesses(t)
	ctx := context.Background()
	req := idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: 300 * time.Millisecond, TTL: time.Hour}
	l, _ := mustClaim(t, a, req, idemstore.ClaimAcquired)
	if err := a.SaveStep(ctx, l, "charge", []byte("ch_1")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	req.Owner = idemstore.Token{2}
	l2, res := mustClaim(t, b, req, idemstore.ClaimTakenOver)
	if string(res.Steps["charge"]) != "ch_1" {
		t.Fatalf("takeover's steps = %q", res.Steps)
	}
	if err := b.SaveStep(ctx, l2, "email", []byte("em_2")); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*firestorestore.Store{"claiming store": a, "other store": b} {
		for _, step := range []string{"email", "invoice", "charge"} {
			if err := s.SaveStep(ctx, l, step, []byte("stale")); !errors.Is(err, idem.ErrLeaseLost) {
				t.Errorf("stale SaveStep(%s) through the %s = %v; want idem.ErrLeaseLost", step, name, err)
			}
		}
	}
	r, err := a.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"charge": "ch_1", "email": "em_2"}, stepStrings(r.Steps)); diff != "" {
		t.Errorf("steps after the stale owner's attempts (-want +got):\n%s", diff)
	}
	if err := b.Complete(ctx, l2, idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveStep(ctx, l2, "late", []byte("x")); !errors.Is(err, idem.ErrLeaseLost) {
		t.Errorf("SaveStep after Complete = %v; want idem.ErrLeaseLost", err)
	}
}

// The steps map in the document: names as they are, but for the few
// that need escaping; a step restarts the lease like a heartbeat; a
// release keeps the map, a completion removes it.
func TestStepDocumentLayout(t *testing.T) {
	c := emulator(t)
	s := newStore(t, c)
	ctx := context.Background()
	ref := s.Collection().Doc("kk")
	stepsOf := func() (map[string]any, bool) {
		t.Helper()
		snap, err := ref.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := snap.Data()["sp"]
		if !ok {
			return nil, false
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("sp is %T, want a map", v)
		}
		return m, true
	}
	req := idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour}
	l, _ := mustClaim(t, s, req, idemstore.ClaimAcquired)
	before, err := s.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{"charge": "ch_1", "": "empty name", "~x": "tilde", "__name__": "reserved", "a.b": "dot", "`q`": "backquotes", "e": ""}
	for name, data := range names {
		if err := s.SaveStep(ctx, l, name, []byte(data)); err != nil {
			t.Fatalf("SaveStep(%q): %v", name, err)
		}
	}
	want := map[string]any{
		"charge":    []byte("ch_1"),
		"~":         []byte("empty name"),
		"~~x":       []byte("tilde"),
		"~__name__": []byte("reserved"),
		"a.b":       []byte("dot"),
		"`q`":       []byte("backquotes"),
		"e":         []byte{},
	}
	got, _ := stepsOf()
	if diff := cmp.Diff(want, got, cmp.Comparer(bytes.Equal)); diff != "" {
		t.Fatalf("sp (-want +got):\n%s", diff)
	}
	r, err := s.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(names, stepStrings(r.Steps)); diff != "" {
		t.Fatalf("Get's steps (-want +got):\n%s", diff)
	}
	if !r.LeaseUntil.After(before.LeaseUntil) {
		t.Errorf("lease after the steps %v, before %v: a step is a write of the owner's, which restarts it", r.LeaseUntil, before.LeaseUntil)
	}
	if err := s.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got, _ := stepsOf(); !cmp.Equal(want, got, cmp.Comparer(bytes.Equal)) {
		t.Fatalf("sp after a release = %v, want it kept", got)
	}
	req.Owner = idemstore.Token{2}
	l, res := mustClaim(t, s, req, idemstore.ClaimAcquired)
	if diff := cmp.Diff(names, stepStrings(res.Steps)); diff != "" {
		t.Fatalf("claim's steps after a release (-want +got):\n%s", diff)
	}
	if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if got, ok := stepsOf(); ok {
		t.Fatalf("a completed record's sp = %v, want none (the result replays)", got)
	}
	if r, err := s.Get(ctx, "k"); err != nil || r.Steps != nil {
		t.Fatalf("Get of the completed record: steps %q, %v", r.Steps, err)
	}
}

// Steps count towards the 1 MiB document: one that cannot fit is refused
// without a commit, as ErrDocumentTooLarge, and the record keeps what it
// had. A completion drops the steps, so the largest result still fits
// after them.
func TestStepTooLarge(t *testing.T) {
	emulator(t)
	cnt := &rpcCounter{}
	s := newStore(t, emulatorClient(t, testenv.FirestoreEmulatorHost(), cnt))
	ctx := context.Background()
	key := "idem:pkg.Func:v0:0123456789abcdef"
	l, _ := mustClaim(t, s, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour}, idemstore.ClaimAcquired)
	cnt.reset()
	if err := s.SaveStep(ctx, l, "huge", make([]byte, firestorestore.MaxDocumentSize)); !errors.Is(err, firestorestore.ErrDocumentTooLarge) || !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("a step over 1 MiB = %v, want ErrDocumentTooLarge", err)
	}
	if n := cnt.reset(); n["Commit"] != 0 {
		t.Fatalf("the oversized step was sent: %v", n)
	}
	half := bytes.Repeat([]byte{0xa5}, firestorestore.MaxDocumentSize/2)
	if err := s.SaveStep(ctx, l, "first", half); err != nil {
		t.Fatal(err)
	}
	cnt.reset()
	err := s.SaveStep(ctx, l, "second", half)
	if !errors.Is(err, firestorestore.ErrDocumentTooLarge) || !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("a step taking the document over 1 MiB = %v, want ErrDocumentTooLarge", err)
	}
	t.Logf("error text: %v", err)
	if n := cnt.reset(); n["Commit"] != 0 {
		t.Fatalf("the step that does not fit was sent: %v", n)
	}
	r, err := s.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 1 || !bytes.Equal(r.Steps["first"], half) {
		t.Fatalf("steps after the refused one: %d, want the first only", len(r.Steps))
	}
	// Another owner is told it lost the lease, not that the step is large.
	if err := s.SaveStep(ctx, idemstore.Lease{Key: key, Owner: idemstore.Token{9}, Fence: l.Fence}, "second", half); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("an oversized step by another owner = %v, want ErrLeaseLost", err)
	}
	fits := make([]byte, firestorestore.MaxResultSize(key))
	if err := s.Complete(ctx, l, idemstore.Result{Data: fits}); err != nil {
		t.Fatalf("Complete with MaxResultSize bytes after steps: %v", err)
	}
}
