package idem

import (
	"container/heap"
	"sync"
	"time"
)

// alarms runs functions at given monotonic instants for one Guard, on a
// single runtime timer set for the earliest of them. Every owned call
// needs two (its next heartbeat, and the moment its lease runs out without
// one). It is kept for speed against a time.AfterFunc per heartbeat
// (docs/BENCHMARKS.md, "What each speed mechanism earns"). Arming a runtime timer earlier than any the runtime waits
// for wakes its network poller, and a stopped runtime timer can linger in
// the runtime's heap holding its function (and through it the Guard).
// Calls start in time order, so a new alarm is rarely the earliest and
// the one timer is rarely re-armed; a call that ends removes its alarms,
// and a timer that then finds nothing due simply sets itself for the next
// one.
//
// Each due function runs in its own goroutine, as with time.AfterFunc: a
// heartbeat may block on the store while another call's lease runs out.
type alarms struct {
	mu    sync.Mutex
	q     alarmQueue
	timer *time.Timer
	armed time.Duration // the instant timer is set for; 0 when not set
}

// alarm is one scheduled function. The zero value is unscheduled.
type alarm struct {
	at time.Duration // since monoBase
	fn ringer
	i  int // index in the queue + 1; 0 when not queued
}

// ringer is what an alarm runs. An interface rather than a func: a
// heartbeat passes itself (a pointer), where a method value or closure
// would cost the first execution an allocation per alarm.
type ringer interface{ ring() }

// alarmFunc runs a plain function as an alarm.
type alarmFunc func()

func (f alarmFunc) ring() { f() }

// set schedules al to run fn at the monotonic instant at (since
// monoBase), replacing any earlier schedule of al.
func (a *alarms) set(al *alarm, at time.Duration, fn ringer) {
	a.mu.Lock()
	al.at, al.fn = at, fn
	if al.i > 0 {
		heap.Fix(&a.q, al.i-1)
	} else {
		heap.Push(&a.q, al)
	}
	if a.armed == 0 || at < a.armed {
		a.arm(at, time.Since(monoBase))
	}
	a.mu.Unlock()
}

// stop unschedules al; it reports whether al was still to run.
func (a *alarms) stop(al *alarm) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if al.i == 0 {
		return false
	}
	heap.Remove(&a.q, al.i-1)
	return true
}

func (a *alarms) arm(at, now time.Duration) {
	if a.timer == nil {
		a.timer = time.AfterFunc(at-now, a.fire)
	} else {
		a.timer.Reset(at - now)
	}
	a.armed = at
}

// fire runs what is due and sets the timer for what is next.
func (a *alarms) fire() {
	now := time.Since(monoBase)
	var due []ringer
	a.mu.Lock()
	for len(a.q) > 0 && a.q[0].at <= now {
		due = append(due, heap.Pop(&a.q).(*alarm).fn)
	}
	a.armed = 0
	if len(a.q) > 0 {
		a.arm(a.q[0].at, now)
	}
	a.mu.Unlock()
	for _, fn := range due {
		go fn.ring()
	}
}

// alarmQueue is a min-heap of alarms by instant (container/heap).
type alarmQueue []*alarm

func (q alarmQueue) Len() int           { return len(q) }
func (q alarmQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q alarmQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].i, q[j].i = i+1, j+1
}
func (q *alarmQueue) Push(x any) {
	al := x.(*alarm)
	al.i = len(*q) + 1
	*q = append(*q, al)
}
func (q *alarmQueue) Pop() any {
	old := *q
	al := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	al.i = 0
	return al
}
