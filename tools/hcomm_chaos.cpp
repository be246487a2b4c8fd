// hcomm-chaos: runs a collective in a loop while injecting faults on a schedule (an nftables
// rule, an interface taken down, a rank stopped, continued or killed), verifies every result,
// and reports failovers, detection and recovery times and throughput before, during and after
// the faults. Public API only; it joins with Communicator::create_from_env()'s configuration, so
// it runs under hcomm-run, srun, mpirun or torchrun alike (stop and kill need one host).
//
// One run: join; gather every rank's pid (for stop and kill); rank 0 prints the schedule; a
// barrier is the common start, from which every rank measures the fault times it read on the
// command line; the ranks that inject start their injector thread; the loop runs; the
// injector finishes what it began; every rank analyses its own figures and checks them; the
// figures are gathered on rank 0 (unless a rank was killed or lost) for the checks over all
// ranks and the JSON file.
//
// The pieces are in chaos/: options (command line), fault_plan (the schedule), injector (its
// thread), input_pattern and workload (inputs, the operation, expected results from
// ../reference/), digest, runner (the loop), analysis (detection, recovery, throughput
// windows), rank_summary (what is gathered), verdict (the checks), report (text and JSON),
// format; core/json_writer.hpp.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "chaos/analysis.hpp"
#include "chaos/fault_plan.hpp"
#include "chaos/injector.hpp"
#include "chaos/options.hpp"
#include "chaos/rank_summary.hpp"
#include "chaos/report.hpp"
#include "chaos/runner.hpp"
#include "chaos/verdict.hpp"
#include "chaos/workload.hpp"
#include "core/parse.hpp"

using namespace hcomm::tools::chaos;
using hcomm::Communicator;
using hcomm::tools::kExitUsage;
using hcomm::tools::usage_error;

const hcomm::tools::Program hcomm::tools::kProgram{"hcomm-chaos", /*runs_as_rank=*/true};

