// Package spans writes sorted integers compactly, consecutive runs as
// ranges: ranks in errors and reports, NVLink numbers in the topology.
package spans
