package pgstore

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemgen/idemgen/runtime/idem"
)

// refusedPort returns a loopback address nothing listens on: a port the
// kernel handed out and that is closed again.
func refusedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestConstructorsAgainstARefusedPortAreStoreUnavailable: pgstore.New and
// Migrate over a pool whose server refuses connections fail with an error
// that errors.Is recognises as idem.ErrStoreUnavailable, keeps the network
// cause, and says "store unavailable" once. Before, New returned an
// untyped "reading schema version" error.
func TestConstructorsAgainstARefusedPortAreStoreUnavailable(t *testing.T) {
	addr := refusedPort(t)
	cfg, err := pgxpool.ParseConfig("postgres://idem@" + addr + "/test?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tests := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"New", func(ctx context.Context) error {
			s, err := New(ctx, pool)
			if s != nil {
				s.Close()
			}
			return err
		}},
		{"Migrate", func(ctx context.Context) error { return Migrate(ctx, pool) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := tt.run(ctx)
			if !errors.Is(err, idem.ErrStoreUnavailable) {
				t.Errorf("%s = %v, want an error wrapping idem.ErrStoreUnavailable", tt.name, err)
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s = %v, want the cause (connection refused) kept", tt.name, err)
			}
			if err != nil && strings.Count(err.Error(), "unavailable") != 1 {
				t.Errorf("%s = %q, want \"unavailable\" said once", tt.name, err)
			}
		})
	}
}
