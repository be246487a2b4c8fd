// hcomm-bench: an nccl-tests compatible benchmark of every hcomm operation, over the public API
// only, so that it measures what applications get. It joins with Communicator::create_from_env(),
// so it runs under hcomm-run, srun, mpirun or torchrun alike.
//
// Per size: warm-up iterations, a barrier, then timed iterations back to back, each timed alone on
// every rank; a rank's time is its median iteration, the reported time the slowest rank's median.
// With -c 1 the operation then runs once more on a deterministic input and every element is
// compared with what hcomm_reference (reference/) computes, independently of the library.
//
// Tenant mode (-T S): the first size runs back to back for S seconds instead of the sweep, and
// rank 0 reports every rank's iterations, payload rate to other hosts and op latency: what one
// tenant of a shared link gets. --qos sets the communicator's QoS class (hcomm/qos.hpp) first.
//
// This file joins and drives the sweep; the pieces are in bench/: options (command line),
// op_table (the operations), inputs (inputs and expected results), runner
// (timing and checking one size), report (table, progress bar, JSON).
#include <hcomm/hcomm.hpp>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "algorithm_names.hpp"
#include "bench/op_table.hpp"
#include "bench/options.hpp"
#include "bench/report.hpp"
#include "bench/runner.hpp"
#include "usage.hpp"

using hcomm::Communicator;
using hcomm::Status;
using hcomm::tools::is_lead_rank;
using hcomm::tools::kExitUsage;
using hcomm::tools::usage_error;
using hcomm::tools::bench::find_op;
using hcomm::tools::bench::kExitWrong;
using hcomm::tools::bench::OpSpec;
using hcomm::tools::bench::Options;
using hcomm::tools::bench::parse_options;
using hcomm::tools::bench::Progress;
using hcomm::tools::bench::Report;
using hcomm::tools::bench::Row;
using hcomm::tools::bench::Runner;
using hcomm::tools::bench::size_sweep;
using hcomm::tools::bench::TimedRun;

const hcomm::tools::Program hcomm::tools::kProgram{"hcomm-bench", /*runs_as_rank=*/true};

