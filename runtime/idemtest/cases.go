package idemtest

import "testing"

func runSuite(t *testing.T, h Harness) { t.Skip("conformance suite lands shortly") }
