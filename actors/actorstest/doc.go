// Package actorstest holds test helpers for code built on the actors
// runtime: a manual clock that tests advance by hand.
package actorstest
