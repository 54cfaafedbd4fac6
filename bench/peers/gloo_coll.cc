// Collectives of float32 (sum where they reduce) over Gloo's TCP
// transport, the Gloo peer of bench/compare.sh.
//
//   RANK=r WORLD_SIZE=p GLOO_STORE=dir ./gloo_coll OP MINB MAXB [FACTOR [ITERS [WARMUP]]]
//
// OP is one of:
//
//   all_reduce      gloo::allreduce, ring, in place
//   all_gather      gloo::allgather, out of place
//   reduce_scatter  gloo::ReduceScatterHalvingDoubling (Gloo's legacy
//                   algorithm API; the newer API has no reduce-scatter in
//                   Debian's snapshot), in place: the result is the start of
//                   the input buffer; built once per size, outside the timing
//   all_to_all      gloo::alltoall, out of place
//   broadcast       gloo::broadcast from rank 0, in place
//
// Start p processes with RANK 0..p-1 and the same empty directory in
// GLOO_STORE: they rendezvous through gloo::rendezvous::FileStore and connect
// a full mesh of TCP pairs on 127.0.0.1. GLOO_TIMEOUT_MS (default 60000)
// bounds the rendezvous and each operation, so that a stalled run fails
// instead of hanging.
//
// all_reduce, all_gather, all_to_all and broadcast are the API
// torch.distributed's gloo backend calls (with the default async pairs). For
// each size every rank runs WARMUP ops, a barrier, then ITERS ops back to
// back. Rank 0 prints one line per size in the format shared by all peers:
//
//   size_bytes time_us algbw_GBps busbw_GBps wrong
//
// Sizes, times and bandwidths follow nccl-tests, as `commnode bench` does:
// a size of B bytes is count = B/4 elements; the ops that split the buffer
// among ranks use blocks of count/p elements, and size_bytes is the larger
// of one rank's send and receive buffers. time_us is the largest over ranks
// of (elapsed / ITERS); algbw = size / time; busbw = algbw * 2(p-1)/p for
// all-reduce, (p-1)/p for all-gather, reduce-scatter and all-to-all, 1 for
// broadcast. After timing, one more op on a known pattern is checked; wrong
// is summed over ranks.
#include <gloo/algorithm.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

enum class Op { AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast };

