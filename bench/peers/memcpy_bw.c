// memcpy bandwidth of one buffer, alone and with other processes copying at
// the same time: the bound that moving data between processes of one host
// through shared memory cannot beat. Part of bench/compare.sh.
//
//   ./memcpy_bw [SIZE [REPS [NPROCS...]]]     (defaults: 64M 10 1 2)
//
// For each NPROCS, that many processes (forked) each copy SIZE bytes from a
// buffer of their own to another, REPS times after 2 untimed copies that
// fault the pages in. The processes start each copy together (a barrier in
// shared memory). Bandwidth is bytes copied per second: SIZE / time of one
// memcpy, in GB/s (10^9 B/s); a copy reads SIZE bytes and writes SIZE
// bytes. One line per NPROCS:
//
//   size_bytes nprocs reps best_GBps median_GBps sum_median_GBps
//
// best and median are per process, over every copy of every process;
// sum_median is the median over reps of the bandwidths of all processes
// added up (NPROCS * SIZE over the slowest copy of that rep).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long parse_bytes(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  switch (*end) {
  case 'k': case 'K': v <<= 10; end++; break;
  case 'm': case 'M': v <<= 20; end++; break;
  case 'g': case 'G': v <<= 30; end++; break;
  }
  if (*end != '\0' || v <= 0) {
    fprintf(stderr, "memcpy_bw: bad size %s\n", s);
    exit(2);
  }
  return v;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// measure runs nprocs copiers and prints their line.
static int measure(long size, int reps, int nprocs) {
  // Shared with the children: the barrier and each copy's seconds.
  size_t shared = sizeof(pthread_barrier_t) + sizeof(double) * (size_t)nprocs * (size_t)reps;
  void *sh = mmap(NULL, shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) {
    perror("memcpy_bw: mmap");
    return 1;
  }
  pthread_barrier_t *bar = sh;
  double *secs = (double *)(bar + 1);
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(bar, &attr, (unsigned)nprocs);

  for (int w = 0; w < nprocs; w++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("memcpy_bw: fork");
      return 1;
    }
    if (pid > 0) continue;
    // Each process's own buffers, touched before any timing.
    char *src = malloc((size_t)size), *dst = malloc((size_t)size);
    if (!src || !dst) _exit(1);
    memset(src, w + 1, (size_t)size);
    memset(dst, 0, (size_t)size);
    for (int i = -2; i < reps; i++) {
      pthread_barrier_wait(bar);
      double t0 = now();
      memcpy(dst, src, (size_t)size);
      double t = now() - t0;
      // Read the copy back a little so that it cannot be elided.
      if (dst[size - 1] != (char)(w + 1)) _exit(3);
      if (i >= 0) secs[w * reps + i] = t;
    }
    _exit(0);
  }
  int failed = 0;
  for (int w = 0; w < nprocs; w++) {
    int status;
    if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  if (failed) {
    fprintf(stderr, "memcpy_bw: a copier failed\n");
    return 1;
  }

  double *bw = malloc(sizeof(double) * (size_t)nprocs * (size_t)reps);
  double *sum = malloc(sizeof(double) * (size_t)reps);
  double best = 0;
  for (int i = 0; i < reps; i++) {
    double slowest = 0;
    for (int w = 0; w < nprocs; w++) {
      double t = secs[w * reps + i];
      bw[w * reps + i] = size / t / 1e9;
      if (bw[w * reps + i] > best) best = bw[w * reps + i];
      if (t > slowest) slowest = t;
    }
    sum[i] = (double)nprocs * size / slowest / 1e9;
  }
  printf("%ld %d %d %.3f %.3f %.3f\n", size, nprocs, reps, best, median(bw, nprocs * reps), median(sum, reps));
  fflush(stdout);
  free(bw);
  free(sum);
  pthread_barrier_destroy(bar);
  munmap(sh, shared);
  return 0;
}

int main(int argc, char **argv) {
  long size = argc > 1 ? parse_bytes(argv[1]) : 64L << 20;
  int reps = argc > 2 ? atoi(argv[2]) : 10;
  if (reps < 1) {
    fprintf(stderr, "usage: memcpy_bw [SIZE [REPS [NPROCS...]]]\n");
    return 2;
  }
  printf("# memcpy_bw: GB/s = 10^9 bytes copied per second per process; best and median per process\n");
  printf("# size_bytes nprocs reps best_GBps median_GBps sum_median_GBps\n");
  fflush(stdout);
  int rc = 0;
  if (argc <= 3) {
    rc |= measure(size, reps, 1);
    rc |= measure(size, reps, 2);
  }
  for (int i = 3; i < argc; i++) {
    int n = atoi(argv[i]);
    if (n < 1) {
      fprintf(stderr, "memcpy_bw: bad process count %s\n", argv[i]);
      return 2;
    }
    rc |= measure(size, reps, n);
  }
  return rc;
}