namespace {

// How long gathering the figures at the end may take when --max-op-ms does not say.
constexpr auto kGatherLimit = std::chrono::seconds(30);

std::unique_ptr<Communicator> join(const Options& o) {
  auto cfg = hcomm::Config::from_env();
  if (!cfg) {
    std::fprintf(stderr, "hcomm-chaos: %s\n", cfg.status().to_string().c_str());
    std::exit(kExitUsage);
  }
  if (!o.algo.empty()) cfg->algo = o.op + "=" + o.algo;  // code wins over HCOMM_ALGO
  if (o.compression != hcomm::Compression::none) cfg->compression = o.compression;
  auto comm = Communicator::create(*cfg);
  if (!comm) {
    std::fprintf(stderr, "hcomm-chaos: rank %d: cannot create the communicator: %s\n", cfg->rank,
                 comm.status().to_string().c_str());
    std::exit(kExitFailed);
  }
  return std::move(*comm);
}

[[noreturn]] void fail(const Communicator& comm, const char* what, const hcomm::Status& st) {
  std::fprintf(stderr, "hcomm-chaos: rank %d: %s: %s\n", comm.rank(), what, st.to_string().c_str());
  std::exit(kExitFailed);
}

// --reference-s: the workload for that long on a communicator of its own whose every link runs
// over the fallback's network (its primary and fallback links both there, so that it pays what
// the main one pays for failover), while the main one waits; its GB/s in operations.
double measure_reference(const Options& o, const Communicator& main) {
  hcomm::Config cfg = main.config();
  const std::vector<std::string> ifnames = hcomm::core::split_list(cfg.socket_ifname);
  const std::string fallback = !cfg.fallback_ifname.empty() ? cfg.fallback_ifname
                               : ifnames.size() >= 2        ? ifnames[1]
                                                            : "";
  if (fallback.empty())
    usage_error(
        "--reference-s: no fallback network to measure: set HCOMM_FALLBACK_IFNAME, or list two "
        "interfaces in HCOMM_SOCKET_IFNAME");
  cfg.socket_ifname = fallback;
  cfg.fallback_ifname = fallback;
  auto comm = Communicator::create(cfg);
  if (!comm) fail(main, "creating the reference communicator", comm.status());
  Options ro = o;
  ro.iters = 0;
  ro.seconds = o.reference_s;
  ro.faults.clear();
  ro.flaps.clear();
  Workload workload(ro, (*comm)->rank(), (*comm)->size());
  const hcomm::Status st = (*comm)->barrier();
  if (!st.ok()) fail(**comm, "the reference run's start barrier", st);
  const RunRecord rec = Runner(**comm, ro, workload, std::chrono::steady_clock::now()).run();
  if (rec.ending != Ending::completed) fail(**comm, "the reference run", rec.error);
  return gbps_in_ops(rec, workload.bytes());
}

// Every rank's pid, by rank: stop and kill signal them.
std::vector<pid_t> gather_pids(Communicator& comm) {
  int64_t mine = getpid();
  std::vector<int64_t> all(static_cast<size_t>(comm.size()));
  const hcomm::Status st = comm.allgather(&mine, all.data(), 1, hcomm::DataType::int64);
  if (!st.ok()) fail(comm, "gathering the ranks' pids", st);
  return std::vector<pid_t>(all.begin(), all.end());
}

// -J FILE: rank 0 writes it, or with %r in it every rank its own.
bool per_rank_json(const Options& o) {
  return o.json_path.find("%r") != std::string::npos;
}

std::string json_path_of(const Options& o, int rank) {
  std::string path = o.json_path;
  for (size_t at; (at = path.find("%r")) != std::string::npos;)
    path.replace(at, 2, std::to_string(rank));
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  // Whole lines, even with the injector's thread printing too.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Options o = parse_options(argc, argv);
  FaultPlan plan = FaultPlan::parse(o.faults, o.flaps);

  std::unique_ptr<Communicator> comm = join(o);
  const int rank = comm->rank();
  plan.resolve(comm->size());
  const bool writes_json = !o.json_path.empty() && (per_rank_json(o) || rank == 0);
  if (writes_json) {  // a bad path fails now rather than after the run
    FILE* f = std::fopen(json_path_of(o, rank).c_str(), "w");
    if (f == nullptr)
      usage_error("-J: cannot write '" + json_path_of(o, rank) + "': " + std::strerror(errno));
    std::fclose(f);
  }
  Workload workload(o, rank, comm->size());
  Report report(o, plan, workload, *comm);
  const std::vector<pid_t> pids = gather_pids(*comm);
  if (rank == 0) report.header();
  const double reference_gbps = o.reference_s > 0 ? measure_reference(o, *comm) : 0;

  const hcomm::Status st = comm->barrier();
  if (!st.ok()) fail(*comm, "the start barrier", st);
  const auto start = std::chrono::steady_clock::now();
  const auto start_system = std::chrono::system_clock::now();

  Injector injector(plan, rank, pids, start);
  injector.start();
  const RunRecord rec = Runner(*comm, o, workload, start).run();
  injector.finish();

  const hcomm::FailoverStats stats = comm->failover_stats();
  const std::vector<int> lost = comm->lost_peers();
  const Analysis analysis = analyze(plan, rec, stats, start_system, workload.bytes(), rank);
  const RankView view{rank,
                      rec,
                      analysis,
                      stats,
                      lost,
                      injector.done(),
                      injector.problems(),
                      comm->config(),
                      workload.checks_elements(),
                      reference_gbps};
  const Verdict mine = judge_rank(o, plan, view);
  report.rank_figures(view);
  const std::string my_json = o.json_path.empty() ? std::string() : report.rank_json(view, mine);

  // Every rank decides alike from the command line whether to gather: not when a rank is to be
  // killed or lost. A rank whose loop failed has aborted the communicator, so that the others'
  // gathering fails at once instead of waiting.
  std::optional<Gathered> gathered;
  if (!plan.has_kill() && !o.expect_peer_lost && comm->size() > 1) {
    const auto limit = o.max_op_ms ? std::chrono::milliseconds(static_cast<int64_t>(*o.max_op_ms))
                                   : std::chrono::milliseconds(kGatherLimit);
    gathered = gather_all(*comm, RankSummary::of(rank, rec, stats, analysis), my_json,
                          !o.json_path.empty() && !per_rank_json(o), plan.faults().size(), limit);
  }
  const bool complete = gathered.has_value() || comm->size() == 1;
  const std::vector<RankSummary> summaries =
      gathered ? gathered->summaries
               : std::vector<RankSummary>{RankSummary::of(rank, rec, stats, analysis)};
  const Verdict job = judge_job(o, plan, summaries, complete);
  // Over all ranks, rank 0 judges; on its own figures, every rank.
  const bool judges_job = rank == 0 || !gathered;
  if (gathered && rank == 0) report.job_table(gathered->summaries);
  report.verdict(mine, job, judges_job);

  bool json_ok = true;
  if (writes_json) {
    const bool all = gathered && !per_rank_json(o);
    json_ok = report.write_json(json_path_of(o, rank), all ? gathered->json : std::vector{my_json},
                                all || comm->size() == 1, job);
  }
  comm.reset();  // before the workload's buffers go: an aborted operation may still hold them
  const bool ok = mine.ok() && (!judges_job || job.ok()) && json_ok;
  return ok ? 0 : kExitFailed;
}
