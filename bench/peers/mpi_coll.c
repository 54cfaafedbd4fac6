// Collectives of float32 (sum where they reduce) timed with MPI, the
// Open MPI peer of bench/compare.sh.
//
//   mpirun -np P ./mpi_coll OP MINB MAXB [FACTOR [ITERS [WARMUP]]]
//
// OP is one of:
//
//   all_reduce      MPI_Allreduce(MPI_IN_PLACE, ...), sum
//   all_gather      MPI_Allgather, out of place
//   reduce_scatter  MPI_Reduce_scatter_block, sum, out of place
//   all_to_all      MPI_Alltoall, out of place
//   broadcast       MPI_Bcast from rank 0
//   send_recv       MPI_Sendrecv: every rank sends to rank+1 and receives
//                   from rank-1, as `commnode bench --op send_recv`
//
// For each size from MINB to MAXB bytes (times FACTOR each step), every rank
// runs WARMUP ops, a barrier, then ITERS ops back to back. Rank 0 prints one
// line per size in the format shared by all peers:
//
//   size_bytes time_us algbw_GBps busbw_GBps wrong
//
// Sizes, times and bandwidths follow nccl-tests, as `commnode bench` does:
// a size of B bytes is count = B/4 elements; the ops that split the buffer
// among ranks use blocks of count/p elements (all-gather: each rank sends a
// block and receives p; reduce-scatter: sends p, receives one; all-to-all:
// sends and receives p), and size_bytes is the larger of one rank's send and
// receive buffers. time_us is the largest over ranks of (elapsed / ITERS);
// algbw = size / time; busbw = algbw * 2(p-1)/p for all-reduce, (p-1)/p for
// all-gather, reduce-scatter and all-to-all, 1 for broadcast and
// send_recv. After timing,
// one more op on a known pattern is checked; wrong is summed over ranks.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST, SEND_RECV };

static const char *op_names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"};

