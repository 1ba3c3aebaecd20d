package idemtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// testBeatAfterOutcome: a Guard heartbeats until the outcome is written,
// so its last beat can reach the store after the completion, failure or
// release it raced with. That beat must leave the finished record as it
// is (its retention above all); it may succeed or say ErrLeaseLost.
func testBeatAfterOutcome(t *testing.T, e *env) {
	outcomes := []struct {
		name string
		do   func(l idemstore.Lease) error
	}{
		{"completion", func(l idemstore.Lease) error { return e.s.Complete(ctx, l, idemstore.Result{Data: []byte(`1`)}) }},
		{"failure", func(l idemstore.Lease) error { return e.s.Fail(ctx, l, idemstore.Result{Data: []byte(`1`)}) }},
		{"release", func(l idemstore.Lease) error { return e.s.Release(ctx, l) }},
	}
	for _, o := range outcomes {
		t.Run(o.name, func(t *testing.T) {
			key := e.key + ":" + o.name
			l := e.mustOwn(key, fp("a"), idemstore.ClaimAcquired)
			if err := o.do(l); err != nil {
				t.Fatal(err)
			}
			before := e.get(key)
			if err := e.s.Heartbeat(ctx, l); err != nil && !isLeaseLost(err) {
				t.Fatalf("a beat after the %s = %v, want nil or ErrLeaseLost", o.name, err)
			}
			if diff := cmp.Diff(before, e.get(key)); diff != "" {
				t.Errorf("a beat after the %s changed the record (-before +after):\n%s", o.name, diff)
			}
		})
	}
}
