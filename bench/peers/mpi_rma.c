// One-sided communication (MPI-3 RMA, passive target) timed with MPI: the
// Open MPI figures gocomms' RMA windows are held against. bench/rma-peers.sh
// builds and runs it.
//
//   mpirun -np 2 ./mpi_rma [--op LIST] [-b MINB] [-e MAXB] [-f FACTOR]
//                          [-n ITERS] [-w WARMUP] [-V BYTES] [-W BYTES] [-c]
//
// Even rank r is an origin and targets rank r+1; odd ranks are targets and
// take no part but the barriers and reductions, which also give MPI's
// progress engine a chance to run on them. An odd rank out (np odd) idles.
// With np = 2, rank 0 puts to and gets from rank 1. The pairs run at once;
// time_us is the largest over the origins and GBps is one pair's rate.
//
// Every rank allocates a window with MPI_Win_allocate (displacement unit 1,
// no info keys) and opens one passive-target epoch on it, MPI_Win_lock_all,
// held until the end. The window holds -W bytes, by default max(MAXB, 8),
// and each origin's source and destination buffers are as large, from
// malloc. Give runs that are to be compared the same -W: the buffers' size
// decides where glibc takes them from (from 128 KiB up: a fresh mmap;
// below: the heap), and that alone changes Open MPI 4.1's osc/rdma gets on
// one host about 15-fold (64 KiB: ~50 GB/s into heap memory, ~3.3 GB/s
// into mapped memory; moving glibc's mmap threshold with GLIBC_TUNABLES
// moves the step with it).
//
// LIST is comma-separated, from (default: all of them, in this order)
//
//   put               MPI_Put of size bytes, then MPI_Win_flush(target):
//                     one op is a put completed at the target
//   put_pipelined     ITERS puts back to back, then one MPI_Win_flush; all
//                     carry the same bytes to window offset 0 (MPI leaves
//                     open which of such concurrent puts lands last; they
//                     are identical, so the outcome is not in doubt)
//   get               MPI_Get of size bytes, then MPI_Win_flush
//   fetch_and_op      MPI_Fetch_and_op of one uint64 (MPI_UINT64_T,
//                     MPI_SUM of 1), then MPI_Win_flush: a round trip
//   compare_and_swap  MPI_Compare_and_swap of one uint64 that always
//                     succeeds (compare n, swap in n+1), then MPI_Win_flush
//
// There is no pipelined get: overlapping gets into one origin buffer break
// MPI's rule that a get's buffer is not touched until it completes, and a
// buffer per outstanding get does not fit at the large sizes.
//
// For put, put_pipelined and get, each size runs from MINB to MAXB bytes,
// times FACTOR each step (suffixes K, M, G are powers of 1024). The atomics
// work on one 8-byte word and print one line, size 8, whatever -b and -e
// say. Per size, the origin runs WARMUP ops, all ranks meet in a barrier,
// then the origin runs ITERS ops back to back between two MPI_Wtime calls.
// Large sizes run fewer: ITERS is cut to max(1, BYTES / size) (-V, default
// 1 GiB moved per size and op; 0 keeps ITERS), and WARMUP to no more than
// that. Rank 0 prints one line per op and size:
//
//   op size_bytes iters time_us GBps wrong
//
// iters is the count timed, time_us = elapsed / iters, GBps = size * iters
// / elapsed / 1e9 (the atomics' GBps counts their 8 bytes). wrong is `-`
// unless -c asks for checks. With -c, after each timed loop:
//   put, put_pipelined  the origin puts a pattern (put_pipelined: in up to
//                       ITERS consecutive pieces, one flush for them all);
//                       the target, after a barrier and MPI_Win_sync, counts
//                       the bytes of its window that differ from it
//   get                 the target stores a pattern in its window; the
//                       origin gets it and counts the bytes that differ
//   fetch_and_op        each value fetched during warm-up and timing must
//                       be the count of ops before it, and the word at the
//                       target the count of all of them
//   compare_and_swap    each value fetched must equal the compare value;
//                       one more swap whose compare value is wrong must
//                       fetch the word and leave it as it was
// wrong sums the mismatches over all pairs. The checks run outside the
// timed loop; the loop itself is the same with and without -c.
//
// Every MPI call's return code is checked (MPI_ERRORS_RETURN on the world
// communicator and the window); a failure prints the call and MPI's message
// and aborts the job.
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { PUT, PUT_PIPELINED, GET, FETCH_AND_OP, COMPARE_AND_SWAP, NOPS };

static const char *op_names[NOPS] = {"put", "put_pipelined", "get", "fetch_and_op", "compare_and_swap"};

static int world_rank;

