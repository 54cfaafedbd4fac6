// Package frtrace finds what the ranks of a job disagree on in their
// flight records, as PyTorch's flight-recorder analyzer (fr_trace) does:
// the operation some ranks wait in while others never issued it, the
// operations whose arguments differ between ranks, and the last one every
// rank completed.
//
// Operations are matched across ranks by their sequence number on the
// communicator. Point-to-point operations, which only their peers issue,
// are left out of the comparison of arguments.
package frtrace
