package reliability

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/test/reliability/work"
)

// stepKills are the moments the recovery-points scenario kills a worker
// at, in turn: at a random time, right after a step was recorded (between
// two steps), and inside a step (its ledger row written, its result not).
var stepKills = []string{"random", "between steps", "inside a step"}

// recovery is the recovery-points scenario: a worker runs a three-step
// function (work.Steps) on a few keys and is SIGKILLed; the harness reads
// which steps each record holds, then a fresh worker retries every key.
// A step the record held must not run again (goal: 0); only a step that
// was in flight may, at most once per kill.
func (h *harness) recovery(t *testing.T, store string, sz sizes) row {
	prefix := fmt.Sprintf("%s/steps/", store)
	start := time.Now()
	v := &violations{}
	reader, closeReader, err := openStore(context.Background(), h.base(store, "steps", ""))
	if err != nil {
		t.Fatalf("opening %s to read steps: %v", store, err)
	}
	defer closeReader()
	if _, ok := reader.(idemstore.Stepper); !ok {
		t.Fatalf("%s does not keep recovery points (idemstore.Stepper): every store must", store)
	}
	keyOf := work.NewIdempotentEffects(&work.Effects{}, idem.NewGuard(reader)).StepsKey
	var (
		mu        sync.Mutex
		recorded  = map[string]map[string]bool{} // key → steps its record held after the kill
		inFlight  = map[string]string{}          // key → the step running at the kill
		kills     = map[string]int{}
		completed = 0
	)
	trials(sz, prefix, func(trial int, keys []string) {
		cfg := h.base(store, "steps", "")
		cfg.Keys, cfg.Goroutines = keys, len(keys)
		cfg.HoldMin, cfg.HoldMax = 50*time.Millisecond, 250*time.Millisecond
		p := h.start(t, cfg)
		if _, ok := p.waitMark("ready", "", time.Minute); !ok {
			v.add("trial %d: worker never became ready: %s", trial, p.stderrTail())
			return
		}
		how := stepKills[trial%len(stepKills)]
		step := work.StepNames[rand.N(len(work.StepNames)-1)]
		switch how {
		case "random":
			time.Sleep(rand.N(900 * time.Millisecond))
		case "between steps":
			p.waitMark("stepped:"+step, keys[0], 30*time.Second)
		case "inside a step":
			p.waitMark("step:"+step, keys[0], 30*time.Second)
			time.Sleep(20 * time.Millisecond)
		}
		p.signal(syscall.SIGKILL)
		<-p.done
		held := map[string]map[string]bool{}
		for _, k := range keys {
			sk, err := keyOf(k)
			if err != nil {
				v.add("%s: store key: %v", k, err)
				return
			}
			rec, err := reader.Get(context.Background(), sk)
			held[k] = map[string]bool{}
			if err != nil && !errors.Is(err, idem.ErrNotFound) {
				v.add("%s: reading its record after the kill: %v", k, err)
			}
			for name := range rec.Steps {
				held[k][name] = true
			}
		}
		mu.Lock()
		kills[how]++
		for _, k := range keys {
			recorded[k] = held[k]
			if ph := p.lastPhase(k); strings.HasPrefix(ph, "step:") {
				inFlight[k] = strings.TrimPrefix(ph, "step:")
			}
		}
		mu.Unlock()
		rep, err := h.retry(t, store, "steps-recover", keys)
		if err != nil {
			v.add("trial %d: retry worker: %v", trial, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, c := range rep.Calls {
			if c.Class != "ok" {
				v.add("%s: retry after the kill failed: %s", c.Key, c.Err)
				continue
			}
			completed++
		}
	})
	rows := h.executions(t, prefix)
	completedAgain, inFlightAgain, inFlightKills := 0, 0, len(inFlight)
	for k, held := range recorded {
		for _, step := range work.StepNames {
			rs := rows[work.StepLedgerKey(k, step)]
			switch {
			case len(rs) == 0:
				v.add("%s: step %s never ran", k, step)
			case len(rs) == 1:
			case held[step]:
				completedAgain++
				v.add("%s: step %s ran %d times although its record held it after the kill", k, step, len(rs))
			case inFlight[k] == step && len(rs) == 2:
				inFlightAgain++
			default:
				v.add("%s: step %s ran %d times (in flight at the kill: %q)", k, step, len(rs), inFlight[k])
			}
		}
	}
	var ks []string
	for _, how := range stepKills {
		ks = append(ks, fmt.Sprintf("%s %d", how, kills[how]))
	}
	return row{
		Store: store, Scenario: "recovery points (SIGKILL)",
		Trials:   fmt.Sprintf("%d kills × %d keys × 3 steps", sz.crashTrials, sz.crashKeys),
		Expected: fmt.Sprintf("%d calls complete; completed steps re-run: 0; in-flight steps re-run ≤ keys killed inside a step", sz.crashTrials*sz.crashKeys),
		Observed: fmt.Sprintf("%d complete; completed steps re-run: %d; in-flight steps re-run: %d of %d keys killed inside a step",
			completed, completedAgain, inFlightAgain, inFlightKills),
		Notes: "kills: " + strings.Join(ks, ", "),
		v:     v, took: time.Since(start),
	}
}
