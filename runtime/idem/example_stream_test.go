package idem_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// A client whose connection drops in the middle of a streamed answer
// resumes where it stopped, and the answer is produced once.
func ExampleStream() {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "example.com/chat.Answer"}
	runs := 0
	answer := func(ctx context.Context, yield func(string) bool) error {
		runs++
		for _, w := range strings.Fields("streams resume where they stopped") {
			if !yield(w) {
				return nil
			}
		}
		return nil
	}
	ctx := context.Background()
	var cur idem.StreamCursor // what the client keeps (an SSE event ID)
	for w, err := range idem.Stream(idem.StreamFrom(ctx, &cur), g.Begin(spec, "conversation-1"), answer) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(cur.Next-1, w)
		if cur.Next == 2 {
			break // the connection drops; the answer is recorded to its end
		}
	}
	for w, err := range idem.Stream(idem.StreamFrom(ctx, &cur), g.Begin(spec, "conversation-1"), answer) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(cur.Next-1, w)
	}
	fmt.Println("runs:", runs)
	// Output:
	// 0 streams
	// 1 resume
	// 2 where
	// 3 they
	// 4 stopped
	// runs: 1
}