// check_rc aborts the job when an MPI call has failed, naming the call.
static void check_rc(int rc, const char *call, int line) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error code %d", rc);
  fprintf(stderr, "mpi_rma: rank %d: line %d: %s: %s\n", world_rank, line, call, msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(call) check_rc((call), #call, __LINE__)

static void usage(FILE *f) {
  fprintf(f,
          "usage: mpirun -np 2 mpi_rma [--op LIST] [-b MINB] [-e MAXB] [-f FACTOR]\n"
          "                            [-n ITERS] [-w WARMUP] [-V BYTES] [-W BYTES] [-c]\n"
          "  --op LIST  comma-separated, from put,put_pipelined,get,fetch_and_op,\n"
          "             compare_and_swap (default: all)\n"
          "  -b MINB    smallest size, bytes, suffixes K M G (default 8)\n"
          "  -e MAXB    largest size (default 64M)\n"
          "  -f FACTOR  size step, >= 2 (default 2)\n"
          "  -n ITERS   timed ops per size (default 100)\n"
          "  -w WARMUP  untimed ops before them (default 10)\n"
          "  -V BYTES   cut ITERS to BYTES/size at large sizes (default 1G; 0: never)\n"
          "  -W BYTES   window size, >= MAXB (default MAXB)\n"
          "  -c         check the bytes put and got and the values fetched\n");
}

// fail prints a usage error and leaves. Every rank parses the same
// arguments and so takes the same path; rank 0 alone speaks.
static void fail(const char *what, const char *arg) {
  if (world_rank == 0) {
    fprintf(stderr, "mpi_rma: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
    usage(stderr);
  }
  CHECK(MPI_Finalize());
  exit(2);
}

// parse_bytes reads a size with an optional K, M or G suffix (powers of
// 1024); zero is allowed where zero_ok.
static long parse_bytes(const char *s, int zero_ok) {
  char *end;
  long v = strtol(s, &end, 10);
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  }
  if (end == s || *end != '\0' || v < 0 || (v == 0 && !zero_ok) || v > (LONG_MAX >> shift)) fail("bad size", s);
  return v << shift;
}

static int parse_int(const char *s, int min, const char *what) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < min || v > INT_MAX) fail(what, s);
  return (int)v;
}

// parse_ops sets want[o] for each op named in the comma-separated list.
static void parse_ops(const char *list, int want[NOPS]) {
  char *copy = strdup(list), *save = NULL;
  if (!copy) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(want, 0, NOPS * sizeof want[0]);
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int found = 0;
    for (int o = 0; o < NOPS; o++)
      if (strcmp(tok, op_names[o]) == 0 || strcmp(tok, "all") == 0) want[o] = found = 1;
    if (!found) fail("unknown op", tok);
  }
  free(copy);
}

// pat is byte i of the pattern the checks move at step seq: it changes with
// both, so that bytes left over from an earlier size or op do not pass, and
// it is never the filler the timed loops carry.
enum { FILLER = 0xA5 };
static unsigned char pat(long i, int seq) {
  unsigned char b = (unsigned char)((i * 131 + seq * 17 + 1) % 251);
  return b == FILLER ? 0 : b;
}

// run_bulk issues n ops of size bytes from this origin to target.
static void run_bulk(enum op o, unsigned char *src, unsigned char *dst, long size, int n, int target, MPI_Win win) {
  int count = (int)size;
  switch (o) {
  case PUT:
    for (int i = 0; i < n; i++) {
      CHECK(MPI_Put(src, count, MPI_BYTE, target, 0, count, MPI_BYTE, win));
      CHECK(MPI_Win_flush(target, win));
    }
    break;
  case PUT_PIPELINED:
    for (int i = 0; i < n; i++) CHECK(MPI_Put(src, count, MPI_BYTE, target, 0, count, MPI_BYTE, win));
    CHECK(MPI_Win_flush(target, win));
    break;
  case GET:
    for (int i = 0; i < n; i++) {
      CHECK(MPI_Get(dst, count, MPI_BYTE, target, 0, count, MPI_BYTE, win));
      CHECK(MPI_Win_flush(target, win));
    }
    break;
  default:
    break;
  }
}

// run_atomic issues n atomic ops on the word at offset 0 of target's
// window, each completed by a flush, and keeps the values fetched in res.
// done is the count of ops on the word so far: compare_and_swap expects the
// word to hold it.
static void run_atomic(enum op o, uint64_t *res, int n, uint64_t done, int target, MPI_Win win) {
  const uint64_t one = 1;
  for (int i = 0; i < n; i++) {
    if (o == FETCH_AND_OP) {
      CHECK(MPI_Fetch_and_op(&one, &res[i], MPI_UINT64_T, target, 0, MPI_SUM, win));
    } else {
      uint64_t cmp = done + (uint64_t)i, swap = cmp + 1;
      CHECK(MPI_Compare_and_swap(&swap, &cmp, &res[i], MPI_UINT64_T, target, 0, win));
    }
    CHECK(MPI_Win_flush(target, win));
  }
}

