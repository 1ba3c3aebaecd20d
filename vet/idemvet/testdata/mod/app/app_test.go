package app

import (
	"context"
	"testing"

	"example.com/vt/pay"
)

func TestDirect(t *testing.T) {
	_ = pay.Charge(context.Background(), "t") // want `a direct call of pay\.Charge`
}
