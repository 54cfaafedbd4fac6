// Package names gives small integer enums their String methods: a table
// of names indexed by value, and for a value the table does not name a
// fallback such as "kind(7)", so that a corrupt or future value still
// prints as something a reader can trace.
package names
