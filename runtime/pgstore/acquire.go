package pgstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A per-call context.WithTimeout around every pool acquire arms a runtime
// timer per operation, and arming one wakes the network poller: on a
// replay that costs about a seventh of Store.Claim's client CPU. acquire bounds
// the wait with a timer shared by every acquire that starts within one
// eighth of the timeout instead (acquireLimit), and with none at all when
// the caller's ctx ends first anyway; docs/BENCHMARKS.md has the gain. A
// wait is therefore bounded by between 7/8 of WithAcquireTimeout and all
// of it.

// acquireLimit hands out a context that ends between 7/8 of d and d from
// the time it is handed out, making a new one (one timer) at most every
// d/8. Handing out the current one is an atomic load: no lock shared by
// every operation.
type acquireLimit struct {
	cur atomic.Pointer[limitSlot]
	mu  sync.Mutex // serialises making a new slot
}

// limitSlot is one shared context, immutable once made.
type limitSlot struct {
	ctx context.Context
	// end would end ctx early; nothing does (Close leaves the store
	// usable for Waits in flight): ctx's own timer ends it.
	end context.CancelFunc
	// bg is context.Background() bounded by ctx, made once per slot: the
	// usual caller's ctx outside a request costs no allocation.
	bg   context.Context
	from time.Time
}

// current returns the shared context for an acquire starting now, and
// context.Background() bounded by it.
func (l *acquireLimit) current(d time.Duration) (limit, bg context.Context) {
	now := time.Now()
	if c := l.cur.Load(); c != nil && now.Sub(c.from) <= d/8 {
		return c.ctx, c.bg
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.cur.Load()
	if c == nil || now.Sub(c.from) > d/8 {
		// The old context's own timer ends it; acquires still waiting on
		// it keep their bound.
		ctx, end := context.WithTimeout(context.Background(), d)
		c = &limitSlot{ctx: ctx, end: end, bg: limitedCtx{context.Background(), ctx}, from: time.Now()}
		l.cur.Store(c)
	}
	return c.ctx, c.bg
}

// limitedCtx is a caller's ctx without a Done channel (its values, for
// the pool's hooks and tracers), ended by the shared limit.
type limitedCtx struct {
	context.Context
	limit context.Context
}

func (c limitedCtx) Deadline() (time.Time, bool) { return c.limit.Deadline() }
func (c limitedCtx) Done() <-chan struct{}       { return c.limit.Done() }
func (c limitedCtx) Err() error                  { return c.limit.Err() }

// bounded returns ctx bounded by the acquire timeout d, and a function to
// call when the acquire is over.
func (s *Store) bounded(ctx context.Context, d time.Duration) (context.Context, func()) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d*7/8 {
		return ctx, func() {} // ctx ends before the limit could
	}
	limit, bg := s.limit.current(d)
	if ctx == context.Background() {
		return bg, func() {}
	}
	if ctx.Done() == nil {
		return limitedCtx{ctx, limit}, func() {}
	}
	actx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(limit, cancel)
	return actx, func() { stop(); cancel() }
}

// acquire gets a pool connection, telling pool exhaustion apart from the
// caller's ctx ending.
func (s *Store) acquire(ctx context.Context, op string) (*pgxpool.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", op, err)
	}
	actx := ctx
	if s.cfg.acquireTimeout > 0 {
		var done func()
		actx, done = s.bounded(ctx, s.cfg.acquireTimeout)
		defer done()
	}
	c, err := s.pool.Acquire(actx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("pgstore: %s: %w", op, cerr)
		}
		if actx.Err() != nil {
			st := s.pool.Stat()
			return nil, fmt.Errorf("%w: %s: no connection free after %v (%d/%d in use): %w",
				ErrPoolExhausted, op, s.cfg.acquireTimeout, st.AcquiredConns(), st.MaxConns(), err)
		}
		return nil, fmt.Errorf("pgstore: %s: acquiring a connection: %w", op, unreachable(err))
	}
	return c, nil
}
