package idemgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemgrpc"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// The service under test, registered by hand (no protoc): every method
// takes a StringValue and answers an Int64Value holding the run number of
// its handler, so a replay (the first run's number) is told apart from a
// second run.
const (
	service   = "idemgrpc.test.Payments"
	mCharge   = "/" + service + "/Charge"
	mRefund   = "/" + service + "/Refund"
	mFlaky    = "/" + service + "/Flaky"    // Unavailable on its first run
	mNotFound = "/" + service + "/NotFound" // always NotFound
	mBlock    = "/" + service + "/Block"    // waits for release
	mUpload   = "/" + service + "/Upload"   // bidirectional stream
)

type payments struct {
	runs    atomic.Int64
	started chan struct{} // Block closes it once
	release chan struct{}
	once    sync.Once
}

func newPayments() *payments {
	return &payments{started: make(chan struct{}), release: make(chan struct{})}
}

func (p *payments) call(ctx context.Context, method string, in *wrapperspb.StringValue) (*wrapperspb.Int64Value, error) {
	n := p.runs.Add(1)
	switch method {
	case mFlaky:
		if n == 1 {
			return nil, status.Error(codes.Unavailable, "try again")
		}
	case mNotFound:
		return nil, status.Errorf(codes.NotFound, "no account %q (run %d)", in.GetValue(), n)
	case mBlock:
		p.once.Do(func() { close(p.started) })
		<-p.release
	}
	return wrapperspb.Int64(n), nil
}

type paymentsServer interface {
	call(context.Context, string, *wrapperspb.StringValue) (*wrapperspb.Int64Value, error)
}

func unary(name string) grpc.MethodDesc {
	full := "/" + service + "/" + name
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			h := func(ctx context.Context, req any) (any, error) {
				return srv.(paymentsServer).call(ctx, full, req.(*wrapperspb.StringValue))
			}
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, h)
		},
	}
}

var paymentsDesc = grpc.ServiceDesc{
	ServiceName: service,
	HandlerType: (*paymentsServer)(nil),
	Methods:     []grpc.MethodDesc{unary("Charge"), unary("Refund"), unary("Flaky"), unary("NotFound"), unary("Block")},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Upload",
		ClientStreams: true,
		ServerStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			if err := stream.RecvMsg(new(wrapperspb.StringValue)); err != nil {
				return err
			}
			return stream.SendMsg(wrapperspb.Int64(7))
		},
	}},
}

// principal is the x-client metadata entry (a stand-in for authentication).
func principal(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get("x-client"); len(v) == 1 && v[0] != "" {
		return v[0], nil
	}
	return "", errors.New("no x-client metadata")
}

// listen returns a listener and the dialer option for it: bufconn in
// memory, or real TCP on the loopback interface.
func listen(t *testing.T, network string) (net.Listener, string, []grpc.DialOption) {
	t.Helper()
	switch network {
	case "bufconn":
		l := bufconn.Listen(1 << 20)
		return l, "passthrough:///bufnet", []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return l.DialContext(ctx)
		})}
	case "tcp":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l, l.Addr().String(), nil
	}
	t.Fatalf("network %q", network)
	return nil, "", nil
}

type serverSetup struct {
	network string
	store   idemstore.Store
	opts    []idemgrpc.Option
	outer   []grpc.UnaryServerInterceptor // before the idempotency interceptor
	client  []grpc.DialOption
}

// start serves p behind the interceptors and returns a client connection.
func start(t *testing.T, p *payments, s serverSetup) *grpc.ClientConn {
	t.Helper()
	if s.network == "" {
		s.network = "bufconn"
	}
	if s.store == nil {
		s.store = memstore.New()
	}
	is, err := idemgrpc.NewServer(idem.NewGuard(s.store), append([]idemgrpc.Option{idemgrpc.WithPrincipal(principal)}, s.opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(append(s.outer, is.UnaryInterceptor())...),
		grpc.ChainStreamInterceptor(is.StreamInterceptor()),
	)
	srv.RegisterService(&paymentsDesc, p)
	return serve(t, srv, s.network, s.client...)
}

// serve runs srv on network until the test ends and returns a client
// connection to it, dialed with client.
func serve(t *testing.T, srv *grpc.Server, network string, client ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	l, target, dial := listen(t, network)
	go srv.Serve(l) //nolint:errcheck // ends with Stop
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(target, append(append(dial, grpc.WithTransportCredentials(insecure.NewCredentials())), client...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

type call struct {
	method string
	key    []string // idempotency-key entries; nil = none
	client string   // x-client; "" = none
	arg    string
}

type result struct {
	Code     codes.Code
	Value    int64  // the run number answered, on OK
	Message  string // on an error
	Replayed bool
	Reason   string        // ErrorInfo reason of the interceptor's errors
	Retry    time.Duration // RetryInfo delay
}

func invoke(t *testing.T, conn *grpc.ClientConn, c call) result {
	t.Helper()
	return invokeCtx(t, context.Background(), conn, c)
}

func invokeCtx(t *testing.T, ctx context.Context, conn *grpc.ClientConn, c call) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, k := range c.key {
		ctx = metadata.AppendToOutgoingContext(ctx, idemgrpc.MetadataKey, k)
	}
	if c.client != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-client", c.client)
	}
	var header metadata.MD
	out := new(wrapperspb.Int64Value)
	err := conn.Invoke(ctx, c.method, wrapperspb.String(c.arg), out, grpc.Header(&header))
	r := result{Replayed: len(header.Get(idemgrpc.ReplayMetadataKey)) == 1 && header.Get(idemgrpc.ReplayMetadataKey)[0] == "true"}
	if err == nil {
		r.Value = out.GetValue()
		return r
	}
	st := status.Convert(err)
	r.Code, r.Message = st.Code(), st.Message()
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() == idemgrpc.ErrorDomain {
				r.Reason = d.GetReason()
			}
		case *errdetails.RetryInfo:
			r.Retry = d.GetRetryDelay().AsDuration()
		}
	}
	return r
}

