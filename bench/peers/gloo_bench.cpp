// gloo_bench.cpp: Gloo's side of compare_peers.sh (Debian's libgloo-dev, TCP on 127.0.0.1).
// One collective, one size per launch, ranks started by hcomm-run (HCOMM_RANK, HCOMM_WORLD_SIZE):
//   hcomm-run -n N gloo_bench OP BYTES -n ITERS -w WARMUP -J OUT.json -S STORE_DIR [-a ALGO]
// STORE_DIR: an empty directory for the FileStore rendezvous, fresh for each launch. ALGO, for
// allreduce: ring, halving_doubling, bcube or all (default; one JSON result per algorithm; all
// leaves out bcube for rank counts that are not a multiple of 2, where Gloo's bcube is wrong).
// Sizes, timing, check and output follow timing.h, as mpi_bench.c and hcomm-bench do.
//
// What each OP runs, named in the JSON's "algo" (Gloo has no other algorithm for the last four):
//   allreduce       AllreduceRing, AllreduceHalvingDoubling, AllreduceBcube (in place)
//   broadcast       BroadcastOneToAll ("one_to_all", in place)
//   allgather       AllgatherRing ("ring")
//   reduce_scatter  ReduceScatterHalvingDoubling ("halving_doubling"): in place on the nranks
//                   blocks; rank r's reduced block lands at the buffer's start
//   alltoall        gloo::alltoall ("pairwise"): posts every pair's send and receive at once
//
// Gloo's algorithm objects are built once per buffer and then run() again and again, as its users
// do; building one allocates and connects its buffers, which must not be timed. Its allreduces and
// reduce-scatter work in place, so the timed iterations keep summing their own results: harmless
// for timing, since sums of positive floats stay finite or saturate at +inf, never denormal or NaN.
#include <gloo/allgather_ring.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/alltoall.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "timing.h"

namespace {

using Ctx = std::shared_ptr<gloo::Context>;

struct Bench {
  std::unique_ptr<gloo::Algorithm> algo, barrier;
};

void run(void* b) {
  static_cast<Bench*>(b)->algo->run();
}
void barrier(void* b) {
  static_cast<Bench*>(b)->barrier->run();
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v) throw std::runtime_error(std::string(name) + " is not set (launch with hcomm-run)");
  return std::stoi(v);
}

// gloo::alltoall (an unbound-buffer call, not an Algorithm class) as an Algorithm. The options
// hold the registered buffers, so they are built once, as an Algorithm's are.
class Alltoall : public gloo::Algorithm {
 public:
  Alltoall(const Ctx& ctx, float* in, float* out, size_t elements) : Algorithm(ctx), opts_(ctx) {
    opts_.setInput(in, elements);
    opts_.setOutput(out, elements);
  }
  void run() override { gloo::alltoall(opts_); }

 private:
  gloo::AlltoallOptions opts_;
};

// Gloo's algorithm object for OP (allreduce: named NAME) over the buffers, `count` elements per
// block for the block ops; in place (in == out) for allreduce, broadcast and reduce_scatter.
std::unique_ptr<gloo::Algorithm> make_algo(peer_op op, const std::string& name, const Ctx& ctx,
                                           float* in, float* out, int count) {
  using std::make_unique;
  const std::vector<float*> buf{out};
  const int nranks = ctx->size;
  if (op == PEER_BROADCAST)
    return make_unique<gloo::BroadcastOneToAll<float>>(ctx, buf, count, PEER_ROOT);
  if (op == PEER_ALLGATHER)
    return make_unique<gloo::AllgatherRing<float>>(ctx, std::vector<const float*>{in}, out, count);
  if (op == PEER_REDUCE_SCATTER)
    return make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
        ctx, buf, count * nranks, std::vector<int>(static_cast<size_t>(nranks), count));
  if (op == PEER_ALLTOALL)
    return make_unique<Alltoall>(ctx, in, out, static_cast<size_t>(count) * nranks);
  if (name == "ring") return make_unique<gloo::AllreduceRing<float>>(ctx, buf, count);
  if (name == "halving_doubling")
    return make_unique<gloo::AllreduceHalvingDoubling<float>>(ctx, buf, count);
  if (name == "bcube") return make_unique<gloo::AllreduceBcube<float>>(ctx, buf, count);
  throw std::runtime_error("unknown allreduce algorithm " + name);
}

