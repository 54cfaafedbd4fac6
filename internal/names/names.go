package names

import "strconv"

// Integer is the set of types an enum may have underneath.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// Of returns names[v] or, where v is out of range or its entry is empty,
// kind(v): "kind(7)". Tables may leave gaps with keyed literals, as
// []string{1: "write", 2: "read"}.
func Of[T Integer](v T, kind string, names []string) string {
	if name, ok := lookup(v, names); ok {
		return name
	}
	return kind + "(" + decimal(v) + ")"
}

// Numbered is Of for an enum whose fallback is prefix then v: "op 7".
func Numbered[T Integer](v T, prefix string, names []string) string {
	if name, ok := lookup(v, names); ok {
		return name
	}
	return prefix + decimal(v)
}

// Else is Of for an enum whose fallback names no value, as "unknown".
func Else[T Integer](v T, names []string, fallback string) string {
	if name, ok := lookup(v, names); ok {
		return name
	}
	return fallback
}

func lookup[T Integer](v T, names []string) (string, bool) {
	if v >= 0 && uint64(v) < uint64(len(names)) && names[v] != "" {
		return names[v], true
	}
	return "", false
}

// decimal formats v with strconv: fmt's %v would call v's String method,
// the caller.
func decimal[T Integer](v T) string {
	if v < 0 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatUint(uint64(v), 10)
}
