package idem_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestFunctionIdentity: two functions that share a name= share a key
// space, and a call of one must never be answered with the other's
// record: not its result, not its recorded failure, not ErrDuplicate.
// It gets ErrFunctionMismatch (an ErrResultIncompatible) and does not
// run. The same function under another process's Spec value replays as
// before.
func TestFunctionIdentity(t *testing.T) {
	first := idem.Spec{Name: "test.Shared", Signature: "sig-a", TTL: time.Hour}
	other := func(mod func(*idem.Spec)) idem.Spec {
		s := first
		mod(&s)
		return s
	}
	cases := []struct {
		name      string
		writer    idem.Spec
		fails     bool // the writer fails under on_failure=lock
		reader    idem.Spec
		mismatch  bool
		wantValue string
	}{
		{name: "OtherSignature", writer: first, reader: other(func(s *idem.Spec) { s.Signature = "sig-b" }), mismatch: true},
		{name: "OtherSignatureRaise", writer: first, reader: other(func(s *idem.Spec) {
			s.Signature, s.OnDuplicate = "sig-b", idem.DuplicateRaise
		}), mismatch: true},
		{name: "OtherSignatureWait", writer: first, reader: other(func(s *idem.Spec) {
			s.Signature, s.OnDuplicate = "sig-b", idem.DuplicateWait
		}), mismatch: true},
		{name: "HandWrittenReadsGenerated", writer: first, reader: other(func(s *idem.Spec) { s.Signature = "" }), mismatch: true},
		{name: "GeneratedReadsHandWritten", writer: other(func(s *idem.Spec) { s.Signature = "" }), reader: first, mismatch: true},
		{name: "RecordedFailure", writer: other(func(s *idem.Spec) { s.OnFailure = idem.FailureLock }), fails: true,
			reader: other(func(s *idem.Spec) { s.Signature, s.OnFailure = "sig-b", idem.FailureLock }), mismatch: true},
		{name: "RecordedFailureRaise", writer: other(func(s *idem.Spec) { s.OnFailure = idem.FailureLock }), fails: true,
			reader: other(func(s *idem.Spec) { s.Signature, s.OnDuplicate = "sig-b", idem.DuplicateRaise }), mismatch: true},
		{name: "SameFunctionOtherSpecValue", writer: first, reader: first, wantValue: "written"},
		{name: "SameFunctionOtherMode", writer: first, reader: other(func(s *idem.Spec) { s.OnDuplicate = idem.DuplicateWait }), wantValue: "written"},
	}
	stores := []struct {
		name string
		new  func() idemstore.Store
	}{
		{"Memory", func() idemstore.Store { return memstore.New() }}, // replays hand back the Go value
		{"BytesOnly", func() idemstore.Store { return bytesOnly{memstore.New()} }},
	}
	for _, sc := range stores {
		for _, tc := range cases {
			t.Run(sc.name+"/"+tc.name, func(t *testing.T) {
				g := idem.NewGuard(sc.new())
				ctx := context.Background()
				// Distinct Spec values, as two packages' would be, in two
				// processes: in one, the second is refused before it reads
				// (TestSpecNameInProcess).
				writer, reader := tc.writer, tc.reader
				idem.ForgetSpecs()
				_, err := call(ctx, g, &writer, "k", func(context.Context) (string, error) {
					if tc.fails {
						return "", errors.New("declined")
					}
					return "written", nil
				})
				if tc.fails != (err != nil) {
					t.Fatalf("writer: %v", err)
				}
				var runs atomic.Int64
				idem.ForgetSpecs()
				got, err := call(ctx, g, &reader, "k", func(context.Context) (string, error) { runs.Add(1); return "read", nil })
				if n := runs.Load(); n != 0 {
					t.Errorf("reader ran %d times over an existing record, want 0", n)
				}
				if !tc.mismatch {
					if err != nil || got != tc.wantValue {
						t.Fatalf("reader = %q, %v; want the replay %q", got, err, tc.wantValue)
					}
					return
				}
				if !errors.Is(err, idem.ErrFunctionMismatch) || !errors.Is(err, idem.ErrResultIncompatible) {
					t.Errorf("reader err = %v, want ErrFunctionMismatch (an ErrResultIncompatible)", err)
				}
				var rec *idem.RecordedError
				if got != "" || errors.Is(err, idem.ErrDuplicate) || errors.As(err, &rec) {
					t.Errorf("reader was answered from the writer's record: %q, %v", got, err)
				}
			})
		}
	}
}