// target_sync makes what origins wrote so far visible to a target's loads,
// and what the target stored so far visible to the origins' next ops: the
// barrier orders, MPI_Win_sync on either side of it reconciles the window's
// public and private copies (a memory fence under the unified model).
static void target_sync(int is_target, MPI_Win win) {
  if (is_target) CHECK(MPI_Win_sync(win));
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  if (is_target) CHECK(MPI_Win_sync(win));
}

// check_bulk runs the -c check of a bulk op at size bytes and returns this
// rank's count of wrong bytes.
static long check_bulk(enum op o, unsigned char *win_buf, unsigned char *src, unsigned char *dst, long size, int iters,
                       int seq, int origin, int is_target, int target, MPI_Win win) {
  long wrong = 0;
  if (o == GET) {
    if (is_target)
      for (long i = 0; i < size; i++) win_buf[i] = pat(i, seq);
    target_sync(is_target, win);
    if (origin) {
      memset(dst, FILLER, (size_t)size);
      CHECK(MPI_Get(dst, (int)size, MPI_BYTE, target, 0, (int)size, MPI_BYTE, win));
      CHECK(MPI_Win_flush(target, win));
      for (long i = 0; i < size; i++) wrong += dst[i] != pat(i, seq);
    }
    return wrong;
  }
  if (origin) {
    for (long i = 0; i < size; i++) src[i] = pat(i, seq);
    if (o == PUT) {
      CHECK(MPI_Put(src, (int)size, MPI_BYTE, target, 0, (int)size, MPI_BYTE, win));
    } else {
      // Up to iters consecutive pieces, all outstanding at once.
      long pieces = iters < size ? iters : size, off = 0;
      for (long k = 0; k < pieces; k++) {
        long len = size / pieces + (k < size % pieces ? 1 : 0);
        CHECK(MPI_Put(src + off, (int)len, MPI_BYTE, target, off, (int)len, MPI_BYTE, win));
        off += len;
      }
    }
    CHECK(MPI_Win_flush(target, win));
    memset(src, FILLER, (size_t)size);
  }
  target_sync(is_target, win);
  if (is_target)
    for (long i = 0; i < size; i++) wrong += win_buf[i] != pat(i, seq);
  return wrong;
}

// check_atomic checks the values an atomic op fetched during warm-up and
// timing (res, total of them) and the word they left at the target, and for
// compare_and_swap one swap that must fail. It returns this rank's count of
// wrong values.
static long check_atomic(enum op o, uint64_t *res, int total, uint64_t *word, int origin, int is_target, int target,
                         MPI_Win win) {
  long wrong = 0;
  if (origin) {
    for (int i = 0; i < total; i++) wrong += res[i] != (uint64_t)i;
    if (o == COMPARE_AND_SWAP) {
      uint64_t cmp = (uint64_t)total + 5, swap = 999, got = 0;
      CHECK(MPI_Compare_and_swap(&swap, &cmp, &got, MPI_UINT64_T, target, 0, win));
      CHECK(MPI_Win_flush(target, win));
      wrong += got != (uint64_t)total;
    }
  }
  target_sync(is_target, win);
  if (is_target) wrong += *word != (uint64_t)total;
  return wrong;
}

