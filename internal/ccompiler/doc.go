// Package ccompiler finds the C compiler that builds the fake libraries
// (CUDA driver, NCCL, verbs) the tests load, $CC or cc, and has it check
// that the constants a package declares itself equal a real header's.
package ccompiler
