// Package transcript replays transcript tests: a state machine driven by
// commands read from a file, whose actions are compared with those the
// file records.
//
// A transcript is a list of blocks. Each is a command, or several, one a
// line, then "----" and the actions they cause, one a line, ended by a
// blank line. Lines that start with # are comments. A command is a name
// and key=value arguments; a bare key has an empty value, and a value
// with spaces is quoted as a Go string.
//
// A test that runs with its rewrite flag writes what the machine did as
// the expected output instead, for a reader to check before committing.
package transcript
