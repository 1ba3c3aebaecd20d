// Package idemgrpc_test runs the gRPC interceptors on a networked store.
package idemgrpc_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemgrpc"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// health is grpc's health service with a Check that counts its runs and
// fails with Unavailable on the first, after its effect (the count): a
// response lost to the client.
type health struct {
	grpc_health_v1.UnimplementedHealthServer
	runs atomic.Int64
}

func (h *health) Check(ctx context.Context, _ *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	h.runs.Add(1)
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// TestTwoServersShareRedis: two server instances on one Redis; the first
// response is lost on instance A, the client's retry reaches instance B
// (round robin over both) and gets the replay: the method ran once in all.
func TestTwoServersShareRedis(t *testing.T) {
	addr := testenv.RedisAddr()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	testenv.Need(t, "Redis at "+addr, "start it (e.g. sudo service redis-server start) or set IDEM_REDIS_ADDR", rdb.Ping(ctx).Err())
	store, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix("idemgrpc-test:"+testenv.RandName()+":"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	svc := &health{}
	var attempts atomic.Int64
	var mu sync.Mutex
	var servedBy []string
	var targets []string
	for _, name := range []string{"A", "B"} {
		s, err := idemgrpc.NewServer(idem.NewGuard(store), idemgrpc.WithoutPrincipal())
		if err != nil {
			t.Fatal(err)
		}
		lose := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			mu.Lock()
			servedBy = append(servedBy, name)
			mu.Unlock()
			resp, err := h(ctx, req)
			if attempts.Add(1) == 1 {
				return nil, status.Error(codes.Unavailable, "response lost")
			}
			return resp, err
		}
		srv := grpc.NewServer(grpc.ChainUnaryInterceptor(lose, s.UnaryInterceptor()))
		grpc_health_v1.RegisterHealthServer(srv, svc)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(l) //nolint:errcheck // ends with Stop
		t.Cleanup(srv.Stop)
		targets = append(targets, l.Addr().String())
	}
	// One connection per instance, tried in turn: the retry goes to B.
	var conns []*grpc.ClientConn
	for _, target := range targets {
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns = append(conns, conn)
	}
	ctx = idemgrpc.WithKey(context.Background(), "health-"+testenv.RandName())
	var replays []string
	var codesSeen []codes.Code
	for _, conn := range conns {
		var header metadata.MD
		_, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "payments"}, grpc.Header(&header))
		codesSeen = append(codesSeen, status.Code(err))
		replays = append(replays, header.Get(idemgrpc.ReplayMetadataKey)...)
	}
	type outcome struct {
		Codes    []codes.Code
		Replays  []string
		ServedBy []string
		Runs     int64
	}
	got := outcome{codesSeen, replays, servedBy, svc.runs.Load()}
	want := outcome{[]codes.Code{codes.Unavailable, codes.OK}, []string{"true"}, []string{"A", "B"}, 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