int main(int argc, char **argv) {
  CHECK(MPI_Init(&argc, &argv));
  CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int p;
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  CHECK(MPI_Comm_size(MPI_COMM_WORLD, &p));
  const int rank = world_rank;

  int want[NOPS];
  parse_ops("all", want);
  long minb = 8, maxb = 64L << 20, factor = 2, volume = 1L << 30, window = 0;
  int iters = 100, warm = 10, check = 0;
  static const struct option longopts[] = {{"op", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "o:b:e:f:n:w:V:W:ch", longopts, NULL)) != -1;) {
    switch (c) {
    case 'o': parse_ops(optarg, want); break;
    case 'b': minb = parse_bytes(optarg, 0); break;
    case 'e': maxb = parse_bytes(optarg, 0); break;
    case 'f': factor = parse_int(optarg, 2, "bad factor (need >= 2)"); break;
    case 'n': iters = parse_int(optarg, 1, "bad iteration count (need >= 1)"); break;
    case 'w': warm = parse_int(optarg, 0, "bad warm-up count (need >= 0)"); break;
    case 'V': volume = parse_bytes(optarg, 1); break;
    case 'W': window = parse_bytes(optarg, 0); break;
    case 'c': check = 1; break;
    case 'h':
      if (rank == 0) usage(stdout);
      CHECK(MPI_Finalize());
      return 0;
    default: fail("bad option", argv[optind - 1]);
    }
  }
  if (optind < argc) fail("unexpected argument", argv[optind]);
  if (minb > maxb) fail("need MINB <= MAXB", NULL);
  if (maxb > INT_MAX) fail("MAXB must fit an int count of bytes", NULL);
  if (window == 0) window = maxb;
  if (window < maxb) fail("need a window (-W) of at least MAXB", NULL);
  if (p < 2) fail("needs at least 2 processes", NULL);

  // Pairs: even rank r targets r+1.
  const int pairs = p / 2;
  const int origin = rank % 2 == 0 && rank + 1 < p, is_target = rank % 2 == 1;
  const int target = origin ? rank + 1 : MPI_PROC_NULL;

  // One window for every op; the atomics use its first 8 bytes. Rounded up
  // to 8 bytes so that the word is whole and aligned.
  const long win_bytes = (window + 7) / 8 * 8;
  unsigned char *win_buf = NULL;
  MPI_Win win;
  CHECK(MPI_Win_allocate((MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win));
  CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
  memset(win_buf, FILLER, (size_t)win_bytes);
  int *model = NULL, has_model = 0, name_len = 0;
  CHECK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &has_model));
  // Open MPI names a window after the osc component that serves it
  // ("rdma window 3"): the one place a program can learn which it got.
  char win_name[MPI_MAX_OBJECT_NAME] = "";
  CHECK(MPI_Win_get_name(win, win_name, &name_len));
  CHECK(MPI_Win_lock_all(0, win));
  // The filler stored above is the target's before any origin reads it.
  target_sync(1, win);

  const long bufn = win_bytes;
  const int maxops = iters + warm + 1;
  unsigned char *src = malloc((size_t)bufn), *dst = malloc((size_t)bufn);
  uint64_t *res = calloc((size_t)maxops, sizeof *res);
  if (!src || !dst || !res) {
    fprintf(stderr, "mpi_rma: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(src, FILLER, (size_t)bufn);
  memset(dst, 0, (size_t)bufn);

  if (rank == 0) {
    printf("# mpi_rma np=%d pairs=%d iters=%d warmup=%d volume=%ld check=%d window=%ld model=%s\n", p, pairs, iters,
           warm, volume, check, win_bytes,
           !has_model ? "unknown" : *model == MPI_WIN_UNIFIED ? "unified" : "separate");
    printf("# window name: %s\n", name_len > 0 ? win_name : "(none)");
    printf("# op size_bytes iters time_us GBps wrong\n");
    fflush(stdout);
  }

  int seq = 0;
  for (int o = 0; o < NOPS; o++) {
    if (!want[o]) continue;
    const int atomic = o == FETCH_AND_OP || o == COMPARE_AND_SWAP;
    const long from = atomic ? 8 : minb, to = atomic ? 8 : maxb;
    for (long size = from; size <= to; size *= factor) {
      int n = iters, w = warm;
      if (volume > 0 && (long)n * size > volume) n = volume / size > 0 ? (int)(volume / size) : 1;
      if (w > n) w = n;

      if (atomic) {
        // The word starts at 0 for every atomic op.
        if (is_target) *(uint64_t *)win_buf = 0;
        target_sync(is_target, win);
      }
      if (origin) {
        if (atomic)
          run_atomic((enum op)o, res, w, 0, target, win);
        else
          run_bulk((enum op)o, src, dst, size, w, target, win);
      }
      CHECK(MPI_Barrier(MPI_COMM_WORLD));
      double t = 0;
      if (origin) {
        double t0 = MPI_Wtime();
        if (atomic)
          run_atomic((enum op)o, res + w, n, (uint64_t)w, target, win);
        else
          run_bulk((enum op)o, src, dst, size, n, target, win);
        t = MPI_Wtime() - t0;
      }
      double tmax = 0;
      CHECK(MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));

      long wrong = 0, wrong_all = 0;
      if (check) {
        if (atomic)
          wrong = check_atomic((enum op)o, res, w + n, (uint64_t *)win_buf, origin, is_target, target, win);
        else
          wrong = check_bulk((enum op)o, win_buf, src, dst, size, n, ++seq, origin, is_target, target, win);
        // An all-reduce, not a reduce to rank 0: no origin may go on to its
        // next puts before every target has read what this check left.
        CHECK(MPI_Allreduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
      }
      if (rank == 0) {
        char wbuf[32] = "-";
        if (check) snprintf(wbuf, sizeof wbuf, "%ld", wrong_all);
        printf("%s %ld %d %.3f %.6f %s\n", op_names[o], size, n, tmax / n * 1e6, (double)size * n / tmax / 1e9,
               wbuf);
        fflush(stdout);
      }
      if (size > to / factor) break;  // the next step would overflow or pass MAXB
    }
  }

  CHECK(MPI_Win_unlock_all(win));
  CHECK(MPI_Win_free(&win));
  free(src);
  free(dst);
  free(res);
  CHECK(MPI_Finalize());
  return 0;
}
