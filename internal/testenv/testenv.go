// Package testenv is what the project's tests share to reach the machine's
// services: where they are, and the one rule for a missing one — skip with
// a how-to-start message on a developer's machine, fail under CI=true, where
// a skipped store test would hide a broken set-up.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"strings"
	"testing"
)

// Env returns the environment variable name, or def when it is unset.
func Env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// RedisAddr is IDEM_REDIS_ADDR, by default the machine's Redis.
func RedisAddr() string { return Env("IDEM_REDIS_ADDR", "127.0.0.1:6379") }

// PostgresURL is IDEM_POSTGRES_URL, by default the machine's PostgreSQL.
func PostgresURL() string { return Env("IDEM_POSTGRES_URL", "postgres://127.0.0.1:5432/test") }

// FirestoreEmulatorHost is the Firestore emulator's host:port:
// IDEM_FIRESTORE_EMULATOR_HOST, else FIRESTORE_EMULATOR_HOST (the variable
// Google's clients read), else the one `make services` starts
// (scripts/firestore.sh).
func FirestoreEmulatorHost() string {
	return Env("IDEM_FIRESTORE_EMULATOR_HOST", Env("FIRESTORE_EMULATOR_HOST", "127.0.0.1:8765"))
}

// Need stops the test when err says the service what is missing: it fails
// under CI=true and skips otherwise, saying how to start it.
func Need(t testing.TB, what, howto string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not reachable (CI=true, so this fails): %v\n%s", what, err, howto)
	}
	t.Skipf("%s is not reachable: %v\n%s", what, err, howto)
}

// RandName returns 12 random hex characters, for schema names, key
// prefixes and streams that must not collide between runs.
func RandName() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// RepeatedPhrase returns the first sequence of n words that occurs twice
// in msg, or "" if none does: an error message that says "store
// unavailable" twice (a sentinel wrapped by a message that repeats its
// text) reads as two failures. Words are split at spaces, with surrounding
// punctuation (":", ",", "(", ")", quotes) trimmed.
func RepeatedPhrase(msg string, n int) string {
	var words []string
	for _, w := range strings.Fields(msg) {
		if w = strings.Trim(w, `:;,.()[]"'`); w != "" {
			words = append(words, strings.ToLower(w))
		}
	}
	seen := map[string]bool{}
	for i := 0; i+n <= len(words); i++ {
		p := strings.Join(words[i:i+n], " ")
		if seen[p] {
			return p
		}
		seen[p] = true
	}
	return ""
}

// RefusedAddr returns a loopback address nothing listens on: a port the
// kernel handed out and that is closed again, so a dial is refused at
// once (tests of unreachable stores).
func RefusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