func ok(run int64) result       { return result{Value: run} }
func replayed(run int64) result { return result{Value: run, Replayed: true} }

// TestUnaryInterceptor: the interceptor's answers, call by call.
func TestUnaryInterceptor(t *testing.T) {
	k := []string{"k-1"}
	malformed := func(msg string) result {
		return result{Code: codes.InvalidArgument, Reason: idemgrpc.ReasonKeyMalformed, Message: "malformed idempotency-key: " + msg}
	}
	tests := []struct {
		name  string
		opts  []idemgrpc.Option
		calls []call
		want  []result
		runs  int64
	}{
		{
			name:  "a retry with the same key replays",
			calls: []call{{method: mCharge, key: k, client: "a", arg: "5"}, {method: mCharge, key: k, client: "a", arg: "5"}},
			want:  []result{ok(1), replayed(1)},
			runs:  1,
		},
		{
			name:  "no key: unguarded by default",
			calls: []call{{method: mCharge, client: "a"}, {method: mCharge, client: "a"}},
			want:  []result{ok(1), ok(2)},
			runs:  2,
		},
		{
			name:  "no key on a method that requires one",
			opts:  []idemgrpc.Option{idemgrpc.WithKeyRequired(func(m string) bool { return m == mCharge })},
			calls: []call{{method: mCharge, client: "a"}, {method: mRefund, client: "a"}},
			want: []result{
				{Code: codes.InvalidArgument, Reason: idemgrpc.ReasonKeyMissing, Message: "this method requires an idempotency-key metadata entry"},
				ok(1),
			},
			runs: 1,
		},
		{
			name: "malformed keys",
			calls: []call{
				{method: mCharge, key: []string{"a", "b"}, client: "a"},
				{method: mCharge, key: []string{strings.Repeat("k", 256)}, client: "a"},
				{method: mCharge, key: []string{""}, client: "a"},
			},
			want: []result{
				malformed("2 Idempotency-Key headers; send exactly one"),
				malformed("the key is 256 bytes long; the limit is 255"),
				malformed("the key is empty"),
			},
		},
		{
			name:  "the same key with another request",
			calls: []call{{method: mCharge, key: k, client: "a", arg: "5"}, {method: mCharge, key: k, client: "a", arg: "500"}},
			want: []result{ok(1), {Code: codes.FailedPrecondition, Reason: idemgrpc.ReasonKeyReused,
				Message: "this idempotency-key was used with a different request (method or message); send a new key for a new request"}},
			runs: 1,
		},
		{
			name:  "the same key on another method is another call",
			calls: []call{{method: mCharge, key: k, client: "a"}, {method: mRefund, key: k, client: "a"}, {method: mRefund, key: k, client: "a"}},
			want:  []result{ok(1), ok(2), replayed(2)},
			runs:  2,
		},
		{
			name:  "keys are scoped by principal",
			calls: []call{{method: mCharge, key: k, client: "a"}, {method: mCharge, key: k, client: "b"}},
			want:  []result{ok(1), ok(2)},
			runs:  2,
		},
		{
			name:  "no principal",
			calls: []call{{method: mCharge, key: k}},
			want: []result{{Code: codes.Unauthenticated, Reason: idemgrpc.ReasonPrincipalUnknown,
				Message: "the client of this call could not be identified: no x-client metadata"}},
		},
		{
			name:  "an error releases the key: the retry runs again",
			calls: []call{{method: mFlaky, key: k, client: "a"}, {method: mFlaky, key: k, client: "a"}, {method: mFlaky, key: k, client: "a"}},
			want:  []result{{Code: codes.Unavailable, Message: "try again"}, ok(2), replayed(2)},
			runs:  2,
		},
		{
			name:  "errors are not recorded by default",
			calls: []call{{method: mNotFound, key: k, client: "a", arg: "x"}, {method: mNotFound, key: k, client: "a", arg: "x"}},
			want:  []result{{Code: codes.NotFound, Message: `no account "x" (run 1)`}, {Code: codes.NotFound, Message: `no account "x" (run 2)`}},
			runs:  2,
		},
		{
			name:  "WithRecordCodes records and replays the status",
			opts:  []idemgrpc.Option{idemgrpc.WithRecordCodes(codes.NotFound)},
			calls: []call{{method: mNotFound, key: k, client: "a", arg: "x"}, {method: mNotFound, key: k, client: "a", arg: "x"}},
			want:  []result{{Code: codes.NotFound, Message: `no account "x" (run 1)`}, {Code: codes.NotFound, Message: `no account "x" (run 1)`, Replayed: true}},
			runs:  1,
		},
		{
			name:  "WithMethods leaves other methods alone",
			opts:  []idemgrpc.Option{idemgrpc.WithMethods(func(m string) bool { return m == mRefund })},
			calls: []call{{method: mCharge, key: k, client: "a"}, {method: mCharge, key: k, client: "a"}},
			want:  []result{ok(1), ok(2)},
			runs:  2,
		},
	}
	for _, network := range []string{"bufconn", "tcp"} {
		for _, tc := range tests {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				p := newPayments()
				conn := start(t, p, serverSetup{network: network, opts: tc.opts})
				var got []result
				for _, c := range tc.calls {
					got = append(got, invoke(t, conn, c))
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("results (-want +got):\n%s", diff)
				}
				if n := p.runs.Load(); n != tc.runs {
					t.Errorf("handler ran %d times, want %d", n, tc.runs)
				}
			})
		}
	}
}

