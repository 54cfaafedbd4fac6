// Package errkind makes errors that belong to a kind, for packages whose
// callers test what went wrong with errors.Is: a sentinel that is itself
// matched and wraps a broader one (no library wraps "unavailable"), and an
// error in its own words that matches a sentinel and, where a lower layer
// said why, that cause too.
package errkind
