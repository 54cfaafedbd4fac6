// Package test holds the end-to-end tests: they build commnode and run it
// as real processes, one rank each, over TCP and the TCPStore, the way
// launchers start it. See e2e_test.go; torchrun_test.go runs it under
// PyTorch's own torchrun when Debian's python3-torch is installed.
package test
