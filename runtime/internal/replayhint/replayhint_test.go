package replayhint

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// The hint holds the last Size keys added, forgets dropped ones, and
// notes only the claims that found a key running or finished.
func TestRecent(t *testing.T) {
	var h Recent
	for i := range Size + 10 {
		h.Add(fmt.Sprint(i))
	}
	h.Drop("20")
	h.Note("acquired", idemstore.ClaimAcquired)
	h.Note("running", idemstore.ClaimInProgress)
	got := map[string]bool{}
	for _, k := range []string{"0", "9", "10", "20", "21", fmt.Sprint(Size + 9), "acquired", "running"} {
		got[k] = h.Has(k)
	}
	want := map[string]bool{"0": false, "9": false, "10": false, "20": false, "21": true, fmt.Sprint(Size + 9): true, "acquired": false, "running": true}
	// "10" left when "running" came in: Size+11 keys in all.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		m    Mode
		key  string
		want bool
	}{{OnHint, "21", true}, {OnHint, "20", false}, {Always, "20", true}, {Never, "21", false}} {
		if got := tt.m.ReadsFirst(&h, tt.key); got != tt.want {
			t.Errorf("mode %d, key %s: ReadsFirst %v, want %v", tt.m, tt.key, got, tt.want)
		}
	}
}
