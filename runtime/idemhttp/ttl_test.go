package idemhttp_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestKeyExpiresAfterTTL: the published expiration policy holds: a
// response is replayed for WithTTL, and after it the key is free again.
func TestKeyExpiresAfterTTL(t *testing.T) {
	var mu sync.Mutex
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	advance := func(d time.Duration) { mu.Lock(); at = at.Add(d); mu.Unlock() }
	g := idem.NewGuard(memstore.New(memstore.WithClock(now)), idem.WithClock(now))
	a := &app{}
	h := newMW(t, g, withTTL(time.Hour)).Handler(a)
	q := req{key: []string{"k"}, client: "a", body: "x"}
	var got []resp
	got = append(got, first(send(t, h, q)))
	advance(59 * time.Minute)
	got = append(got, first(send(t, h, q)))
	advance(2 * time.Minute)
	got = append(got, first(send(t, h, q)))
	want := []resp{
		{Status: 201, CType: jsonCT, Run: 1},
		{Status: 201, CType: jsonCT, Run: 1, Replayed: "true"},
		{Status: 201, CType: jsonCT, Run: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func first[A, B any](a A, _ B) A { return a }
