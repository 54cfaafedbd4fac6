// MPI_Allreduce sweep (float32, sum), the Open MPI peer of bench/compare.sh.
//
//   mpirun -np P ./mpi_allreduce MINB MAXB [FACTOR [ITERS [WARMUP]]]
//
// For each size from MINB to MAXB bytes (times FACTOR each step), every rank
// runs WARMUP all-reduces, a barrier, then ITERS all-reduces back to back.
// Rank 0 prints one line per size in the format shared by all peers:
//
//   size_bytes time_us algbw_GBps busbw_GBps wrong
//
// time_us is the largest over ranks of (elapsed / ITERS), as nccl-tests and
// `commnode bench` report; busbw = algbw * 2(p-1)/p. After timing, one more
// all-reduce of a known pattern is checked; wrong is summed over ranks.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    fprintf(stderr, "mpi_allreduce: bad size %s\n", s);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return v;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, p;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce MINB MAXB [FACTOR [ITERS [WARMUP]]]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long minb = parse_bytes(argv[1]), maxb = parse_bytes(argv[2]);
  long factor = argc > 3 ? atol(argv[3]) : 2;
  int iters = argc > 4 ? atoi(argv[4]) : 20, warm = argc > 5 ? atoi(argv[5]) : 5;
  if (factor < 2 || iters < 1 || warm < 0) {
    if (rank == 0) fprintf(stderr, "mpi_allreduce: need FACTOR >= 2, ITERS >= 1, WARMUP >= 0\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  // One buffer for the largest size; each size uses its start. Zeros keep
  // the repeated in-place sums finite (no overflow to inf during timing).
  long maxn = maxb / 4 > 0 ? maxb / 4 : 1;
  float *buf = calloc((size_t)maxn, sizeof(float));
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);

  if (rank == 0) {
    printf("# mpi_allreduce np=%d iters=%d warmup=%d\n", p, iters, warm);
    printf("# size_bytes time_us algbw_GBps busbw_GBps wrong\n");
    fflush(stdout);
  }
  for (long bytes = minb; bytes <= maxb; bytes *= factor) {
    int n = (int)(bytes / 4 > 0 ? bytes / 4 : 1);
    memset(buf, 0, (size_t)n * sizeof(float));
    // In place, like gocomms' AllReduce and torch.distributed.all_reduce.
    for (int i = 0; i < warm; i++)
      MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
      MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / iters, tmax;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    // Small integers: every partial sum is exact, whatever the order.
    for (int i = 0; i < n; i++) buf[i] = (float)(rank + 1 + i % 7);
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    long wrong = 0, wrong_all = 0;
    for (int i = 0; i < n; i++)
      if (buf[i] != (float)(p * (p + 1) / 2 + p * (i % 7))) wrong++;
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
      double algbw = (double)bytes / tmax / 1e9;
      printf("%ld %.3f %.6f %.6f %ld\n", bytes, tmax * 1e6, algbw, algbw * 2.0 * (p - 1) / p, wrong_all);
      fflush(stdout);
    }
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