// TestFunctionIdentityInProcess: a waiting caller of another function
// that shares the running one's name and key is not handed its value in
// process either (were the name check of the process passed).
func TestFunctionIdentityInProcess(t *testing.T) {
	g := idem.NewGuard(networked{memstore.New()}) // keeps flights
	ctx := context.Background()
	a := &idem.Spec{Name: "test.Flight", Signature: "sig-a", OnDuplicate: idem.DuplicateWait}
	b := &idem.Spec{Name: "test.Flight", Signature: "sig-b", OnDuplicate: idem.DuplicateWait}
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := call(ctx, g, a, "k", func(context.Context) (string, error) {
			close(started)
			<-finish
			return "a's", nil
		})
		done <- err
	}()
	<-started
	idem.ForgetSpecs() // b is refused in process otherwise, before it waits
	got := make(chan error)
	go func() {
		v, err := call(ctx, g, b, "k", func(context.Context) (string, error) { return "b ran", nil })
		if v != "" {
			err = fmt.Errorf("b got %q (%v)", v, err)
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond) // b waits on a's flight
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-got; !errors.Is(err, idem.ErrFunctionMismatch) {
		t.Errorf("b: %v, want ErrFunctionMismatch", err)
	}
}

// TestSpecNameInProcess: the signature leaves type and field names out,
// so two functions of one shape given one name= (Charge(ChargeReq)
// (Receipt, error) and MakeRefund(RefundReq) (Refund, error)) write the
// same identity header, and records cannot tell them apart. In one
// process, the second Spec with a signature that uses a name and version
// is refused at its first call, whatever its key: ErrFunctionMismatch,
// before the store is asked or fn runs. The first keeps working.
func TestSpecNameInProcess(t *testing.T) {
	cases := []struct {
		name    string
		second  func(first *idem.Spec) *idem.Spec
		refused bool
	}{
		{"SameShape", func(f *idem.Spec) *idem.Spec {
			return &idem.Spec{Name: f.Name, Signature: f.Signature, TTL: time.Hour}
		}, true},
		{"OtherSignature", func(f *idem.Spec) *idem.Spec { return &idem.Spec{Name: f.Name, Signature: "sig-b"} }, true},
		{"Copy", func(f *idem.Spec) *idem.Spec { c := *f; return &c }, true},
		{"HandWrittenBeside", func(f *idem.Spec) *idem.Spec { return &idem.Spec{Name: f.Name} }, false},
		{"OtherVersion", func(f *idem.Spec) *idem.Spec { return &idem.Spec{Name: f.Name, Version: 2, Signature: f.Signature} }, false},
		{"SameSpec", func(f *idem.Spec) *idem.Spec { return f }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := idemtest.NewCountingStore()
			g := idem.NewGuard(st)
			first := &idem.Spec{Name: "test.InProcess" + tc.name, Signature: "sig-a"}
			if v, err := call(ctx, g, first, "charge", func(context.Context) (string, error) { return "receipt", nil }); err != nil || v != "receipt" {
				t.Fatalf("first = %q, %v", v, err)
			}
			second := tc.second(first)
			for i := range 2 { // refused at every call, not only the first
				claims := st.Calls("claim")
				var runs atomic.Int64
				v, err := call(ctx, g, second, "refund", func(context.Context) (string, error) { runs.Add(1); return "refund", nil })
				got := []any{v, errors.Is(err, idem.ErrFunctionMismatch), errors.Is(err, idem.ErrResultIncompatible), runs.Load(), st.Calls("claim") - claims}
				want := []any{"refund", false, false, int64(1), int64(1)}
				if i > 0 && !tc.refused {
					want = []any{"refund", false, false, int64(0), int64(1)} // a replay
				}
				if tc.refused {
					want = []any{"", true, true, int64(0), int64(0)}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("call %d of the second Spec (%v): [value, ErrFunctionMismatch, ErrResultIncompatible, runs, claims] (-want +got):\n%s", i+1, err, diff)
				}
			}
			if v, err := call(ctx, g, first, "charge", func(context.Context) (string, error) { return "ran again", nil }); err != nil || v != "receipt" {
				t.Errorf("first's replay = %q, %v; want its receipt", v, err)
			}
		})
	}
}

