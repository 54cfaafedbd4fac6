// Package flight is the flight recorder's storage and its dumps, as
// torchcomms' FlightRecorderHook keeps them: a ring of a communicator's
// last operations (Recorder) with their entries and states, the JSON a
// dump writes (Dump), the files an operator looks for after a hang
// (FileName, WriteFile, Files), and the list of live communicators a
// dump of the whole process walks (Live).
//
// The root package re-exports its types (gocomms.FlightRecorder wraps a
// Recorder) and feeds it from its communicators and Works, which it
// sees only through Work; it imports nothing of the project but the
// backend contract and its leaf types.
package flight
