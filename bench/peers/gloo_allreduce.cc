// gloo::allreduce sweep (ring, float32, sum) over Gloo's TCP transport, the
// Gloo peer of bench/compare.sh.
//
//   RANK=r WORLD_SIZE=p GLOO_STORE=dir ./gloo_allreduce MINB MAXB [FACTOR [ITERS [WARMUP]]]
//
// Start p processes with RANK 0..p-1 and the same empty directory in
// GLOO_STORE: they rendezvous through gloo::rendezvous::FileStore and connect
// a full mesh of TCP pairs on 127.0.0.1. GLOO_TIMEOUT_MS (default 60000)
// bounds the rendezvous and each operation, so that a stalled run fails
// instead of hanging.
//
// This is the API torch.distributed's gloo backend calls (gloo::allreduce with
// the default async pairs). For each size every rank runs WARMUP all-reduces,
// a barrier, then ITERS all-reduces back to back. Rank 0 prints one line per
// size in the format shared by all peers:
//
//   size_bytes time_us algbw_GBps busbw_GBps wrong
//
// time_us is the largest over ranks of (elapsed / ITERS); busbw = algbw *
// 2(p-1)/p. After timing, one more all-reduce of a known pattern is checked;
// wrong is summed over ranks.
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

long parseBytes(const char* s) {
  char* end;
  long v = std::strtol(s, &end, 10);
  switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
  }
  if (*end != '\0' || v <= 0) throw std::invalid_argument(std::string("bad size ") + s);
  return v;
}

int envInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : def;
}

// Each operation gets its own tag, as torch.distributed does, so that a rank
// that runs ahead into the next operation never matches the previous one's
// messages.
uint32_t nextTag() {
  static uint32_t tag = 0;
  return ++tag;
}

void allreduce(const std::shared_ptr<gloo::Context>& ctx, void* buf, size_t n, size_t elemSize,
               ReduceFn fn, std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions opts(ctx);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  if (elemSize == sizeof(float)) {
    opts.setOutput(static_cast<float*>(buf), n);  // no input: in place
  } else {
    opts.setOutput(static_cast<double*>(buf), n);
  }
  opts.setReduceFunction(fn);
  opts.setTag(nextTag());
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

void barrier(const std::shared_ptr<gloo::Context>& ctx, std::chrono::milliseconds timeout) {
  gloo::BarrierOptions opts(ctx);
  opts.setTag(nextTag());
  opts.setTimeout(timeout);
  gloo::barrier(opts);
}

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: RANK=r WORLD_SIZE=p GLOO_STORE=dir gloo_allreduce MINB MAXB [FACTOR [ITERS [WARMUP]]]\n");
    return 2;
  }
  const int rank = envInt("RANK", -1), p = envInt("WORLD_SIZE", 0);
  const char* storeDir = std::getenv("GLOO_STORE");
  if (rank < 0 || p < 1 || rank >= p || !storeDir) {
    std::fprintf(stderr, "gloo_allreduce: RANK, WORLD_SIZE and GLOO_STORE must be set\n");
    return 2;
  }
  const long minb = parseBytes(argv[1]), maxb = parseBytes(argv[2]);
  const long factor = argc > 3 ? std::atol(argv[3]) : 2;
  const int iters = argc > 4 ? std::atoi(argv[4]) : 20, warm = argc > 5 ? std::atoi(argv[5]) : 5;
  if (factor < 2 || iters < 1 || warm < 0) {
    std::fprintf(stderr, "gloo_allreduce: need FACTOR >= 2, ITERS >= 1, WARMUP >= 0\n");
    return 2;
  }
  const std::chrono::milliseconds timeout(envInt("GLOO_TIMEOUT_MS", 60000));

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fileStore(storeDir);
  gloo::rendezvous::PrefixStore store("gloo_allreduce", fileStore);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, p);
  ctx->setTimeout(timeout);
  ctx->connectFullMesh(store, dev);

  // One buffer for the largest size; each size uses its start. Zeros keep
  // the repeated in-place sums finite during timing.
  const size_t maxn = maxb / 4 > 0 ? maxb / 4 : 1;
  std::vector<float> buf(maxn, 0.0f);
  const ReduceFn sumFloat = &gloo::sum<float>;
  const ReduceFn maxDouble = &gloo::max<double>;
  const ReduceFn sumDouble = &gloo::sum<double>;

  if (rank == 0) {
    std::printf("# gloo_allreduce ring np=%d iters=%d warmup=%d\n", p, iters, warm);
    std::printf("# size_bytes time_us algbw_GBps busbw_GBps wrong\n");
    std::fflush(stdout);
  }
  for (long bytes = minb; bytes <= maxb; bytes *= factor) {
    const size_t n = bytes / 4 > 0 ? bytes / 4 : 1;
    std::fill(buf.begin(), buf.begin() + n, 0.0f);
    for (int i = 0; i < warm; i++) allreduce(ctx, buf.data(), n, sizeof(float), sumFloat, timeout);
    barrier(ctx, timeout);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++) allreduce(ctx, buf.data(), n, sizeof(float), sumFloat, timeout);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    allreduce(ctx, &t, 1, sizeof(double), maxDouble, timeout);

    // Small integers: every partial sum is exact, whatever the order.
    for (size_t i = 0; i < n; i++) buf[i] = static_cast<float>(rank + 1 + i % 7);
    allreduce(ctx, buf.data(), n, sizeof(float), sumFloat, timeout);
    double wrong = 0;
    for (size_t i = 0; i < n; i++)
      if (buf[i] != static_cast<float>(p * (p + 1) / 2 + p * (i % 7))) wrong++;
    allreduce(ctx, &wrong, 1, sizeof(double), sumDouble, timeout);

    if (rank == 0) {
      const double algbw = bytes / t / 1e9;
      std::printf("%ld %.3f %.6f %.6f %.0f\n", bytes, t * 1e6, algbw, algbw * 2.0 * (p - 1) / p, wrong);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce: rank %s: %s\n", std::getenv("RANK"), e.what());
    return 1;
  }
}
