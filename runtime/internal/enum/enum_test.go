package enum

import "testing"

func TestName(t *testing.T) {
	type action uint8
	names := []string{"", "ack", "requeue"}
	for _, tc := range []struct {
		v    action
		want string
	}{{0, "action(0)"}, {1, "ack"}, {2, "requeue"}, {3, "action(3)"}} {
		if got := Name(names, "action", tc.v); got != tc.want {
			t.Errorf("Name(%d) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
