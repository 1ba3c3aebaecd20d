package impl

import (
	"bytes"
	"errors"
	"testing"
)

// A compressed record that inflates past the limit (a hostile store
// writer's bomb) is ErrCorruptRecord, not an allocation of its size.
func TestInflateBound(t *testing.T) {
	rec := bytes.Repeat([]byte{'x'}, 1<<20)
	stored, err := Transform{CompressMin: 1}.Seal("f", "k", rec)
	if err != nil || len(stored) >= len(rec)/100 {
		t.Fatalf("compressed %d bytes to %d, %v", len(rec), len(stored), err)
	}
	if out, err := (Transform{}).Open("f", "k", stored, 1<<20); err != nil || !bytes.Equal(out, rec) {
		t.Fatalf("within the limit: %d bytes, %v", len(out), err)
	}
	if _, err := (Transform{}).Open("f", "k", stored, 1<<16); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("past the limit: %v, want ErrCorruptRecord", err)
	}
}
