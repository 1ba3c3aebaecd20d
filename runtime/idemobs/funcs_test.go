package idemobs_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idemobs"
)

// TestFuncs: each name's value is made once, by its first Get, whether
// the name is found by the scan of the first few or by the map, and
// whether its first sightings race; All yields every name made.
func TestFuncs(t *testing.T) {
	tests := []struct {
		name  string
		names int
	}{
		{"within the scanned names", 3},
		{"past the scanned names", 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var made atomic.Int32
			f := idemobs.NewFuncs(func(name string) *string {
				made.Add(1)
				v := "v-" + name
				return &v
			})
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for i := range tt.names {
						name := "f" + strconv.Itoa(i)
						if got := *f.Get(name); got != "v-"+name {
							t.Errorf("Get(%q) = %q", name, got)
						}
					}
				})
			}
			wg.Wait()
			if n := int(made.Load()); n != tt.names {
				t.Errorf("values made = %d; want %d, one per name", n, tt.names)
			}
			want := map[string]string{}
			for i := range tt.names {
				want["f"+strconv.Itoa(i)] = "v-f" + strconv.Itoa(i)
			}
			got := map[string]string{}
			for k, v := range f.All() {
				got[k] = *v
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("All (-want +got):\n%s", diff)
			}
			if first, again := f.Get("f0"), f.Get("f0"); first != again {
				t.Error("Get returned two values for one name")
			}
		})
	}
}
