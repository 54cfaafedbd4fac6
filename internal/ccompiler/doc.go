// Package ccompiler finds the C compiler that builds the fake libraries
// (CUDA driver, NCCL, verbs) the tests load: $CC, or cc.
package ccompiler
