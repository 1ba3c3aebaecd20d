package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestEvictionPolicyCheck sets the eviction configuration of a private
// server (never the shared one) and checks what the store says and does at
// first use.
func TestEvictionPolicyCheck(t *testing.T) {
	rdb := privateClient(t)
	ctx := context.Background()
	tests := []struct {
		policy    string
		maxmemory string
		mode      EvictionMode
		wantLog   string // level=… of the check's message, "" for none
		wantErr   bool
	}{
		{"noeviction", "100mb", EvictionRefuse, "", false},
		{"allkeys-lru", "100mb", EvictionWarn, "WARN", false},
		{"volatile-lru", "100mb", EvictionWarn, "WARN", false}, // our keys all have TTLs
		{"volatile-ttl", "100mb", EvictionRefuse, "ERROR", true},
		{"allkeys-lfu", "100mb", EvictionRefuse, "ERROR", true},
		{"allkeys-lru", "0", EvictionRefuse, "INFO", false}, // no limit: nothing is evicted
		{"allkeys-lru", "100mb", EvictionIgnore, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.policy+"/"+tt.maxmemory, func(t *testing.T) {
			if err := rdb.ConfigSet(ctx, "maxmemory-policy", tt.policy).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.ConfigSet(ctx, "maxmemory", tt.maxmemory).Err(); err != nil {
				t.Fatal(err)
			}
			var log idemtest.SyncBuffer
			s, err := New(context.Background(), rdb, WithKeyPrefix(testPrefix(t)), WithEvictionCheck(tt.mode),
				WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i := 0; i < 2; i++ { // the check runs once; its verdict sticks
				_, err = s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{byte(i + 1)}, Lease: time.Second, TTL: time.Second})
				if tt.wantErr != (err != nil) {
					t.Fatalf("claim %d = %v, want error %v", i, err, tt.wantErr)
				}
			}
			if tt.wantErr && (!errors.Is(err, ErrUnsafeEviction) || !errors.Is(err, idem.ErrStoreUnavailable)) {
				t.Fatalf("refusal = %v, want ErrUnsafeEviction and ErrStoreUnavailable", err)
			}
			got := log.String()
			if tt.wantLog == "" && got != "" {
				t.Fatalf("unexpected log: %s", got)
			}
			if tt.wantLog != "" && (!strings.Contains(got, "level="+tt.wantLog) || !strings.Contains(got, tt.policy) || strings.Count(got, "\n") != 1) {
				t.Fatalf("log = %q, want one %s line naming %s", got, tt.wantLog, tt.policy)
			}
		})
	}
}
