package generator

// testdata/keyproto and testdata/protoresult wrap functions over real
// protobuf messages. testdata is outside the module's package graph, so
// go mod tidy would drop the requirement they need; this import keeps it.
import _ "google.golang.org/protobuf/types/known/timestamppb"
