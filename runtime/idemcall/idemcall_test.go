package idemcall_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
)

func TestSpec(t *testing.T) {
	base := idem.Spec{Name: "adapter", OnDuplicate: idem.DuplicateWait}
	tests := []struct {
		name    string
		opts    []idemcall.Option
		want    idem.Spec
		wantErr string
	}{
		{"none keeps the base", nil, base, ""},
		{"every setting", []idemcall.Option{idemcall.WithName("orders"), idemcall.WithVersion(2), idemcall.WithTTL(time.Hour), idemcall.WithLease(time.Second), idemcall.WithWait(3 * time.Second)},
			idem.Spec{Name: "orders", Version: 2, TTL: time.Hour, Lease: time.Second, OnDuplicate: idem.DuplicateWait, Wait: 3 * time.Second}, ""},
		{"no wait", []idemcall.Option{idemcall.WithWait(0)}, idem.Spec{Name: "adapter", OnDuplicate: idem.DuplicateReturn}, ""},
		{"empty name", []idemcall.Option{idemcall.WithName("")}, idem.Spec{OnDuplicate: idem.DuplicateWait}, "WithName: empty name"},
		{"zero ttl, then a bad lease: the first error", []idemcall.Option{idemcall.WithTTL(0), idemcall.WithLease(-time.Second)},
			idem.Spec{Name: "adapter", Lease: -time.Second, OnDuplicate: idem.DuplicateWait}, "WithTTL(0s): must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := idemcall.Spec(base, tc.opts...)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("error %q, want %q", gotErr, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(idem.Spec{})); d != "" {
				t.Errorf("Spec (-want +got):\n%s", d)
			}
		})
	}
}
