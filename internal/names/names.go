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
	if v >= 0 && uint64(v) < uint64(len(names)) && names[v] != "" {
		return names[v]
	}
	// strconv: fmt's %v would call v's String method, the caller.
	if v < 0 {
		return kind + "(" + strconv.FormatInt(int64(v), 10) + ")"
	}
	return kind + "(" + strconv.FormatUint(uint64(v), 10) + ")"
}
