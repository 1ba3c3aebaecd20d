package idem

import "sync"

// flightTable tracks the calls this process is executing, so same-key
// callers in the process are answered without asking the store: one
// mutex and one map, as in singleflight. A Guard over an in-process store
// (see inProcess) keeps no flights: asking its store is as cheap, and the
// store answers the same (it keeps the decoded value and wakes waiters
// itself).
type flightTable struct {
	mu sync.Mutex
	m  map[string]*flight
}

// flight is a call this process is executing, as same-key callers see it.
type flight struct {
	fp Fingerprint
	// spec is the running function's: a same-key caller of another
	// function that shares its name (ErrFunctionMismatch) is not handed
	// its value.
	spec *Spec
	mu   sync.Mutex
	// done is made by the first caller that waits, so an execution nobody
	// waits on (almost all) makes no channel; finish closes it.
	done  chan struct{}
	ended bool
	// Set before ended. shared: value and err are the recorded outcome
	// and may be handed to waiting duplicates.
	shared bool
	value  any
	err    error
}

// closedChan is what wait returns for a flight that has ended.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// wait returns a channel closed when f ends; f's outcome fields may be
// read once it is.
func (f *flight) wait() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return closedChan
	}
	if f.done == nil {
		f.done = make(chan struct{})
	}
	return f.done
}

// execution is what one owned call keeps in process while fn runs, in a
// single allocation: its heartbeat and fn's ctx with what it carries. Its
// flight, which same-key callers in process wait on, is made only by a
// Guard that keeps flights (see flightTable).
type execution struct {
	flight *flight
	hb     heartbeat
	run    running
	ctx    fnCtx // fn's
}

// flight returns the key's flight, or nil.
func (g *Guard) flight(key string) *flight {
	if g.inProcess {
		return nil
	}
	t := &g.flights
	t.mu.Lock()
	f := t.m[key]
	t.mu.Unlock()
	return f
}

// startFlight makes and returns the key's flight for a call of spec with
// payload fp, if the Guard keeps flights; nil if it does not.
func (g *Guard) startFlight(key string, fp Fingerprint, spec *Spec) *flight {
	if g.inProcess {
		return nil
	}
	f := &flight{fp: fp, spec: spec}
	t := &g.flights
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[string]*flight)
	}
	t.m[key] = f
	t.mu.Unlock()
	return f
}

// endFlight ends f, the key's flight if the Guard keeps flights.
func (g *Guard) endFlight(key string, f *flight, shared bool, value any, err error) {
	if !g.inProcess {
		g.flights.finish(key, f, shared, value, err)
	}
}

func (t *flightTable) finish(key string, f *flight, shared bool, value any, err error) {
	t.mu.Lock()
	if t.m[key] == f {
		delete(t.m, key)
	}
	t.mu.Unlock()
	f.mu.Lock()
	if f.ended {
		f.mu.Unlock()
		return
	}
	f.shared, f.value, f.err, f.ended = shared, value, err, true
	if f.done != nil {
		close(f.done)
	}
	f.mu.Unlock()
}
