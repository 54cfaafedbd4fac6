// Package leaktest checks that a test leaves no goroutine behind. It is
// for tests and the packages of test helpers (storetest, transporttest):
// nothing that ships imports it.
package leaktest
