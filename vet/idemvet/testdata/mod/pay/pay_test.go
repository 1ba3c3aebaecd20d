package pay

import (
	"context"
	"testing"
)

func TestCharge(t *testing.T) {
	if err := Charge(context.Background(), "t"); err != nil { // want `a direct call of Charge`
		t.Fatal(err)
	}
}
