package idemgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemgrpc"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// tokens is a server-streaming service: Count sends the numbers 1 to n
// (its request) as "<run>:<i>", one every gap; "fail" fails with the code
// it is set to after two messages.
type tokens struct {
	gap  time.Duration
	runs atomic.Int64
	fail codes.Code
}

const mCount = "/idemgrpc.test.Tokens/Count"

var tokensDesc = grpc.ServiceDesc{
	ServiceName: "idemgrpc.test.Tokens",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "Count",
		ServerStreams: true,
		Handler: func(srv any, stream grpc.ServerStream) error {
			in := new(wrapperspb.Int64Value)
			if err := stream.RecvMsg(in); err != nil {
				return err
			}
			return srv.(*tokens).count(in.GetValue(), stream)
		},
	}},
}

func (tk *tokens) count(n int64, stream grpc.ServerStream) error {
	run := tk.runs.Add(1)
	for i := int64(1); i <= n; i++ {
		if tk.fail != codes.OK && i == 3 {
			return status.Errorf(tk.fail, "run %d failed", run)
		}
		time.Sleep(tk.gap)
		if err := stream.SendMsg(wrapperspb.String(fmt.Sprintf("%d:%d", run, i))); err != nil {
			return err
		}
	}
	return nil
}

func startTokens(t *testing.T, tk *tokens, opts ...idemgrpc.Option) *grpc.ClientConn {
	t.Helper()
	is, err := idemgrpc.NewServer(idem.NewGuard(memstore.New()), append([]idemgrpc.Option{idemgrpc.WithoutPrincipal()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.ChainStreamInterceptor(is.StreamInterceptor()))
	srv.RegisterService(&tokensDesc, tk)
	return serve(t, srv, "tcp")
}

// received is what one call of Count got.
type received struct {
	Run      string
	Replayed bool
	Msgs     []string
	Code     codes.Code
}

// count calls Count(n) with key; resume, if set, is its resume entry; it
// stops after max messages (all if max < 0).
func count(t *testing.T, conn *grpc.ClientConn, key, resume string, n int64, max int) received {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = idemgrpc.WithKey(ctx, key)
	if resume != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, idemgrpc.ResumeMetadataKey, resume)
	}
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, mCount)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendMsg(wrapperspb.Int64(n)); err != nil {
		t.Fatal(err)
	}
	st.CloseSend() //nolint:errcheck
	var r received
	for max < 0 || len(r.Msgs) < max {
		m := new(wrapperspb.StringValue)
		if err := st.RecvMsg(m); err != nil {
			if !errors.Is(err, io.EOF) {
				r.Code = status.Code(err)
			}
			break
		}
		r.Msgs = append(r.Msgs, m.GetValue())
	}
	h, _ := st.Header()
	if v := h.Get(idemgrpc.RunMetadataKey); len(v) == 1 {
		r.Run = v[0]
	}
	r.Replayed = len(h.Get(idemgrpc.ReplayMetadataKey)) == 1
	return r
}

// A call that drops after two messages resumes from its offset; a call
// after the end gets every message, replayed; the method ran once.
func TestServerStreamResumesFromAnOffset(t *testing.T) {
	tk := &tokens{gap: 20 * time.Millisecond}
	conn := startTokens(t, tk)
	first := count(t, conn, "k1", "", 5, 2)
	if first.Run == "" || first.Replayed || len(first.Msgs) != 2 {
		t.Fatalf("first call: %+v", first)
	}
	rest := count(t, conn, "k1", first.Run+"-2", 5, -1)
	want := received{Run: first.Run, Replayed: true, Msgs: []string{"1:3", "1:4", "1:5"}}
	if diff := cmp.Diff(want, rest); diff != "" {
		t.Fatalf("resumed call (-want +got):\n%s", diff)
	}
	all := count(t, conn, "k1", "", 5, -1)
	want.Msgs = []string{"1:1", "1:2", "1:3", "1:4", "1:5"}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Fatalf("a call after the end (-want +got):\n%s", diff)
	}
	if n := tk.runs.Load(); n != 1 {
		t.Fatalf("the method ran %d times, want once", n)
	}
}

// Calls with the key while the first streams attach to it and get every
// message in order.
func TestServerStreamDuplicatesAttach(t *testing.T) {
	tk := &tokens{gap: 30 * time.Millisecond}
	conn := startTokens(t, tk)
	got := make(chan received, 4)
	for i := range 4 {
		go func() {
			time.Sleep(time.Duration(i) * 25 * time.Millisecond)
			got <- count(t, conn, "k2", "", 4, -1)
		}()
	}
	var msgs [][]string
	for range 4 {
		msgs = append(msgs, (<-got).Msgs)
	}
	for _, m := range msgs {
		if diff := cmp.Diff([]string{"1:1", "1:2", "1:3", "1:4"}, m); diff != "" {
			t.Errorf("a call's messages (-want +got):\n%s", diff)
		}
	}
	if n := tk.runs.Load(); n != 1 {
		t.Fatalf("the method ran %d times, want once", n)
	}
}

// An offset in a run that is not the key's gets the key's run from its
// first message, under a header that names it.
func TestServerStreamResumeOfAnotherRun(t *testing.T) {
	conn := startTokens(t, &tokens{})
	all := count(t, conn, "k3", "", 3, -1)
	got := count(t, conn, "k3", "999-2", 3, -1)
	if got.Run == "999" || got.Run != all.Run {
		t.Fatalf("run %q, want the key's %q", got.Run, all.Run)
	}
	if diff := cmp.Diff(all.Msgs, got.Msgs); diff != "" {
		t.Fatalf("messages (-want +got):\n%s", diff)
	}
}

// A method's error is recorded and replayed when its code is
// (WithRecordCodes), after the same messages; otherwise it goes to its
// call only and a retry runs the method again.
func TestServerStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []idemgrpc.Option
		wantRuns int64
	}{
		{"recorded", []idemgrpc.Option{idemgrpc.WithRecordCodes(codes.FailedPrecondition)}, 1},
		{"not recorded", nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := &tokens{fail: codes.FailedPrecondition}
			conn := startTokens(t, tk, tc.opts...)
			for range 2 {
				got := count(t, conn, "k4", "", 5, -1)
				if got.Code != codes.FailedPrecondition || len(got.Msgs) != 2 {
					t.Fatalf("call: %+v, want two messages and FailedPrecondition", got)
				}
			}
			if n := tk.runs.Load(); n != tc.wantRuns {
				t.Fatalf("the method ran %d times, want %d", n, tc.wantRuns)
			}
		})
	}
}
