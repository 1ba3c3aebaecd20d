package funcoptions

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemgen/idemgen/testdata/funcoptions/sdk"
)

func TestSendWithOptionsReplays(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			client := &sdk.Client{}
			n := NewIdempotentNotifier(&Notifier{Queue: client}, ng.g)
			url, body := "https://queue/"+ng.store, "hello"
			in := &sdk.SendMessageInput{QueueURL: &url, Body: &body, Attributes: map[string]string{}}
			first, err := n.Send(ctx, in, func(o *sdk.Options) { o.Region = "us-east-1" })
			if err != nil {
				t.Fatal(err)
			}
			// Other options, same input: the same call (options are excluded).
			replay, err := n.Send(ctx, in, func(o *sdk.Options) { o.Retries = 5 })
			if err != nil {
				t.Fatal(err)
			}
			if sends := client.Sent(); sends != 1 {
				t.Fatalf("sent %d times, want 1", sends)
			}
			// ResultMetadata is omitted: a replay has its zero value.
			want := *first
			want.ResultMetadata = sdk.Metadata{}
			if diff := cmp.Diff(&want, replay, cmpopts.IgnoreUnexported(sdk.SendMessageOutput{}, sdk.Metadata{})); diff != "" {
				t.Errorf("replay differs (-want +replay):\n%s", diff)
			}
			if replay.ResultMetadata.Get("request-id") != nil {
				t.Error("replay carries the first call's ResultMetadata")
			}
			// Another body is another call.
			other := "bye"
			in2 := &sdk.SendMessageInput{QueueURL: &url, Body: &other, Attributes: map[string]string{}}
			if _, err := n.Send(ctx, in2); err != nil {
				t.Fatal(err)
			}
			if sends := client.Sent(); sends != 2 {
				t.Fatalf("sent %d times after another body, want 2", sends)
			}
		})
	}
}
