package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestZZRepro(t *testing.T) {
	for _, d := range []time.Duration{200 * time.Millisecond, time.Second, 5 * time.Second} {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		ctx, cancel := context.WithTimeout(context.Background(), d)
		start := time.Now()
		err := rdb.Ping(ctx).Err()
		t.Logf("%v: %v: %v", d, time.Since(start), err)
		cancel()
		start = time.Now()
		c, err := rdb.Options().Dialer(context.Background(), "tcp", "127.0.0.1:1")
		t.Logf("dial: %v: %v %v", time.Since(start), c, err)
	}
}