// parse_bytes reads a size with an optional K, M or G suffix (powers of 1024).
static long parse_bytes(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  switch (*end) {
  case 'k': case 'K': v <<= 10; end++; break;
  case 'm': case 'M': v <<= 20; end++; break;
  case 'g': case 'G': v <<= 30; end++; break;
  }
  if (*end != '\0' || v <= 0) {
    fprintf(stderr, "mpi_coll: bad size %s\n", s);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return v;
}

// counts lays out a buffer of count elements as nccl-tests does: the
// elements one rank sends and receives, and the block (elements per rank)
// of the ops that split the buffer.
static void counts(enum op o, long count, int p, long *send, long *recv, long *block) {
  switch (o) {
  case ALL_GATHER: *block = count / p; *send = *block; *recv = *block * p; return;
  case REDUCE_SCATTER: *block = count / p; *send = *block * p; *recv = *block; return;
  case ALL_TO_ALL: *block = count / p; *send = *recv = *block * p; return;
  default: *block = *send = *recv = count; return;
  }
}

static double bus_factor(enum op o, int p) {
  switch (o) {
  case ALL_REDUCE: return 2.0 * (p - 1) / p;
  case BROADCAST: case SEND_RECV: return 1.0;
  default: return (double)(p - 1) / p;
  }
}

// pat is rank q's value at element i of its input: small integers, so that
// every partial sum is exact whatever the order, and different per rank.
static float pat(int q, long i) { return (float)(q * 8 + 1 + i % 7); }

// run issues one op on n elements per block.
static void run(enum op o, float *send, float *recv, long n) {
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  switch (o) {
  case SEND_RECV:
    MPI_Sendrecv(send, (int)n, MPI_FLOAT, (rank + 1) % p, 0, recv, (int)n, MPI_FLOAT, (rank + p - 1) % p, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    break;
  case ALL_REDUCE: MPI_Allreduce(MPI_IN_PLACE, send, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  case ALL_GATHER: MPI_Allgather(send, (int)n, MPI_FLOAT, recv, (int)n, MPI_FLOAT, MPI_COMM_WORLD); break;
  case REDUCE_SCATTER: MPI_Reduce_scatter_block(send, recv, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  case ALL_TO_ALL: MPI_Alltoall(send, (int)n, MPI_FLOAT, recv, (int)n, MPI_FLOAT, MPI_COMM_WORLD); break;
  case BROADCAST: MPI_Bcast(send, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
  }
}

// check runs one op on patterned inputs and returns this rank's wrong
// elements. sendN, recvN and n are as counts gives them.
static long check(enum op o, float *send, float *recv, long sendN, long recvN, long n, int rank, int p) {
  long wrong = 0;
  // All-gather's input is this rank's block of the result, elements
  // rank*n.. of its pattern; the root's input alone counts for broadcast.
  long off = o == ALL_GATHER ? rank * n : 0;
  for (long i = 0; i < sendN; i++) send[i] = (o == BROADCAST && rank != 0) ? -1.0f : pat(rank, off + i);
  if (recv) for (long i = 0; i < recvN; i++) recv[i] = -1.0f;
  run(o, send, recv, n);
  switch (o) {
  case ALL_REDUCE:
    for (long i = 0; i < n; i++)
      if (send[i] != (float)(8 * p * (p - 1) / 2 + p * (1 + i % 7))) wrong++;
    break;
  case ALL_GATHER:  // block q is rank q's input, elements q*n.. of its pattern
    for (long j = 0; j < recvN; j++)
      if (recv[j] != pat((int)(j / n), j)) wrong++;
    break;
  case REDUCE_SCATTER:  // this rank's block of the sum
    for (long i = 0; i < n; i++)
      if (recv[i] != (float)(8 * p * (p - 1) / 2 + p * (1 + (rank * n + i) % 7))) wrong++;
    break;
  case ALL_TO_ALL:  // block q is what rank q sent to this rank: its block `rank`
    for (long j = 0; j < recvN; j++)
      if (recv[j] != pat((int)(j / n), rank * n + j % n)) wrong++;
    break;
  case BROADCAST:
    for (long i = 0; i < n; i++)
      if (send[i] != pat(0, i)) wrong++;
    break;
  case SEND_RECV:  // what the rank before sent
    for (long i = 0; i < n; i++)
      if (recv[i] != pat((rank + p - 1) % p, i)) wrong++;
    break;
  }
  return wrong;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  int o = -1;
  for (int i = 0; argc > 1 && i < (int)(sizeof op_names / sizeof op_names[0]); i++)
    if (strcmp(argv[1], op_names[i]) == 0) o = i;
  if (argc < 4 || o < 0) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_coll all_reduce|all_gather|reduce_scatter|all_to_all|broadcast|send_recv MINB MAXB [FACTOR [ITERS [WARMUP]]]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long minb = parse_bytes(argv[2]), maxb = parse_bytes(argv[3]);
  long factor = argc > 4 ? atol(argv[4]) : 2;
  int iters = argc > 5 ? atoi(argv[5]) : 20, warm = argc > 6 ? atoi(argv[6]) : 5;
  if (factor < 2 || iters < 1 || warm < 0) {
    if (rank == 0) fprintf(stderr, "mpi_coll: need FACTOR >= 2, ITERS >= 1, WARMUP >= 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  // Buffers for the largest size; each size uses their starts. Zeros keep
  // repeated in-place sums finite (no overflow to inf during timing).
  long maxn = maxb / 4 > 0 ? maxb / 4 : 1;
  float *send = calloc((size_t)maxn, sizeof(float));
  float *recv = (o == ALL_REDUCE || o == BROADCAST) ? NULL : calloc((size_t)maxn, sizeof(float));
  if (!send || (!recv && o != ALL_REDUCE && o != BROADCAST)) MPI_Abort(MPI_COMM_WORLD, 1);

  if (rank == 0) {
    printf("# mpi_coll %s np=%d iters=%d warmup=%d\n", op_names[o], p, iters, warm);
    printf("# size_bytes time_us algbw_GBps busbw_GBps wrong\n");
    fflush(stdout);
  }
  for (long bytes = minb; bytes <= maxb; bytes *= factor) {
    long sendN, recvN, n;
    counts((enum op)o, bytes / 4, p, &sendN, &recvN, &n);
    memset(send, 0, (size_t)sendN * sizeof(float));
    for (int i = 0; i < warm; i++) run((enum op)o, send, recv, n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) run((enum op)o, send, recv, n);
    double t = (MPI_Wtime() - t0) / iters, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    long wrong = check((enum op)o, send, recv, sendN, recvN, n, rank, p), wrong_all = 0;
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
      long size = 4 * (sendN > recvN ? sendN : recvN);
      double algbw = (double)size / tmax / 1e9;
      printf("%ld %.3f %.6f %.6f %ld\n", size, tmax * 1e6, algbw, algbw * bus_factor((enum op)o, p), wrong_all);
      fflush(stdout);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
