package idem

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAlarms(t *testing.T) {
	var a alarms
	var mu sync.Mutex
	var fired []string
	done := make(chan struct{}, 16)
	record := func(name string) alarmFunc {
		return func() {
			mu.Lock()
			fired = append(fired, name)
			mu.Unlock()
			done <- struct{}{}
		}
	}
	now := time.Since(monoBase)
	ms := time.Millisecond
	var late, early, stopped, moved, past alarm
	a.set(&late, now+120*ms, record("late"))
	a.set(&early, now+40*ms, record("early")) // earlier than the armed one: re-arms
	a.set(&stopped, now+60*ms, record("stopped"))
	a.set(&moved, now+200*ms, record("moved"))
	a.set(&moved, now+80*ms, record("moved")) // re-set earlier
	a.set(&past, now-ms, record("past"))      // already due: runs at once
	if !a.stop(&stopped) {
		t.Fatal("stop of a queued alarm reported it was not queued")
	}
	if a.stop(&stopped) {
		t.Fatal("second stop reported the alarm queued")
	}
	for range 4 {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("alarms did not fire; fired so far %v", fired)
		}
	}
	time.Sleep(100 * time.Millisecond) // nothing else may fire
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"past", "early", "moved", "late"}, fired); diff != "" {
		t.Fatalf("fired (-want +got):\n%s", diff)
	}
	if a.stop(&late) {
		t.Fatal("stop of a fired alarm reported it queued")
	}
}

// Many goroutines setting and stopping alarms concurrently (run with
// -race): every alarm left set fires exactly once.
func TestAlarmsConcurrent(t *testing.T) {
	var a alarms
	const n = 200
	var wg sync.WaitGroup
	fired := make(chan int, n)
	als := make([]alarm, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			now := time.Since(monoBase)
			due := now + time.Duration(i%20)*time.Millisecond
			if i%2 == 1 {
				// Stopped ones are due well after their stop: a goroutine
				// descheduled for a few ms under -race on a loaded machine
				// must not let its alarm fire before the stop (a flake).
				due = now + time.Hour
			}
			a.set(&als[i], due, alarmFunc(func() { fired <- i }))
			if i%2 == 1 {
				a.stop(&als[i])
			}
		}()
	}
	wg.Wait()
	got := map[int]bool{}
	for range n / 2 {
		select {
		case i := <-fired:
			if i%2 == 1 || got[i] {
				t.Fatalf("alarm %d fired (stopped, or twice)", i)
			}
			got[i] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d alarms fired", len(got), n/2)
		}
	}
	select {
	case i := <-fired:
		t.Fatalf("alarm %d fired after all expected ones", i)
	case <-time.After(50 * time.Millisecond):
	}
}
