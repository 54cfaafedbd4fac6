// Package launch runs the ranks of one job as local processes, the way
// torchrun does on a single node: it starts N copies of a command, gives
// each the torchrun worker environment (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_NAME, ROLE_RANK,
// ROLE_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID,
// TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS) and relays their
// output line by line, each line prefixed with "[rank R] ".
//
// The launcher hosts no store and does not set TORCHELASTIC_USE_AGENT_STORE,
// so rank 0 of the job hosts the rendezvous store at MASTER_ADDR:MASTER_PORT
// and the other ranks connect to it. Inherited TORCHELASTIC_USE_AGENT_STORE,
// TORCHCOMM_RANK and TORCHCOMM_SIZE are removed, as a launch from inside
// another job's rank would otherwise hand every rank the outer job's values.
//
// A job ends when every rank has exited. If one fails (non-zero exit or a
// signal), the job times out, its context is cancelled or a signal is
// forwarded, the launcher stops the job: it signals the process group of
// every rank still running (SIGTERM, or the forwarded signal), waits a grace
// period, then sends SIGKILL. Each rank leads its own process group, so its
// descendants are signalled with it; on Linux a rank also receives SIGKILL
// if the launcher dies.
//
// This is Linux only: elsewhere Run reports an error.
package launch
