package idemimpl_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestCtxErr: a timeout at (or within DeadlineSlack of) the ctx's
// deadline is the ctx's, before its timer fired too; a timeout well
// before it, or an error that is no timeout, is not.
func TestCtxErr(t *testing.T) {
	bg := context.Background()
	canceled, cancel := context.WithCancel(bg)
	cancel()
	netTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"done ctx, any error", canceled, errors.New("x"), context.Canceled},
		{"net timeout, deadline passed", idemtest.DueCtx(bg, time.Now().Add(-time.Millisecond)), netTimeout, context.DeadlineExceeded},
		{"wrapped timeout, deadline within the slack", idemtest.DueCtx(bg, time.Now().Add(idemimpl.DeadlineSlack/2)), fmt.Errorf("x: %w", netTimeout), context.DeadlineExceeded},
		{"net timeout, deadline a second away", idemtest.DueCtx(bg, time.Now().Add(time.Second)), netTimeout, nil},
		{"refused, deadline passed", idemtest.DueCtx(bg, time.Now().Add(-time.Millisecond)), errors.New("connection refused"), nil},
		{"net timeout, no deadline", bg, netTimeout, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := idemimpl.CtxErr(tc.ctx, tc.err); got != tc.want {
				t.Errorf("CtxErr = %v, want %v", got, tc.want)
			}
		})
	}
}
