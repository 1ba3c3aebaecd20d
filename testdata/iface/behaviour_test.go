package iface

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
)

// fakeCarrier counts what reaches it.
type fakeCarrier struct {
	name    string
	mu      sync.Mutex
	books   int
	quotes  int
	tracks  int
	cancels int
	closed  bool
}

func (f *fakeCarrier) Book(_ context.Context, order string, s Shipment) (Booking, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.books++
	return Booking{Ref: fmt.Sprintf("%s-%s-%d", f.name, order, f.books), Cents: int64(s.Kg) * 100}, nil
}

func (f *fakeCarrier) Quote(_ context.Context, order string, s Shipment) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.quotes++
	return int64(s.Kg)*100 + int64(f.quotes), nil
}

func (f *fakeCarrier) Track(ref string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tracks++
	return "in transit: " + ref, nil
}

func (f *fakeCarrier) Cancel(context.Context, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels++
	return nil
}

func (f *fakeCarrier) cancelled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancels
}

func (f *fakeCarrier) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeCarrier) count() (books, quotes, tracks int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.books, f.quotes, f.tracks
}

func TestDecoratorIsADropInCarrier(t *testing.T) {
	ctx := context.Background()
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			inner := &fakeCarrier{name: "fedex"}
			var c Carrier = NewIdempotentCarrier(inner, g.g) // still a Carrier
			s := Shipment{From: "Berlin", To: "Lyon", Kg: 3}
			tests := []struct {
				name  string
				order string
				s     Shipment
				want  Booking
				books int
			}{
				{"first call runs", "o1", s, Booking{"fedex-o1-1", 300}, 1},
				{"same call replays the typed result", "o1", s, Booking{"fedex-o1-1", 300}, 1},
				{"another order runs", "o2", s, Booking{"fedex-o2-2", 300}, 2},
				{"another shipment runs", "o1", Shipment{From: "Berlin", To: "Lyon", Kg: 4}, Booking{"fedex-o1-3", 400}, 3},
			}
			for _, tt := range tests {
				got, err := c.Book(ctx, tt.order, tt.s)
				if err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("%s: booking (-want +got):\n%s", tt.name, diff)
				}
				if books, _, _ := inner.count(); books != tt.books {
					t.Errorf("%s: inner Book ran %d times, want %d", tt.name, books, tt.books)
				}
			}
			// Unannotated and embedded methods reach the inner Carrier every time.
			for i := 0; i < 2; i++ {
				if got, err := c.Track("r1"); err != nil || got != "in transit: r1" {
					t.Fatalf("Track: %q %v", got, err)
				}
			}
			if _, _, tracks := inner.count(); tracks != 2 {
				t.Errorf("Track ran %d times, want 2 (delegated, not guarded)", tracks)
			}
			if err := c.Close(); err != nil || !inner.closed {
				t.Errorf("Close: %v, closed=%v", err, inner.closed)
			}
		})
	}
}

func TestDecoratorRunsOncePerKeyUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			inner := &fakeCarrier{name: "ups"}
			c := NewIdempotentCarrier(inner, g.g)
			var mu sync.Mutex
			refs := map[string]bool{}
			errs := storm(16, func() error {
				b, err := c.Book(ctx, "o9", Shipment{Kg: 1})
				mu.Lock()
				refs[b.Ref] = true
				mu.Unlock()
				return err
			})
			for _, err := range errs {
				if err != nil {
					t.Fatal(err) // on_duplicate=wait: every caller gets the result
				}
			}
			if books, _, _ := inner.count(); books != 1 || len(refs) != 1 {
				t.Fatalf("Book ran %d times with %d results, want 1 and 1", books, len(refs))
			}
		})
	}
}

func TestKeyedMethodWithPayload(t *testing.T) {
	ctx := context.Background()
	inner := &fakeCarrier{name: "dhl"}
	c := NewIdempotentCarrier(inner, newGuard(t))
	s := Shipment{Kg: 2}
	first, err := c.Quote(ctx, "o1", s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Quote(ctx, "o1", s)
	if err != nil || again != first {
		t.Fatalf("replay: %d %v, want %d", again, err, first)
	}
	if _, err := c.Quote(ctx, "o1", Shipment{Kg: 5}); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Fatalf("same order, other shipment: got %v, want ErrPayloadMismatch", err)
	}
	if _, quotes, _ := inner.count(); quotes != 1 {
		t.Fatalf("Quote ran %d times, want 1", quotes)
	}
	k1, err := c.QuoteKey("o1", s)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := c.QuoteKey("o1", Shipment{Kg: 9})
	if err != nil || k1 != k2 {
		t.Fatalf("QuoteKey: the key is the order alone: %q vs %q (%v)", k1, k2, err)
	}
}

