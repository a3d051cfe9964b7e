package kernels

import (
	"encoding/json"
	"strings"
)

// jsonLit is s as a JSON string literal: also a valid string literal of
// Python, JavaScript, Java and R (json.Marshal escapes the controls,
// quotes, backslashes, U+2028/9 and <, >, &; NUL bytes are refused
// before).
func jsonLit(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pairsLit returns envs as `[["k", "v"], ...]` of JSON string literals:
// a list of pairs in Python and JavaScript alike.
func pairsLit(envs [][2]string) string {
	var b strings.Builder
	b.WriteString("[")
	for i, kv := range envs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("[" + jsonLit(kv[0]) + ", " + jsonLit(kv[1]) + "]")
	}
	b.WriteString("]")
	return b.String()
}

// sq is s single-quoted for bash: safe for any bytes but NUL.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
