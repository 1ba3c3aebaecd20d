package idemgrpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/runtime/idemgrpc"
)

// retryPolicy is grpc's built-in retry: Unavailable is retried, with the
// same metadata, up to 3 attempts.
const retryPolicy = `{"methodConfig":[{"name":[{"service":"idemgrpc.test.Payments"}],
 "retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s","maxBackoff":"0.05s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]}`

// dropFirst is a server interceptor in front of the idempotency
// interceptor that loses the first call's response after the method ran
// (and its outcome was recorded): the client gets Unavailable, as when a
// proxy or a connection drops the answer. It notes each attempt's key.
type dropFirst struct {
	attempts atomic.Int64
	mu       sync.Mutex
	keys     []string
}

func (d *dropFirst) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	d.mu.Lock()
	d.keys = append(d.keys, md.Get(idemgrpc.MetadataKey)...)
	d.mu.Unlock()
	resp, err := h(ctx, req)
	if d.attempts.Add(1) == 1 {
		return nil, status.Error(codes.Unavailable, "response lost")
	}
	return resp, err
}

// retryOnce is a client interceptor that retries Unavailable once by
// itself, as retry middleware does: it calls what follows it once per
// attempt.
func retryOnce(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if status.Code(err) == codes.Unavailable {
		err = invoker(ctx, method, req, reply, cc, opts...)
	}
	return err
}

// TestClientRetryAfterDroppedResponseReplays: the first response is lost
// after the method ran; the retry carries the same key and gets the
// replay, so the method ran once. Without a key, or with the key minted
// per attempt (the client interceptor inside a retrying interceptor), the
// retry runs the method a second time: the cases that show why the key
// must be fixed per logical call.
func TestClientRetryAfterDroppedResponseReplays(t *testing.T) {
	tests := []struct {
		name     string
		dial     []grpc.DialOption
		ctx      func(context.Context) context.Context
		want     result
		runs     int64
		sameKeys bool
	}{
		{
			name:     "client interceptor, grpc retry policy",
			dial:     []grpc.DialOption{grpc.WithChainUnaryInterceptor(idemgrpc.UnaryClientInterceptor()), grpc.WithDefaultServiceConfig(retryPolicy)},
			want:     replayed(1),
			runs:     1,
			sameKeys: true,
		},
		{
			name:     "client interceptor outside a retrying interceptor",
			dial:     []grpc.DialOption{grpc.WithChainUnaryInterceptor(idemgrpc.UnaryClientInterceptor(), retryOnce)},
			want:     replayed(1),
			runs:     1,
			sameKeys: true,
		},
		{
			name: "caller's key kept, grpc retry policy",
			dial: []grpc.DialOption{grpc.WithChainUnaryInterceptor(idemgrpc.UnaryClientInterceptor()), grpc.WithDefaultServiceConfig(retryPolicy)},
			ctx: func(ctx context.Context) context.Context {
				return idemgrpc.WithKey(ctx, "order-1001")
			},
			want:     replayed(1),
			runs:     1,
			sameKeys: true,
		},
		{
			name: "no key: the retry runs again",
			dial: []grpc.DialOption{grpc.WithDefaultServiceConfig(retryPolicy)},
			want: ok(2),
			runs: 2,
		},
		{
			name: "client interceptor inside a retrying interceptor: a key per attempt",
			dial: []grpc.DialOption{grpc.WithChainUnaryInterceptor(retryOnce, idemgrpc.UnaryClientInterceptor())},
			want: ok(2),
			runs: 2,
		},
	}
	for _, network := range []string{"bufconn", "tcp"} {
		for _, tc := range tests {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				p := newPayments()
				d := &dropFirst{}
				conn := start(t, p, serverSetup{network: network, outer: []grpc.UnaryServerInterceptor{d.intercept}, client: tc.dial})
				ctx := context.Background()
				if tc.ctx != nil {
					ctx = tc.ctx(ctx)
				}
				got := invokeCtx(t, ctx, conn, call{method: mCharge, client: "a", arg: "5"})
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				if n := p.runs.Load(); n != tc.runs {
					t.Errorf("method ran %d times, want %d", n, tc.runs)
				}
				d.mu.Lock()
				defer d.mu.Unlock()
				same := len(d.keys) == 2 && d.keys[0] == d.keys[1]
				if n := d.attempts.Load(); n != 2 || same != tc.sameKeys {
					t.Errorf("%d attempts with keys %q; want 2 attempts, same key: %v", n, d.keys, tc.sameKeys)
				}
				if tc.ctx != nil && (len(d.keys) == 0 || d.keys[0] != "order-1001") {
					t.Errorf("keys %q, want the caller's", d.keys)
				}
			})
		}
	}
}
