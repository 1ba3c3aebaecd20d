package filestore

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestNewRefusesOptions: options a store cannot work with fail New, with
// an error that is not idem.ErrStoreUnavailable (nothing is wrong with the
// directory).
func TestNewRefusesOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"nil clock", []Option{WithClock(nil)}, "filestore: WithClock(nil)"},
		{"zero poll interval", []Option{WithPollInterval(0)}, "filestore: WithPollInterval(0s): not positive"},
		{"negative poll interval", []Option{WithPollInterval(-time.Second)}, "filestore: WithPollInterval(-1s): not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(t.TempDir(), tt.opts...)
			if err == nil {
				t.Fatalf("New = %v, nil; want an error", s)
			}
			if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
				t.Errorf("New error (-want +got):\n%s", diff)
			}
			if errors.Is(err, idem.ErrStoreUnavailable) {
				t.Errorf("New error %v wraps idem.ErrStoreUnavailable", err)
			}
		})
	}
}
