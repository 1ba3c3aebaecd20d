package idemctl

import (
	"strconv"
	"strings"
)

// splitKey finds the function name and version in a store key
// "<prefix><name>:v<version>:<hash>" (or "...:v<version>:{<entity>}:<hash>"
// for ordered functions). The hashes are hex and braces, so the last
// ":v<digits>:" is the version's; a name may contain colons. ok is false
// for a key without the prefix or the version (another tool's key, a
// different -prefix).
func splitKey(prefix, key string) (name string, version int, ok bool) {
	rest, found := strings.CutPrefix(key, prefix)
	if !found {
		return "", 0, false
	}
	for end := len(rest); ; {
		i := strings.LastIndex(rest[:end], ":v")
		if i <= 0 {
			return "", 0, false
		}
		j := i + 2
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j > i+2 && j < len(rest) && rest[j] == ':' {
			v, err := strconv.Atoi(rest[i+2 : j])
			if err == nil {
				return rest[:i], v, true
			}
		}
		end = i
	}
}