// TestInFlightIsAborted: a call whose key is held by a running call gets
// Aborted with a RetryInfo, then the replay once the first is done.
func TestInFlightIsAborted(t *testing.T) {
	p := newPayments()
	conn := start(t, p, serverSetup{opts: []idemgrpc.Option{idemgrpc.WithRetryAfter(2 * time.Second)}})
	c := call{method: mBlock, key: []string{"k"}, client: "a"}
	first := make(chan result)
	go func() { first <- invoke(t, conn, c) }()
	<-p.started
	got := []result{invoke(t, conn, c)}
	close(p.release)
	got = append(got, <-first, invoke(t, conn, c))
	want := []result{
		{Code: codes.Aborted, Reason: idemgrpc.ReasonInProgress, Retry: 2 * time.Second,
			Message: "a call with the same idempotency-key is in progress; retry later with the same key"},
		ok(1), replayed(1),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStoreUnavailable: the method does not run and the client gets
// Unavailable with a RetryInfo (the Guard fails closed).
func TestStoreUnavailable(t *testing.T) {
	p := newPayments()
	down := idemtest.NewOutageStore()
	down.ClaimDown.Store(true)
	conn := start(t, p, serverSetup{store: down})
	got := invoke(t, conn, call{method: mCharge, key: []string{"k"}, client: "a"})
	want := result{Code: codes.Unavailable, Reason: idemgrpc.ReasonStoreUnavailable, Retry: time.Second,
		Message: "the call was not processed; retry with the same key"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p.runs.Load() != 0 {
		t.Error("the method ran with the store down")
	}
}

// TestStreamsWithAKeyAreRefused: streaming RPCs are out of scope; one that
// carries a key is refused (Unimplemented), one without passes through.
func TestClientStreamsWithAKeyAreRefused(t *testing.T) {
	conn := start(t, newPayments(), serverSetup{})
	desc := &grpc.StreamDesc{StreamName: "Upload", ClientStreams: true, ServerStreams: true}
	for _, tc := range []struct {
		name     string
		key      bool
		wantCode codes.Code
	}{{"without key", false, codes.OK}, {"with key", true, codes.Unimplemented}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.key {
				ctx = idemgrpc.WithKey(ctx, "k")
			}
			st, err := conn.NewStream(ctx, desc, mUpload)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SendMsg(wrapperspb.String("")); err != nil {
				t.Fatal(err)
			}
			st.CloseSend() //nolint:errcheck
			err = st.RecvMsg(new(wrapperspb.Int64Value))
			if got := status.Code(err); got != tc.wantCode {
				t.Errorf("code %v (%v), want %v", got, err, tc.wantCode)
			}
		})
	}
}

func TestNewServer(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	for _, tc := range []struct {
		name string
		opts []idemgrpc.Option
		want string // substring of the error, "" = ok
	}{
		{"no principal", nil, "needs WithPrincipal"},
		{"principal", []idemgrpc.Option{idemgrpc.WithPrincipal(principal)}, ""},
		{"without principal", []idemgrpc.Option{idemgrpc.WithoutPrincipal()}, ""},
		{"both", []idemgrpc.Option{idemgrpc.WithoutPrincipal(), idemgrpc.WithPrincipal(principal)}, "exclusive"},
		{"nil principal", []idemgrpc.Option{idemgrpc.WithPrincipal(nil)}, "WithPrincipal(nil)"},
		{"bad lease", []idemgrpc.Option{idemgrpc.WithoutPrincipal(), idemgrpc.WithCall(idemcall.WithLease(0))}, "WithLease(0s)"},
		{"empty name", []idemgrpc.Option{idemgrpc.WithoutPrincipal(), idemgrpc.WithCall(idemcall.WithName(""))}, "empty name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := idemgrpc.NewServer(g, tc.opts...)
			if got := fmt.Sprint(err); (tc.want == "") != (err == nil) || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
