package redisstore

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/internal/testenv"
)

// logRecorder keeps what go-redis logs.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, v...))
}

// TestNewLogsNothing: New's reachability probe is silent. Its first
// version copied the client's options, maintenance-notification handlers
// included, and go-redis logged "failed to initialize maintnotifications:
// … cannot overwrite existing handler" to the application's stderr at
// every New (the README test saw it in a user's program).
func TestNewLogsNothing(t *testing.T) {
	rec := &logRecorder{}
	redis.SetLogger(rec)
	defer redis.SetLogger(stderrLogger{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	standalone(t) // skips, or fails under CI, without Redis
	addr := testenv.RedisAddr()
	// A fresh client, as an application makes one: New first, then its
	// own calls (the probe's copy used to take the handlers' slot first).
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	s, err := New(context.Background(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(context.Background(), "idem-newlog-test"); err == nil {
		t.Fatal("Get of a missing key: no error")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range rec.msgs {
		if strings.Contains(m, "maintnotifications") {
			t.Errorf("go-redis logged: %s", m)
		}
	}
}

type stderrLogger struct{ l *log.Logger }

func (s stderrLogger) Printf(_ context.Context, format string, v ...any) {
	s.l.Output(2, fmt.Sprintf(format, v...)) //nolint:errcheck
}
