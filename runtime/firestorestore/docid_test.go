package firestorestore

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
)

// TestDocIDLimits: a key whose document ID Firestore cannot hold is
// idem.ErrInvalidKey (which a fail-open Guard never rides out), counted
// after escaping, which can triple a key's length.
func TestDocIDLimits(t *testing.T) {
	cases := []struct {
		name    string
		key     string
		invalid bool
	}{
		{"Empty", "", true},
		{"AtLimit", strings.Repeat("k", maxDocID-1), false},
		{"PastLimit", strings.Repeat("k", maxDocID), true},
		{"PastLimitOnceEscaped", strings.Repeat("/", maxDocID/3+1), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := docID(tc.key)
			if got := errors.Is(err, idem.ErrInvalidKey); got != tc.invalid {
				t.Errorf("docID of a %d-byte key: %v, want invalid=%v", len(tc.key), err, tc.invalid)
			}
		})
	}
}
