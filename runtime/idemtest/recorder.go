package idemtest

import (
	"sync"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Recorder is an idem.Observer that keeps every event it is given, for
// tests that check what a Guard reported. It is safe for concurrent use;
// its zero value is ready.
type Recorder struct {
	mu     sync.Mutex
	events []idem.Event
}

// Observe keeps e.
func (r *Recorder) Observe(e idem.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events is a copy of the events kept so far, in order.
func (r *Recorder) Events() []idem.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]idem.Event(nil), r.events...)
}

// Outcomes names the outcomes of the events kept so far, in order (nil
// for none).
func (r *Recorder) Outcomes() []string {
	var out []string
	for _, e := range r.Events() {
		out = append(out, e.Outcome.String())
	}
	return out
}
