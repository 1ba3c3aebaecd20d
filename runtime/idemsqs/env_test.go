package idemsqs_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemgen/idemgen/internal/testenv"
)

const sqsHint = "Start the SQS server: scripts/sqs.sh (make services does it), or set IDEM_SQS_ENDPOINT."

func sqsEndpoint() string { return testenv.Env("IDEM_SQS_ENDPOINT", "http://127.0.0.1:4100") }

// newClient returns an SQS client of the test server (static credentials:
// the emulator checks none).
func newClient(endpoint string) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// needQueue creates a queue with the attributes (deleted at cleanup), or
// stops the test as testenv.Need does when the server does not answer.
func needQueue(t *testing.T, c *sqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	testenv.Need(t, "SQS at "+sqsEndpoint(), sqsHint, err)
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) }) //nolint:errcheck
	return url
}
