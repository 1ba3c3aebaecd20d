package dynamostore

// SetReadFirst makes s read first on every claim ("always"), never
// ("never"), or on its hint ("hint", the default), for benchmarks.
func SetReadFirst(s *Store, mode string) {
	s.readFirst = map[string]readMode{"hint": readOnHint, "always": readAlways, "never": readNever}[mode]
}
