// Package fakecuda builds, for tests, a stand-in libcuda.so.1 whose
// devices are host memory (fakecuda.c), and the environment that makes a
// test process load it ahead of any real driver. Tests of packages that
// drive GPUs re-run their own binary in that environment, so that
// contexts, streams, events, the IPC handshake and the reduction kernels
// run on every machine with a C compiler. What the fake implements, and
// where it differs from a GPU, fakecuda.c's opening comment says.
//
// This package is for tests only: nothing else imports it.
package fakecuda
