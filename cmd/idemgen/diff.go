package main

import (
	"fmt"
	"strings"
)

// unifiedDiff is a small line diff for -check: enough to see what changed
// in a generated file. Common prefix and suffix are trimmed; the middle is
// aligned by longest common subsequence when small, else shown replaced.
func unifiedDiff(aName, bName, a, b string) string {
	al, bl := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	am, bm := al[pre:len(al)-suf], bl[pre:len(bl)-suf]
	const context = 3
	lo := max(0, pre-context)
	hiA, hiB := min(len(al), len(al)-suf+context), min(len(bl), len(bl)-suf+context)
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n@@ -%d,%d +%d,%d @@\n", aName, bName, lo+1, hiA-lo, lo+1, hiB-lo)
	for _, l := range al[lo:pre] {
		sb.WriteString(" " + l + "\n")
	}
	for _, op := range lineOps(am, bm) {
		sb.WriteString(op + "\n")
	}
	for _, l := range al[len(al)-suf : hiA] {
		sb.WriteString(" " + l + "\n")
	}
	return sb.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func lineOps(a, b []string) []string {
	var out []string
	if len(a)*len(b) > 4_000_000 {
		for _, l := range a {
			out = append(out, "-"+l)
		}
		for _, l := range b {
			out = append(out, "+"+l)
		}
		return out
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, " "+a[i])
			i, j = i+1, j+1
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+"+b[j])
			j++
		default:
			out = append(out, "-"+a[i])
			i++
		}
	}
	return out
}
