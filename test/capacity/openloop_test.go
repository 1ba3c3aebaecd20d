package capacity

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// At a rate, one slow call delays only itself: the calls scheduled after
// it start on time (open loop), where a goroutine calling back to back
// would hold its next calls behind the slow one and count them late.
func TestOpenLoopSlowCallDelaysOnlyItself(t *testing.T) {
	const stall = 200 * time.Millisecond
	var calls atomic.Int64
	op := func(context.Context, *rand.Rand) error {
		if calls.Add(1) == 10 {
			time.Sleep(stall)
		}
		return nil
	}
	var res workerResult
	runWindow(context.Background(), workerConfig{Goroutines: 2, Rate: 500, Duration: time.Second}, op, &res)
	if res.Ops < 450 || int(res.Ops) != len(res.Lat) {
		t.Fatalf("%d operations, %d latencies; want about 500 of each", res.Ops, len(res.Lat))
	}
	late := 0
	for _, l := range res.Lat {
		if time.Duration(l) >= stall/2 {
			late++
		}
	}
	// One is the stalled call; a few more allow for a loaded machine.
	if late > 3 {
		t.Errorf("%d calls took %v or more, want the one stalled call: the stall held others back", late, stall/2)
	}
}
