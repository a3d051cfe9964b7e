package kernel

import "bytes"

// field is one member of a JSON object: its key (unescaped only when it
// has no escapes, which Jupyter's keys never have) and its value's bytes.
type field struct {
	key   string
	value []byte
}

// members splits a JSON object into its top-level members without
// allocating for the values: each value is a sub-slice of raw. It reads at
// most limit members (more reports cut). raw must be valid JSON (Decode
// checks that before an event is decoded); anything but an object gives
// ok == false.
func members(raw []byte, limit int) (out []field, cut, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false, false
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, false, false
		}
		if raw[i] == '}' {
			return out, false, true
		}
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		if i >= len(raw) || raw[i] != '"' {
			return nil, false, false
		}
		kend := skipString(raw, i)
		key := raw[i+1 : kend-1]
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false, false
		}
		vstart := skipSpace(raw, i+1)
		vend := skipValue(raw, vstart)
		if vend <= vstart {
			return nil, false, false
		}
		if len(out) == limit {
			return out, true, true
		}
		k := string(key)
		if bytes.IndexByte(key, '\\') >= 0 {
			k = "" // escaped keys are never Jupyter's; keep them unnamed
		}
		out = append(out, field{key: k, value: raw[vstart:vend]})
		i = vend
	}
}

// get returns the value of key, or nil.
func get(fs []field, key string) []byte {
	for _, f := range fs {
		if f.key == key {
			return f.value
		}
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default: // number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		return j
	}
}
