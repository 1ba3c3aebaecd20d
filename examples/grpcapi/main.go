// Command grpcapi is a gRPC service behind idemgrpc: grpc's health
// service stands in for a payments API (no protoc needed), a client with
// the idempotency interceptor and a retry policy calls it, the first
// response is lost after the method ran, and the retry gets the replay.
//
//	go run ./grpcapi
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemgrpc"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// retryPolicy: grpc retries Unavailable itself, re-sending the metadata,
// so every attempt carries the key the interceptor minted.
const retryPolicy = `{"methodConfig":[{"name":[{"service":"grpc.health.v1.Health"}],
 "retryPolicy":{"maxAttempts":3,"initialBackoff":"0.05s","maxBackoff":"0.2s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`

// service counts its runs: the side effect that must happen once.
type service struct {
	grpc_health_v1.UnimplementedHealthServer
	runs atomic.Int64
}

func (s *service) Check(context.Context, *grpc_health_v1.HealthCheckRequest) (*grpc_health_v1.HealthCheckResponse, error) {
	s.runs.Add(1)
	return &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}, nil
}

// loseFirst drops the first response after the method ran, as a network
// or proxy failure would: the client sees Unavailable and retries.
func loseFirst() grpc.UnaryServerInterceptor {
	var n atomic.Int64
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if n.Add(1) == 1 {
			return nil, status.Error(codes.Unavailable, "response lost")
		}
		return resp, err
	}
}

func run(ctx context.Context, out io.Writer) (runs int64, err error) {
	s, err := idemgrpc.NewServer(idem.NewGuard(memstore.New()),
		idemgrpc.WithPrincipal(func(ctx context.Context) (string, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			if v := md.Get("x-account"); len(v) == 1 {
				return v[0], nil // from your authentication
			}
			return "", fmt.Errorf("no x-account metadata")
		}))
	if err != nil {
		return 0, err
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(loseFirst(), s.UnaryInterceptor()),
		grpc.ChainStreamInterceptor(s.StreamInterceptor()),
	)
	svc := &service{}
	grpc_health_v1.RegisterHealthServer(srv, svc)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	go srv.Serve(l) //nolint:errcheck // ends with Stop
	defer srv.Stop()

	conn, err := grpc.NewClient(l.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(idemgrpc.UnaryClientInterceptor()),
		grpc.WithDefaultServiceConfig(retryPolicy),
	)
	if err != nil {
		return 0, err
	}
	defer conn.Close()

	ctx = metadata.AppendToOutgoingContext(ctx, "x-account", "acct_1")
	var header metadata.MD
	resp, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "payments"}, grpc.Header(&header))
	if err != nil {
		return svc.runs.Load(), err
	}
	fmt.Fprintf(out, "status %v, replayed %v, method runs %d\n", resp.GetStatus(), header.Get(idemgrpc.ReplayMetadataKey), svc.runs.Load())
	return svc.runs.Load(), nil
}

func main() {
	if _, err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "grpcapi:", err)
		os.Exit(1)
	}
}
