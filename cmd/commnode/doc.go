// Command commnode is one gocomms rank per process, and the operator's
// tool around it. A rank learns its place from the variables launchers set
// (torchrun, mpirun, srun, or commnode launch; see package store/bootstrap)
// and meets the others through the TCPStore at MASTER_ADDR:MASTER_PORT.
//
//	commnode demo [-ranks N]          launch N local ranks (default 4) that
//	                                  verify every collective, then bench
//	commnode launch -n N -- CMD...    start N local ranks, torchrun style
//	commnode verify [-local N]        check every collective, dtype, op and
//	                                  count against a plain reference
//	commnode bench [-b -e -f --op]    time collectives as nccl-tests does
//	commnode rma [-b -e -f --op]      time one-sided window operations as
//	                                  mpi_rma.c does (rank 0 on rank 1)
//	commnode rma --verify             check windows across the ranks: the
//	                                  WindowRmaTest ring and the atomics
//	commnode info                     this host, the NCCL found, and what
//	                                  a rank would use
//	commnode store [-port P]          serve a TCPStore until interrupted
//	commnode fr-trace [--json] DIR    what the ranks' flight-record dumps
//	                                  in DIR disagree on, as fr_trace
//
// verify, bench and demo take --backend native|nccl ($GOCOMMS_BACKEND);
// nccl needs -device cuda. docs/commnode.md describes each in full.
package main
