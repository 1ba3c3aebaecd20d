// Package emulator connects the test module's harnesses to the local
// emulators that scripts/ starts.
package emulator

import (
	"context"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/idemgen/idemgen/internal/testenv"
)

// DynamoEndpoint is the DynamoDB-compatible server: dynalite, started by
// `make services`, or IDEM_DYNAMO_ENDPOINT.
func DynamoEndpoint() string { return testenv.Env("IDEM_DYNAMO_ENDPOINT", "http://127.0.0.1:4567") }

// Dynamo is a DynamoDB client of endpoint (a URL, or the host:port of a
// fault proxy in front of dynalite) with the static credentials dynalite
// accepts and 64 idle connections per host; timeout > 0 bounds each HTTP
// request, and retries > 0 sets RetryMaxAttempts (else the SDK's default).
func Dynamo(endpoint string, timeout time.Duration, retries int) *dynamodb.Client {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { tr.MaxIdleConnsPerHost = 64 })
	if timeout > 0 {
		hc = hc.WithTimeout(timeout)
	}
	return dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(endpoint), HTTPClient: hc, RetryMaxAttempts: retries,
		Credentials: credentials.NewStaticCredentialsProvider("idemgen", "idemgen", ""),
	})
}

// Firestore is a client of project on the Firestore emulator at addr,
// configured as FIRESTORE_EMULATOR_HOST would (plaintext, the emulator's
// owner token).
func Firestore(ctx context.Context, addr, project string) (*firestore.Client, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(owner{}))
	if err != nil {
		return nil, err
	}
	return firestore.NewClient(ctx, project, option.WithGRPCConn(conn))
}

// owner is the emulator's administrator token.
type owner struct{}

func (owner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (owner) RequireTransportSecurity() bool { return false }
