package pgstore

import (
	"testing"

	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestStepNamePastTheLimit: a step name that alone passes what the store
// records is refused with idem.ErrStep before the step runs, instead of
// running and then failing to be recorded (ErrResultTooLarge) on every
// retry; a shorter name runs.
func TestStepNamePastTheLimit(t *testing.T) {
	s := newStore(t, nil)
	s.maxStep = 1000
	idemtest.StepNameLimit(t, s, 100, 1200)
}