// Maximum (time) or sum (wrong count) over ranks, in place.
void allreduce_scalar(const Ctx& ctx, double* v, const gloo::ReductionFunction<double>* fn) {
  gloo::AllreduceRing<double>(ctx, std::vector{v}, 1, fn).run();
}

}  // namespace

int main(int argc, char** argv) try {
  const peer_args a = peer_parse_args(argc, argv);
  if (!a.store_dir) peer_usage(argv[0]);
  const int rank = env_int("HCOMM_RANK"), nranks = env_int("HCOMM_WORLD_SIZE");
  const size_t count = peer_count(&a, nranks);  // before connecting: it may refuse the size

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";  // loopback, as hcomm's and MPI's runs
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file_store(a.store_dir);
  gloo::rendezvous::PrefixStore store("gloo_bench", file_store);
  auto rctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  rctx->connectFullMesh(store, device);
  const Ctx ctx = rctx;

  const size_t in_count = peer_in_count(a.op, count, nranks);
  const size_t out_count = peer_out_count(a.op, count, nranks);
  // In place but for allgather and alltoall: then `out` is the input too (reduce_scatter: the
  // nranks blocks, its result the first).
  const bool separate = a.op == PEER_ALLGATHER || a.op == PEER_ALLTOALL;
  std::vector<float> in(separate ? in_count : 0), out(separate ? out_count : in_count);
  float* const in_ptr = separate ? in.data() : out.data();

  std::vector<std::string> algos{"ring"};
  if (a.op == PEER_BROADCAST) algos = {"one_to_all"};
  if (a.op == PEER_REDUCE_SCATTER) algos = {"halving_doubling"};
  if (a.op == PEER_ALLTOALL) algos = {"pairwise"};
  if (a.op == PEER_ALLREDUCE && a.algo && std::string(a.algo) != "all") {
    algos = {a.algo};
  } else if (a.op == PEER_ALLREDUCE) {
    algos.push_back("halving_doubling");
    // Gloo's bcube needs the rank count to be a multiple of its base, and is wrong otherwise.
    if (nranks % ctx->base == 0) algos.push_back("bcube");
  }

  Bench b{nullptr, std::make_unique<gloo::BarrierAllToAll>(ctx)};
  FILE* json = rank == 0 ? std::fopen(a.json_path, "w") : nullptr;
  if (rank == 0 && !json) throw std::runtime_error(std::string("cannot write ") + a.json_path);
  // Gloo writes received data straight into the destination, whenever it arrives, and its run()
  // may return with its last send still reading the source. So a rank rewrites its buffers only
  // between two barriers: once all ranks have finished the previous iteration, and before any
  // rank starts the next.
  auto prepare = [&] {
    b.barrier->run();
    peer_prepare(a.op, rank, nranks, count, in_ptr, out.data());
    b.barrier->run();
  };
  for (size_t k = 0; k < algos.size(); ++k) {
    b.algo = make_algo(a.op, algos[k], ctx, in_ptr, out.data(), static_cast<int>(count));
    prepare();
    double time_us = peer_time_us(run, barrier, &b, a.warmup, a.iters);
    prepare();
    b.algo->run();
    double wrong = static_cast<double>(peer_count_wrong(a.op, rank, nranks, count, out.data()));

    allreduce_scalar(ctx, &time_us, gloo::ReductionFunction<double>::max);
    allreduce_scalar(ctx, &wrong, gloo::ReductionFunction<double>::sum);
    if (json)
      peer_json_result(json, k == 0, &a, count, nranks, algos[k].c_str(), time_us,
                       static_cast<int64_t>(wrong));
  }
  if (json) {
    peer_json_end(json);
    std::fclose(json);
  }
  // As for prepare(), at exit: a rank that left while its last send was still queued would close
  // the connection under a peer still waiting for it. The store outlives the connections, so
  // "everyone is done receiving" is agreed on there.
  store.set("done/" + std::to_string(rank), {'1'});
  std::vector<std::string> done;
  for (int r = 0; r < nranks; ++r) done.push_back("done/" + std::to_string(r));
  store.wait(done);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gloo_bench: %s\n", e.what());
  return 1;
}
