package firestorestore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/firestorestore"
)

// project is the emulator project the tests use; each test has its own
// collection in it.
const project = "idemgen-test"

// rpcCounter counts the gRPC calls a client makes, by method (a
// server-streaming read is one call, as it is one round trip).
type rpcCounter struct {
	mu    sync.Mutex
	calls map[string]int // method name (Commit, BatchGetDocuments…) -> calls
}

func (c *rpcCounter) add(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[method[strings.LastIndexByte(method, '/')+1:]]++
}

// reset returns the calls counted since the last reset.
func (c *rpcCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.calls
	c.calls = map[string]int{}
	return m
}

func (c *rpcCounter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.add(method)
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *rpcCounter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	c.add(method)
	return streamer(ctx, desc, cc, method, opts...)
}

// emulatorClient is a client of the emulator at addr, as
// FIRESTORE_EMULATOR_HOST would configure it (plaintext, the emulator's
// "owner" credentials), with counter (if not nil) counting its calls.
func emulatorClient(t testing.TB, addr string, counter *rpcCounter, extra ...grpc.DialOption) *firestore.Client {
	t.Helper()
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(ownerCreds{}),
	}
	if counter != nil {
		dial = append(dial, grpc.WithUnaryInterceptor(counter.unary), grpc.WithStreamInterceptor(counter.stream))
	}
	conn, err := grpc.NewClient(addr, append(dial, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := firestore.NewClient(context.Background(), project, option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ownerCreds is what the emulator takes for an administrator's request.
type ownerCreds struct{}

func (ownerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (ownerCreds) RequireTransportSecurity() bool { return false }

// emulator returns a client of the test emulator, skipping (or failing
// under CI=true) when it does not answer.
func emulator(t testing.TB) *firestore.Client {
	t.Helper()
	c := emulatorClient(t, testenv.FirestoreEmulatorHost(), nil)
	// One probe per process: the client retries a refused port until the
	// probe's 5s run out, which every test would otherwise pay.
	probe.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.Collection("probe").Doc("probe").Get(ctx)
		if err != nil && !isNotFound(err) {
			probe.err = err
		}
	})
	testenv.Need(t, "the Firestore emulator at "+testenv.FirestoreEmulatorHost(),
		"start it with `make services` or `scripts/firestore.sh`, or set IDEM_FIRESTORE_EMULATOR_HOST", probe.err)
	return c
}

var probe struct {
	once sync.Once
	err  error
}

// collection is a collection name no other test (or run) uses.
func collection(t testing.TB) string {
	return "idem_" + testenv.RandName()
}

func newStore(t testing.TB, c *firestore.Client, opts ...firestorestore.Option) *firestorestore.Store {
	t.Helper()
	opts = append([]firestorestore.Option{firestorestore.WithPollInterval(5*time.Millisecond, 100*time.Millisecond)}, opts...)
	s, err := firestorestore.New(context.Background(), c, collection(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
