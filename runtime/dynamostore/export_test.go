package dynamostore

import "github.com/idemgen/idemgen/runtime/internal/replayhint"

// SetReadFirst makes s read first on every claim ("always"), never
// ("never"), or on its hint ("hint", the default), for benchmarks.
func SetReadFirst(s *Store, mode string) {
	s.readFirst = map[string]replayhint.Mode{"hint": replayhint.OnHint, "always": replayhint.Always, "never": replayhint.Never}[mode]
}
