package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestMaxmemoryIsStoreFull: a server at maxmemory under noeviction refuses
// new claims with idem.ErrStoreFull, as the memory and file stores do,
// while replays of stored keys are still served.
func TestMaxmemoryIsStoreFull(t *testing.T) {
	s, rdb := privateStore(t)
	ctx := context.Background()
	t.Cleanup(func() { s.Close() })
	g := idem.NewGuard(s)
	spec := &idem.Spec{Name: "test.Full", TTL: time.Hour}
	call := func(key string) (string, error) {
		c := g.Begin(spec, key)
		return idem.Do(ctx, c, func(context.Context) (string, error) { return "done " + key, nil })
	}
	if _, err := call("stored"); err != nil {
		t.Fatal(err)
	}
	// Fill the server up to a limit just above what it holds now.
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	var usedMemory string
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			usedMemory = v
		}
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", usedMemory).Err(); err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		if err := rdb.Set(ctx, "filler:"+string(rune('a'+i%26))+strings.Repeat("z", i), filler, 0).Err(); err != nil {
			break // OOM: the server is full
		}
		if i > 1000 {
			t.Fatal("the server never filled up")
		}
	}
	if _, err := call("new"); !errors.Is(err, idem.ErrStoreFull) || !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("claim on a full server = %v, want ErrStoreFull (within ErrStoreUnavailable)", err)
	}
	if v, err := call("stored"); err != nil || v != "done stored" {
		t.Fatalf("replay on a full server = %q, %v; want the stored result", v, err)
	}
}
