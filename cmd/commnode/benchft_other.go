//go:build !linux

package main

import (
	"fmt"
	"io"
)

// benchFT refuses: the --ft driver needs Linux to tie its workers'
// lives to its own.
func benchFT(_ []string, _ bool, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "commnode bench: --ft runs on Linux only")
	return 2
}
