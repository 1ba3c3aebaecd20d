module github.com/idemgen/idemgen/runtime/idemsqs

go 1.26.0

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/aws/aws-sdk-go-v2/credentials v1.21.0
	github.com/aws/aws-sdk-go-v2/service/sqs v1.53.0
	github.com/google/go-cmp v0.7.0
	github.com/idemgen/idemgen v0.0.0-00010101000000-000000000000
	github.com/idemgen/idemgen/runtime/pgstore v0.0.0-00010101000000-000000000000
	github.com/jackc/pgx/v5 v5.12.0
)

require (
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/smithy-go v1.28.9 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/idemgen/idemgen => ../..

replace github.com/idemgen/idemgen/runtime/pgstore => ../pgstore
