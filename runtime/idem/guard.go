package idem

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// Guard runs functions at most once per key against a Store. It is safe for
// concurrent use; make one per store and share it.
type Guard struct {
	store    idemstore.Store
	codec    Codec
	obs      Observer
	cobs     contextObserver // obs, when it takes a ctx
	prefix   string
	failOpen bool
	// inProcess: the store never waits on I/O (see the inProcess
	// interface), so its writes after the function need no timer.
	inProcess bool
	records   recordClaimer // the store, when it claims by record handles
	hmacKey   []byte
	now       func() time.Time
	maxResult int            // WithMaxResult
	transform impl.Transform // how records are stored (seal.go)

	tokenPrefix [8]byte
	counter     atomic.Uint64
	flights     flightTable
	calls       sync.Pool // *callState, the working memory of Calls
	memo        *keyMemo
	// alarms: heartbeats and lease expiries of running calls. A
	// separate object: its timer stays armed after the calls that set it
	// end, and must not keep the Guard (and its store) reachable.
	alarms *alarms

	orphans orphans // claims whose reply was lost, to give back
}

// NewGuard returns a Guard over store.
func NewGuard(store idemstore.Store, opts ...Option) *Guard {
	c := config{codec: jsonCodec{}, prefix: "idem:", now: time.Now, memo: 4096}
	for _, o := range opts {
		o(&c)
	}
	g := &Guard{store: store, codec: c.codec, obs: c.obs, prefix: c.prefix, failOpen: c.failOpen, hmacKey: c.hmacKey, now: c.now, maxResult: c.maxRes,
		transform: impl.Transform{Sealer: c.sealer, CompressMin: c.compressMin},
		memo:      newKeyMemo(c.memo)}
	g.cobs, _ = g.obs.(contextObserver)
	if ip, ok := store.(inProcess); ok {
		g.inProcess = ip.InProcess()
	}
	if rc, ok := store.(recordClaimer); ok && rc.RecordStore() == store {
		g.records = rc
	}
	if _, err := rand.Read(g.tokenPrefix[:]); err != nil {
		panic("idem: no randomness for owner tokens: " + err.Error())
	}
	g.calls.New = func() any { return &callState{g: g} }
	g.alarms = new(alarms)
	return g
}

// token mints a unique owner token without allocating.
func (g *Guard) token() idemstore.Token { return g.tokenOf(g.counter.Add(1)) }

// tokenOf is the owner token numbered n.
func (g *Guard) tokenOf(n uint64) (t idemstore.Token) {
	copy(t[:8], g.tokenPrefix[:])
	binary.BigEndian.PutUint64(t[8:], n)
	return t
}

func (g *Guard) observe(ctx context.Context, e Event) {
	if g.cobs != nil {
		g.cobs.ObserveContext(ctx, e)
	} else if g.obs != nil {
		g.obs.Observe(e)
	}
}

// overBudget is ErrResultTooLarge for a record of n bytes over spec's
// budget (Spec.MaxResult, else WithMaxResult), nil within it. n is the
// record before compression and sealing (identity header and encoded
// result), which is what readLimit bounds on the way back.
func (g *Guard) overBudget(spec *Spec, n int) error {
	if budget := g.budget(spec); budget > 0 && n > budget {
		return fmt.Errorf("%w: %s: %d bytes, over its budget of %d (max_result)", ErrResultTooLarge, spec.Name, n, budget)
	}
	return nil
}

// budget is spec's largest stored record (Spec.MaxResult, else
// WithMaxResult); 0: none.
func (g *Guard) budget(spec *Spec) int {
	if spec.MaxResult > 0 {
		return spec.MaxResult
	}
	return g.maxResult
}

// failureFloor is the least that a recorded failure may take, whatever
// the budget: room for its message.
const failureFloor = 4096

// readLimit bounds what a stored record of spec's function may inflate to
// (0: impl.MaxInflated): its budget, which every result and step was
// checked against before compression and sealing, and at least
// failureFloor, which recorded failures are cut to fit (fail).
func (g *Guard) readLimit(spec *Spec) int {
	if b := g.budget(spec); b > 0 {
		return max(b, failureFloor)
	}
	return 0
}
