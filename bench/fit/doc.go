// Command fit fits a simulated host topology (simulation.HostFit) to
// all-reduce times measured between one host's processes, as
// bench/calibrate.sh records them, and writes the fit as JSON for the
// simulator's presets (simulation/topologies) or `commnode sim
// --topology FILE.json`.
//
//	go run ./bench/fit -in medians.tsv -name loopback -out simulation/topologies/loopback.json
//
// The input has a row per rank count and size: ranks, bytes, the median
// time of one all-reduce in µs (further columns are ignored). The fit
// minimizes the mean squared log ratio of simulated to measured time over
// every row, by Nelder and Mead's simplex over the hop, the bandwidth,
// the hop's share that is latency and the two exponents of sharing the
// CPUs, simulating every row on phantom data for each candidate.
package main