// A Spec's first calls may come at once: each claims its own name.
func TestSpecNameFirstCallsAtOnce(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "test.AtOnce", Signature: "sig-a"}
	errs := make(chan error, 16)
	for i := range cap(errs) {
		go func() {
			_, err := call(context.Background(), g, spec, fmt.Sprint(i), func(context.Context) (int, error) { return i, nil })
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestRecordHeader: records carry their function's identity; records of
// builds from before the header are read unchecked, and a damaged header
// is ErrCorruptRecord.
func TestRecordHeader(t *testing.T) {
	ctx := context.Background()
	spec := &idem.Spec{Name: "test.Header", Version: 3, Signature: "s1"}
	cases := []struct {
		name    string
		data    []byte // planted as the completed record's bytes
		want    string
		wantErr error
	}{
		{"LegacyJSON", []byte(`"from an older build"`), "from an older build", nil},
		{"Truncated", []byte{idemimpl.RecordMarker}, "", idem.ErrCorruptRecord},
		{"FutureLayout", []byte{idemimpl.RecordMarker, idemimpl.RecordVersion + 1}, "", idem.ErrCorruptRecord},
		{"PreviousLayout", []byte{idemimpl.RecordMarker, idemimpl.RecordVersion - 1, 1, 'x', 0, 2, 's', '1', '"', '"'}, "", idem.ErrCorruptRecord},
		{"BadSignature", []byte{idemimpl.RecordMarker, idemimpl.RecordVersion, 40, 'x'}, "", idem.ErrCorruptRecord},
		{"OtherSignature", []byte{idemimpl.RecordMarker, idemimpl.RecordVersion, 2, 's', '2', '"', 'x', '"'}, "", idem.ErrFunctionMismatch},
		{"OwnSignature", []byte{idemimpl.RecordMarker, idemimpl.RecordVersion, 2, 's', '1', '"', 'x', '"'}, "x", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			g := idem.NewGuard(store)
			c := g.Begin(spec, "k")
			key, err := c.StoreKey()
			if err != nil {
				t.Fatal(err)
			}
			var fp idemstore.Fingerprint // without a Payload, the key's hash, its last 64 hex digits
			if _, err := hex.Decode(fp[:], []byte(key[len(key)-64:])); err != nil {
				t.Fatal(err)
			}
			res, err := store.Claim(ctx, idemstore.ClaimRequest{Key: key, Fingerprint: fp, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			l := idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
			if err := store.Complete(ctx, l, idemstore.Result{Data: tc.data}); err != nil {
				t.Fatal(err)
			}
			got, err := call(ctx, g, spec, "k", func(context.Context) (string, error) { return "ran", nil })
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}

	// What a record written now carries.
	store := &captureStore{bytesOnly: bytesOnly{memstore.New()}}
	g := idem.NewGuard(store)
	if _, err := call(ctx, g, spec, "k", func(context.Context) (string, error) { return "v", nil }); err != nil {
		t.Fatal(err)
	}
	h, body, ok, err := idemimpl.SplitRecord(store.last)
	if err != nil || !ok {
		t.Fatalf("SplitRecord: ok=%v, %v", ok, err)
	}
	if diff := cmp.Diff(idemimpl.RecordHeader{Signature: "s1"}, h); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if string(body) != `"v"` {
		t.Errorf("body = %q, want the Guard codec's %q", body, `"v"`)
	}
}