// Two implementations decorated on one Guard share the interface
// method's key space: the second one's call is a replay of the first's.
func TestImplementationsShareTheKeySpace(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t)
	fedex, ups := &fakeCarrier{name: "fedex"}, &fakeCarrier{name: "ups"}
	a, b := NewIdempotentCarrier(fedex, g), NewIdempotentCarrier(ups, g)
	want, err := a.Book(ctx, "o1", Shipment{Kg: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Book(ctx, "o1", Shipment{Kg: 1})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replay across implementations (-want +got):\n%s", diff)
	}
	if n, _, _ := ups.count(); n != 0 {
		t.Errorf("the second implementation ran %d times, want 0", n)
	}
}

// Carrier embeds Canceller, whose Cancel is annotated there: the
// Carrier decorator guards it through the Canceller decorator, in one key
// space with it.
func TestEmbeddedAnnotatedMethodStaysGuarded(t *testing.T) {
	ctx := context.Background()
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			inner := &fakeCarrier{name: "fedex"}
			c := NewIdempotentCarrier(inner, g.g)
			tests := []struct {
				name    string
				call    func() error
				cancels int
			}{
				{"first cancel runs", func() error { return c.Cancel(ctx, "r1") }, 1},
				{"same cancel replays", func() error { return c.Cancel(ctx, "r1") }, 1},
				{"through the Canceller decorator: same key space", func() error { return NewIdempotentCanceller(inner, g.g).Cancel(ctx, "r1") }, 1},
				{"another ref runs", func() error { return c.Cancel(ctx, "r2") }, 2},
			}
			for _, tt := range tests {
				if err := tt.call(); err != nil {
					t.Fatalf("%s: %v", tt.name, err)
				}
				if got := inner.cancelled(); got != tt.cancels {
					t.Errorf("%s: inner Cancel ran %d times, want %d", tt.name, got, tt.cancels)
				}
			}
		})
	}
}

// fakeNotifier counts its calls.
type fakeNotifier struct {
	notified, resets counter
	logs             []string
}

func (f *fakeNotifier) Notify(context.Context, string, string) error { f.notified.inc(); return nil }
func (f *fakeNotifier) Reset(context.Context, string) error          { f.resets.inc(); return nil }
func (f *fakeNotifier) Name() string                                 { return "fake" }
func (f *fakeNotifier) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func TestInterfaceDirective(t *testing.T) {
	ctx := context.Background()
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			inner := &fakeNotifier{}
			var n Notifier = NewIdempotentNotifier(inner, g.g)
			for i := 0; i < 3; i++ {
				if err := n.Notify(ctx, "ann", "hi"); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.Notify(ctx, "bob", "hi"); err != nil {
				t.Fatal(err)
			}
			if got := inner.notified.get(); got != 2 {
				t.Errorf("Notify ran %d times, want 2 (once per key)", got)
			}
			if err := n.Reset(ctx, "r1"); err != nil {
				t.Fatal(err)
			}
			if err := n.Reset(ctx, "r1"); !errors.Is(err, idem.ErrDuplicate) {
				t.Errorf("Reset's own on_duplicate=raise: got %v, want ErrDuplicate", err)
			}
			n.Logf("%s=%d", "a", 1)
			n.Logf("%s=%d", "a", 1)
			if diff := cmp.Diff([]string{"a=1", "a=1"}, inner.logs); diff != "" || n.Name() != "fake" {
				t.Errorf("delegated methods (-want +got):\n%s name %q", diff, n.Name())
			}
		})
	}
	if idemSpecNotifierReset.TTL != idemSpecNotifierNotify.TTL || idemSpecNotifierReset.OnDuplicate != idem.DuplicateRaise {
		t.Errorf("Reset's spec: ttl %v (want the interface's %v), on_duplicate %v", idemSpecNotifierReset.TTL, idemSpecNotifierNotify.TTL, idemSpecNotifierReset.OnDuplicate)
	}
}
