// Package launcher finds out, from the environment a launcher set, which
// rank this process is, how many ranks the job has, how many share its
// host, and where the job's rendezvous store is. It parses variables and
// connects to nothing: package store/bootstrap connects to the store.
//
// Rank and size are read in torchcomms' order: TORCHCOMM_RANK and
// TORCHCOMM_SIZE; Open MPI's OMPI_COMM_WORLD_*; PMI's PMI_RANK and
// PMI_SIZE; PALS' PALS_RANKID; torchrun's RANK and WORLD_SIZE; Slurm's
// SLURM_PROCID and SLURM_NTASKS. TORCHCOMM_BOOTSTRAP_RANKSIZE_QUERY_METHOD
// (auto, torchrun, mpi, pals, slurm) restricts the search to one source.
// The package reads variables through a lookup function, so that tests and
// callers with their own environment need not touch the process's.
package launcher
