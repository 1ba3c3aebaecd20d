package p

import (
	"context"
	"io"
	"testing"
)

// Store is generic: refused (a non-generic interface with the
// instantiated methods can be annotated).
//
//idem:ttl=1h
type Store[T any] interface {
	Put(ctx context.Context, v T) error
}

// Keyed puts options that name one method's parameters or key space on
// the interface.
//
//idem:key=id name=billing.get
type Keyed interface {
	Get(ctx context.Context, id string) error
}

// Sizer's directive applies to no method.
//
//idem:ttl=1h
type Sizer interface {
	Size() int
}

type Carrier interface {
	// Book tries to key the implementation.
	//
	//idem:key=c.ID
	Book(ctx context.Context, id string) error

	// Len returns no error.
	//
	//idem:ttl=1h
	Len() int

	//idem:ttl=1h
	io.Closer
}

// Biller's Charge has the name= of the function Charge: one key space.
type Biller interface {
	//idem:name=shipping.charge
	Charge(ctx context.Context, id string) error
}

// Charge is a function with the same name=.
//
//idem:name=shipping.charge
func Charge(ctx context.Context, id string) error { return nil }

// Checker embeds testing.TB, whose unexported method no decorator here
// can implement.
type Checker interface {
	testing.TB
	//idem:ttl=1h
	Check(ctx context.Context, id string) error
}

// Waiter's directive is wrong once, and reported once, however many
// methods it applies to.
//
//idem:wait=5s
type Waiter interface {
	A(ctx context.Context, id string) error
	B(ctx context.Context, id string) error
}

// Streamer's directive guards Stream, whose channel cannot be keyed: the
// advised exclude= goes on Stream's own //idem: line. (Last in the file:
// TestAdviceApplies inserts that line, moving the lines below it.)
//
//idem:ttl=1h
type Streamer interface {
	Stream(context.Context, chan int, string) error
}