const char* const kOpNames[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"};

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

// counts lays out a buffer of count elements as nccl-tests does: the
// elements one rank sends and receives, and the block (elements per rank)
// of the ops that split the buffer.
void counts(Op o, size_t count, int p, size_t& send, size_t& recv, size_t& block) {
  switch (o) {
    case Op::AllGather: block = count / p; send = block; recv = block * p; return;
    case Op::ReduceScatter: block = count / p; send = block * p; recv = block; return;
    case Op::AllToAll: block = count / p; send = recv = block * p; return;
    default: block = send = recv = count; return;
  }
}

double busFactor(Op o, int p) {
  switch (o) {
    case Op::AllReduce: return 2.0 * (p - 1) / p;
    case Op::Broadcast: return 1.0;
    default: return static_cast<double>(p - 1) / p;
  }
}

// pat is rank q's value at element i of its input: small integers, so that
// every partial sum is exact whatever the order, and different per rank.
float pat(int q, size_t i) { return static_cast<float>(q * 8 + 1 + i % 7); }

struct Coll {
  std::shared_ptr<gloo::Context> ctx;
  std::chrono::milliseconds timeout;

  void allreduce(void* buf, size_t n, size_t elemSize, ReduceFn fn) {
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

  void allgather(float* in, float* out, size_t n) {
    gloo::AllgatherOptions opts(ctx);
    opts.setInput(in, n);
    opts.setOutput(out, n * ctx->size);
    opts.setTag(nextTag());
    opts.setTimeout(timeout);
    gloo::allgather(opts);
  }

  void alltoall(float* in, float* out, size_t n) {
    gloo::AlltoallOptions opts(ctx);
    opts.setInput(in, n * ctx->size);
    opts.setOutput(out, n * ctx->size);
    opts.setTag(nextTag());
    opts.setTimeout(timeout);
    gloo::alltoall(opts);
  }

  void broadcast(float* buf, size_t n) {
    gloo::BroadcastOptions opts(ctx);
    opts.setOutput(buf, n);  // the root's output is its input
    opts.setRoot(0);
    opts.setTag(nextTag());
    opts.setTimeout(timeout);
    gloo::broadcast(opts);
  }

  void barrier() {
    gloo::BarrierOptions opts(ctx);
    opts.setTag(nextTag());
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  }
};

int run(int argc, char** argv) {
  int o = -1;
  for (int i = 0; argc > 1 && i < 5; i++)
    if (std::strcmp(argv[1], kOpNames[i]) == 0) o = i;
  if (argc < 4 || o < 0) {
    std::fprintf(stderr,
                 "usage: RANK=r WORLD_SIZE=p GLOO_STORE=dir gloo_coll "
                 "all_reduce|all_gather|reduce_scatter|all_to_all|broadcast MINB MAXB [FACTOR [ITERS [WARMUP]]]\n");
    return 2;
  }
  const Op op = static_cast<Op>(o);
  const int rank = envInt("RANK", -1), p = envInt("WORLD_SIZE", 0);
  const char* storeDir = std::getenv("GLOO_STORE");
  if (rank < 0 || p < 1 || rank >= p || !storeDir) {
    std::fprintf(stderr, "gloo_coll: RANK, WORLD_SIZE and GLOO_STORE must be set\n");
    return 2;
  }
  const long minb = parseBytes(argv[2]), maxb = parseBytes(argv[3]);
  const long factor = argc > 4 ? std::atol(argv[4]) : 2;
  const int iters = argc > 5 ? std::atoi(argv[5]) : 20, warm = argc > 6 ? std::atoi(argv[6]) : 5;
  if (factor < 2 || iters < 1 || warm < 0) {
    std::fprintf(stderr, "gloo_coll: need FACTOR >= 2, ITERS >= 1, WARMUP >= 0\n");
    return 2;
  }
  const std::chrono::milliseconds timeout(envInt("GLOO_TIMEOUT_MS", 60000));

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fileStore(storeDir);
  gloo::rendezvous::PrefixStore store("gloo_coll", fileStore);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, p);
  ctx->setTimeout(timeout);
  ctx->connectFullMesh(store, dev);
  Coll c{ctx, timeout};

  // Buffers for the largest size; each size uses their starts. Zeros keep
  // repeated in-place sums finite during timing.
  const size_t maxn = maxb / 4 > 0 ? maxb / 4 : 1;
  std::vector<float> send(maxn, 0.0f), recv;
  if (op == Op::AllGather || op == Op::AllToAll) recv.assign(maxn, 0.0f);
  const ReduceFn sumFloat = &gloo::sum<float>;
  const ReduceFn maxDouble = &gloo::max<double>;
  const ReduceFn sumDouble = &gloo::sum<double>;

  if (rank == 0) {
    std::printf("# gloo_coll %s np=%d iters=%d warmup=%d\n", kOpNames[o], p, iters, warm);
    std::printf("# size_bytes time_us algbw_GBps busbw_GBps wrong\n");
    std::fflush(stdout);
  }
  for (long bytes = minb; bytes <= maxb; bytes *= factor) {
    size_t sendN, recvN, n;
    counts(op, bytes / 4, p, sendN, recvN, n);
    if (n == 0) throw std::invalid_argument("size " + std::to_string(bytes) + " leaves no element per rank");
    std::fill(send.begin(), send.begin() + sendN, 0.0f);

    // The legacy reduce-scatter binds its buffers when built.
    std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> rs;
    if (op == Op::ReduceScatter) {
      rs.reset(new gloo::ReduceScatterHalvingDoubling<float>(
          ctx, std::vector<float*>{send.data()}, static_cast<int>(sendN), std::vector<int>(p, static_cast<int>(n))));
    }
    auto once = [&] {
      switch (op) {
        case Op::AllReduce: c.allreduce(send.data(), n, sizeof(float), sumFloat); break;
        case Op::AllGather: c.allgather(send.data(), recv.data(), n); break;
        case Op::ReduceScatter: rs->run(); break;
        case Op::AllToAll: c.alltoall(send.data(), recv.data(), n); break;
        case Op::Broadcast: c.broadcast(send.data(), n); break;
      }
    };

    for (int i = 0; i < warm; i++) once();
    c.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++) once();
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    c.allreduce(&t, 1, sizeof(double), maxDouble);

    // The check: patterned inputs, poisoned outputs, one more op.
    const size_t off = op == Op::AllGather ? rank * n : 0;
    for (size_t i = 0; i < sendN; i++)
      send[i] = (op == Op::Broadcast && rank != 0) ? -1.0f : pat(rank, off + i);
    std::fill(recv.begin(), recv.begin() + std::min(recv.size(), recvN), -1.0f);
    once();
    const float sumBase = static_cast<float>(8 * p * (p - 1) / 2);
    double wrong = 0;
    switch (op) {
      case Op::AllReduce:
        for (size_t i = 0; i < n; i++)
          if (send[i] != sumBase + p * (1 + i % 7)) wrong++;
        break;
      case Op::AllGather:  // block q is rank q's input
        for (size_t j = 0; j < recvN; j++)
          if (recv[j] != pat(static_cast<int>(j / n), j)) wrong++;
        break;
      case Op::ReduceScatter:  // in place: this rank's block of the sum at the start
        for (size_t i = 0; i < n; i++)
          if (send[i] != sumBase + p * (1 + (rank * n + i) % 7)) wrong++;
        break;
      case Op::AllToAll:  // block q is what rank q sent to this rank
        for (size_t j = 0; j < recvN; j++)
          if (recv[j] != pat(static_cast<int>(j / n), rank * n + j % n)) wrong++;
        break;
      case Op::Broadcast:
        for (size_t i = 0; i < n; i++)
          if (send[i] != pat(0, i)) wrong++;
        break;
    }
    c.allreduce(&wrong, 1, sizeof(double), sumDouble);
    rs.reset();

    if (rank == 0) {
      const long size = 4 * static_cast<long>(std::max(sendN, recvN));
      const double algbw = size / t / 1e9;
      std::printf("%ld %.3f %.6f %.6f %.0f\n", size, t * 1e6, algbw, algbw * busFactor(op, p), wrong);
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
    std::fprintf(stderr, "gloo_coll: rank %s: %s\n", std::getenv("RANK"), e.what());
    return 1;
  }
}
