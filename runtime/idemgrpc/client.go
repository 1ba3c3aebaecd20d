package idemgrpc

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/idemgen/idemgen/runtime/idemkey"
)

// ClientOption configures UnaryClientInterceptor.
type ClientOption func(*clientConfig)

type clientConfig struct {
	methods func(fullMethod string) bool
	newKey  func() string
}

// WithClientMethods sets which methods get a key (default: every unary
// method). Give reads none if the server does not require them.
func WithClientMethods(f func(fullMethod string) bool) ClientOption {
	return func(c *clientConfig) { c.methods = f }
}

// WithNewKey sets the key generator (default idemkey.New: a random
// version 4 UUID).
func WithNewKey(f func() string) ClientOption {
	return func(c *clientConfig) { c.newKey = f }
}

// WithKey returns ctx with key as the idempotency-key of the calls made
// with it: use it to fix the key of a logical call yourself (to retry it
// later, after a restart, with the same key).
func WithKey(ctx context.Context, key string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, MetadataKey, key)
}

// UnaryClientInterceptor gives each call an idempotency-key metadata entry
// unless its outgoing metadata has one already (WithKey, or
// metadata.AppendToOutgoingContext by the caller), which is kept.
//
// The key is minted once per invocation of the interceptor, and gRPC's
// built-in retries (a retryPolicy in the service config) and transparent
// retries happen below it, re-sending the same metadata: every attempt of
// a call carries the same key. Put it first in
// grpc.WithChainUnaryInterceptor, outside any retrying interceptor, which
// would otherwise call it once per attempt with a fresh key each time;
// or fix the key with WithKey before such an interceptor.
func UnaryClientInterceptor(opts ...ClientOption) grpc.UnaryClientInterceptor {
	cfg := clientConfig{methods: func(string) bool { return true }, newKey: idemkey.New}
	for _, o := range opts {
		o(&cfg)
	}
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if cfg.methods(method) {
			md, _ := metadata.FromOutgoingContext(ctx)
			if len(md.Get(MetadataKey)) == 0 {
				ctx = metadata.AppendToOutgoingContext(ctx, MetadataKey, cfg.newKey())
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}
