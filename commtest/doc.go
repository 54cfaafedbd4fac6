// Package commtest is the correctness reference for gocomms collectives: a
// plain loop over every rank's inputs that says what each collective must
// produce, and the checks that run every collective against it. The tests
// of package gocomms run it in-process; `commnode verify` runs it on a real
// job, which is why it imports neither testing nor any package of gocomms
// but the public one and its leaf packages tensor and reduce.
//
// Every rank generates every rank's input from the case alone (dtype, op,
// seed, rank, block, element index): small integers that every dtype holds
// exactly, so a rank computes its expected result without a message, in
// int64 wrapped to the dtype for integers and bool, in float64 within a
// tolerance for the dtype and world size for floats.
//
// Start reading at Checker.Run, which runs one Case; Checker has a method
// per collective and All for all of them at one dtype and count. Sweep runs
// every collective × dtype × valid op × count of a Plan, in the order
// Plan.Cases lists, and returns a Report:
//
//	rep, err := commtest.Sweep(ctx, c, commtest.Plan{Counts: []int{0, 1, 7}})
//	if err == nil {
//		err = rep.Err()
//	}
//
// Every rank of a communicator must run the same cases in the same order.
// A wrong result is a *Mismatch: rank, case, buffer, element index, got and
// want; its Case replays it. A collective that fails returns its own error
// wrapped with the rank and case, and ends a sweep, since the ranks may no
// longer be in step.
package commtest