namespace {

std::unique_ptr<Communicator> join(const Options& o) {
  auto cfg = hcomm::Config::from_env();
  if (!cfg) {
    std::fprintf(stderr, "hcomm-bench: %s\n", cfg.status().to_string().c_str());
    std::exit(kExitUsage);
  }
  // Code wins over HCOMM_ALGO. An operation with nothing to force (barrier, sendrecv) can only
  // have been given -a auto, which is what it runs anyway.
  if (!o.algo.empty() && hcomm::tools::forcible_algorithms(o.op).size() > 1)
    cfg->algo = o.op + "=" + o.algo;
  auto comm = Communicator::create(*cfg);
  if (!comm) {
    // A rejected -a is a usage error; anything else (a rank missing, ...) is a failure.
    const bool usage = !o.algo.empty() && comm.status().code() == hcomm::HCOMM_ERR_INVALID_ARG;
    // Every rank rejects -a alike: one says so. Other failures differ by rank: all say.
    if (!usage || cfg->rank <= 0)
      std::fprintf(stderr, "hcomm-bench: rank %d: cannot create the communicator: %s\n", cfg->rank,
                   comm.status().to_string().c_str());
    std::exit(usage ? kExitUsage : kExitWrong);
  }
  return std::move(*comm);
}

// --qos: every rank sets the class. The minimums are checked per host, so one rank may be refused
// while another is not: they agree, and all exit with kExitUsage, the refused ones saying why.
void apply_qos(Communicator& comm, const Options& o) {
  int64_t refused = 0, any = 0;
  Status st = comm.set_qos(o.qos);
  if (!st.ok()) {
    std::fprintf(stderr, "hcomm-bench: rank %d: --qos %s refused: %s\n", comm.rank(),
                 o.qos.to_string().c_str(), st.to_string().c_str());
    refused = 1;
  }
  st = comm.allreduce(&refused, &any, 1, hcomm::DataType::int64, hcomm::ReduceOp::max);
  if (!st.ok()) {
    std::fprintf(stderr, "hcomm-bench: rank %d: allreduce after set_qos failed: %s\n", comm.rank(),
                 st.to_string().c_str());
    std::exit(kExitWrong);
  }
  if (any != 0) std::exit(kExitUsage);
}

// Rank 0's last words: the registration cache, the JSON file, the exit status.
int finish(const Report& report, FILE* json, const Options& o) {
  const auto mr = hcomm::memory_registration_stats();
  if (mr.hits + mr.misses > 0)
    std::printf("# RDMA registration cache (rank 0): %" PRIu64 " hits, %" PRIu64
                " misses, hit rate %.2f%%, %" PRIu64 " evictions, %" PRIu64 " bytes pinned\n#\n",
                mr.hits, mr.misses, 100.0 * mr.hit_rate(), mr.evictions, mr.pinned_bytes);
  if (json != nullptr) {
    const bool ok = report.write_json(json);
    if (std::fclose(json) != 0 || !ok) {
      std::fprintf(stderr, "hcomm-bench: -J: writing '%s' failed\n", o.json_path.c_str());
      return kExitWrong;
    }
  }
  return report.total_wrong() == 0 ? 0 : kExitWrong;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const OpSpec* spec = find_op(o.op);  // parse_options() checked the name

  // Opened before joining, so that a bad path fails at once rather than after the run.
  FILE* json = nullptr;
  if (!o.json_path.empty() && is_lead_rank()) {
    json = std::fopen(o.json_path.c_str(), "w");
    if (json == nullptr)
      usage_error("-J: cannot write '" + o.json_path + "': " + std::strerror(errno));
  }

  std::unique_ptr<Communicator> comm = join(o);
  const bool lead = comm->rank() == 0;
  if (spec->rooted && o.root >= comm->size()) {
    const int size = comm->size();
    comm.reset();  // every rank leaves alike, before usage_error() exits
    usage_error("-r " + std::to_string(o.root) + ": only " + std::to_string(size) + " ranks");
  }
  if (o.has_qos) apply_qos(*comm, o);
  if (o.has_compression) comm->set_compression(o.compression);

  // Barrier moves no data: one row, whatever -b/-e say.
  const std::vector<size_t> sizes =
      std::string(spec->name) == "barrier" ? std::vector<size_t>{0} : size_sweep(o);
  Runner runner(*comm, o, *spec);
  Report report(o, *spec, comm->size());
  Progress progress(lead && o.duration_s <= 0, sizes.size());
  if (lead) {
    // What carries this rank's traffic: "# transport: rdma to 1 peer(s)".
    std::map<std::string, int> transports;
    for (const auto& r : comm->ranks())
      if (r.transport != "self") ++transports[r.transport];
    std::string line;
    for (const auto& [name, peers] : transports)
      line += (line.empty() ? "" : ", ") + name + " to " + std::to_string(peers) + " peer(s)";
    std::printf("# transport (rank 0): %s\n", line.empty() ? "none (1 rank)" : line.c_str());
    if (o.has_qos || o.duration_s > 0 || std::getenv("HCOMM_QOS") != nullptr)
      report.qos(comm->qos(), comm->config().link_gbps);
    if (o.duration_s <= 0) report.header();
  }

  if (o.duration_s > 0) {  // tenant mode: the first size only
    int64_t wrong = -1;
    const std::vector<TimedRun> ranks = runner.run_timed(sizes.front(), o.duration_s, &wrong);
    if (!lead) return 0;
    const Row shape = runner.shape(sizes.front());
    report.timed(shape.bytes, shape.count, ranks, wrong);
    return finish(report, json, o);
  }

  for (size_t i = 0; i < sizes.size(); ++i) {
    const Row row = runner.run(sizes[i]);
    if (!lead) continue;
    progress.erase();
    report.row(row);
    progress.update(i + 1);
  }
  if (!lead) return 0;  // the wrong counts are global: rank 0 reports them and sets the status
  progress.erase();
  report.footer();
  return finish(report, json, o);
}
