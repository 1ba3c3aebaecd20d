module github.com/idemgen/idemgen/examples

go 1.26.0

require github.com/idemgen/idemgen v0.0.0-00010101000000-000000000000

require github.com/idemgen/idemgen/runtime/redisstore v0.0.0-00010101000000-000000000000

require github.com/idemgen/idemgen/runtime/idemgrpc v0.0.0-00010101000000-000000000000

require (
	github.com/google/go-cmp v0.7.0
	github.com/idemgen/idemgen/runtime/pgstore v0.0.0-00010101000000-000000000000
	github.com/jackc/pgx/v5 v5.12.0
	github.com/nats-io/nats.go v1.55.0
	github.com/redis/go-redis/v9 v9.23.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/aws-sdk-go-v2/credentials v1.21.0
	github.com/aws/aws-sdk-go-v2/service/sqs v1.53.0
	github.com/idemgen/idemgen/runtime/idemsqs v0.0.0-00010101000000-000000000000
	github.com/rabbitmq/amqp091-go v1.16.0
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
	github.com/twmb/franz-go/pkg/kadm v1.20.0
)

require (
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
)

require (
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/idemgen/idemgen/runtime/idemamqp v0.0.0-00010101000000-000000000000
	github.com/idemgen/idemgen/runtime/idemkafka v0.0.0-00010101000000-000000000000
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/mod v0.42.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/tools v0.52.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/idemgen/idemgen => ..

replace github.com/idemgen/idemgen/runtime/redisstore => ../runtime/redisstore

replace github.com/idemgen/idemgen/runtime/pgstore => ../runtime/pgstore

tool github.com/idemgen/idemgen/cmd/idemgen

replace github.com/idemgen/idemgen/runtime/idemgrpc => ../runtime/idemgrpc

replace github.com/idemgen/idemgen/runtime/idemkafka => ../runtime/idemkafka

replace github.com/idemgen/idemgen/runtime/idemamqp => ../runtime/idemamqp

replace github.com/idemgen/idemgen/runtime/idemsqs => ../runtime/idemsqs
