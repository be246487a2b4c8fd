// hcomm-info: what hcomm sees — this host's identity, its NUMA nodes, cores and NICs (hwloc),
// the HCOMM_TOPO_FILE placement, and, when launched as a world (hcomm-run -n N hcomm-info, srun,
// mpirun), every rank's host and address, the transport each pair of ranks uses, and the
// algorithm the cost model picks per operation and size on this communicator. --algorithms lists
// the algorithms the library has, by operation; --config every HCOMM_* variable
// (tools/config_report.cpp).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "collectives/algorithm_choice.hpp"
#include "collectives/operation.hpp"
#include "compression/codec_speed.hpp"
#include "config_report.hpp"
#include "core/config_vars.hpp"
#include "core/parse.hpp"
#include "topology/host_identity.hpp"
#include "topology/machine_topology.hpp"
#include "topology/topology_file.hpp"
#include "usage.hpp"

const hcomm::tools::Program hcomm::tools::kProgram{"hcomm-info", /*runs_as_rank=*/true};

namespace {

constexpr char kUsage[] =
    "usage: hcomm-info            this host: its identity, NUMA nodes, cores and NICs (hwloc),\n"
    "                             and its place in HCOMM_TOPO_FILE\n"
    "       hcomm-run -n N hcomm-info   (or under srun, mpirun, torchrun) also, on rank 0: every\n"
    "                             rank's host and address, the ring order, the transport of\n"
    "                             each pair of ranks and the algorithm per operation and size\n"
    "  --algorithms               the algorithms HCOMM_ALGO (and -a of hcomm-bench and\n"
    "                             hcomm-chaos) can force, by operation, and what a one-host\n"
    "                             communicator runs where none is forced; nothing else\n"
    "  --config                   every HCOMM_* variable: value in force, where it came from,\n"
    "                             default, meaning; exits 2 when a set one does not parse\n"
    "  --config --markdown        the variables and defaults as the README's table\n"
    "  --codecs                   each compression codec's encode and decode speed on this\n"
    "                             CPU (as HCOMM_COMPRESSION=auto measures it), in MB/s\n"
    "  --links                    as a world: also 50 allreduces of 4 MiB, then rank 0's\n"
    "                             view of the health of each link to each peer with a\n"
    "                             reliable channel (state, goodput in and out against the\n"
    "                             healthy figures, round trips, loss: failover_stats())\n"
    "  -h, --help                 this text\n"
    "Exit status: 0; 1 when the configuration, the topology file or the communicator fails;\n"
    "2 on bad usage or (--config) a variable that does not parse.\n";

/// What to print; exits on bad usage and after printing the help.
enum class Mode { world, world_links, algorithms, config, config_markdown, codecs };

Mode parse_args(int argc, char** argv) {
  bool algorithms = false, config = false, markdown = false, codecs = false, links = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") hcomm::tools::print_help(kUsage);
    if (arg == "--links")
      links = true;
    else if (arg == "--algorithms")
      algorithms = true;
    else if (arg == "--config")
      config = true;
    else if (arg == "--markdown")
      markdown = true;
    else if (arg == "--codecs")
      codecs = true;
    else
      hcomm::tools::usage_error("unexpected argument '" + arg + "'");
  }
  if (markdown && !config) hcomm::tools::usage_error("--markdown goes with --config");
  if (algorithms && config) hcomm::tools::usage_error("--algorithms or --config, not both");
  if (codecs && (algorithms || config)) hcomm::tools::usage_error("--codecs goes alone");
  if (links && (algorithms || config || codecs))
    hcomm::tools::usage_error("--links goes alone (a world's report)");
  if (links) return Mode::world_links;
  if (codecs) return Mode::codecs;
  if (algorithms) return Mode::algorithms;
  if (config) return markdown ? Mode::config_markdown : Mode::config;
  return Mode::world;
}

/// "allreduce: ring, tree, ..." per operation kind with algorithms to force, as the library
/// names them, then what Communicator::algorithm_for() names besides them on one host; the
/// first line, a comment, says so.
void print_algorithms() {
  namespace collectives = hcomm::collectives;
  std::printf(
      "# by operation, the algorithms HCOMM_ALGO can force; 'one host': what a one-host "
      "communicator runs where none is forced (the slot board, its staging rings)\n");
  for (int k = 1; k < collectives::kNumOpKinds; ++k) {
    const auto kind = static_cast<collectives::OpKind>(k);
    std::string line;
    for (const std::string& name : collectives::algorithm_names(kind))
      line += (line.empty() ? "" : ", ") + name;
    if (!line.empty()) std::printf("%s: %s\n", collectives::op_kind_name(kind), line.c_str());
  }
  std::printf("one host: %s, %s\n", collectives::kSlotBoardName, collectives::kStagedName);
}

void print_machine() {
  const auto host = hcomm::topology::this_host();
  std::printf("host %s (id %s)\n", host.name.c_str(), host.id.c_str());
  auto machine = hcomm::topology::MachineTopology::detect();
  if (!machine.ok()) {
    std::printf("machine: %s\n", machine.status().to_string().c_str());
    return;
  }
  std::printf("%s", machine->describe().c_str());
}

/// Returns false when the file is set but broken (the caller exits non-zero).
bool print_topology_file() {
  const auto set = hcomm::core::env_text(hcomm::core::Var::topo_file);
  if (!set) {
    std::printf("topology file: none (HCOMM_TOPO_FILE not set)\n");
    return true;
  }
  const char* path = set->c_str();
  auto file = hcomm::topology::TopologyFile::load(path);
  if (!file.ok()) {
    std::printf("topology file: %s\n", file.status().to_string().c_str());
    return false;
  }
  const auto host = hcomm::topology::this_host();
  const auto* here = file->find(host.name);
  if (here == nullptr) here = file->find(host.id);
  std::string where = "this host is not listed";
  if (here != nullptr)
    where = "switch " + here->switch_name + ", rack " +
            (here->rack.empty() ? here->switch_name + " (its own)" : here->rack);
  std::printf("topology file %s: %s\n", path, where.c_str());
  return true;
}

/// Every rank's transport to every other, as letters (row = from), gathered from all ranks:
/// each rank knows only its own links.
std::vector<uint8_t> gather_transport_letters(hcomm::Communicator& comm) {
  // Each rank knows its own links: their letters are gathered from every rank.
  const auto ranks = comm.ranks();
  const size_t n = ranks.size();
  std::vector<uint8_t> mine(n), all(n * n);
  for (const auto& r : ranks) {
    const auto& me = ranks[static_cast<size_t>(comm.rank())];
    const std::string& t = r.primary_transport;
    mine[static_cast<size_t>(r.rank)] = t == "self"   ? '-'
                                        : t == "shm"  ? 's'
                                        : t == "rdma" ? 'r'
                                        : t == "tcp"  ? (r.host_id == me.host_id ? 't' : 'T')
                                                      : 'p';
  }
  hcomm::Status st = comm.allgather(mine.data(), all.data(), n, hcomm::DataType::uint8);
  if (!st.ok()) std::fprintf(stderr, "gathering the transports: %s\n", st.to_string().c_str());
  return all;
}

void print_world(hcomm::Communicator& comm, const std::vector<uint8_t>& all) {
  const auto ranks = comm.ranks();
  std::printf("\ncommunicator: %d ranks\n", comm.size());
  std::printf("%6s  %-20s %-24s\n", "rank", "host", "address");
  for (const auto& r : ranks)
    std::printf("%6d  %-20s %-24s\n", r.rank, r.host.c_str(), r.address.c_str());
  std::vector<int> order(ranks.size());
  for (const auto& r : ranks) order[static_cast<size_t>(r.ring_position)] = r.rank;
  std::printf("\nring order (hosts, switches, racks together):");
  for (int r : order) std::printf(" %d", r);
  std::printf("\n");
  const bool shm = comm.config().auto_transport() || comm.config().transport == "shm";
  std::printf(
      "\ntransport per pair (rows: from, columns: to; '-' self, 's' shared memory, 'r' rdma, 't' "
      "tcp within a host, 'T' tcp across hosts, 'p' an application's protocol)\n      ");
  for (const auto& c : ranks) std::printf("%3d", c.rank);
  std::printf("\n");
  const size_t n = ranks.size();
  for (size_t a = 0; a < n; ++a) {
    std::printf("%6zu", a);
    for (size_t b = 0; b < n; ++b) std::printf("%3c", static_cast<char>(all[a * n + b]));
    std::printf("\n");
  }
  bool one_host = true;
  for (const auto& r : ranks) one_host &= r.host_id == ranks.front().host_id;
  if (one_host && shm && ranks.size() > 1)
    std::printf("small collectives (<= 16 KiB per rank): slot board in shared memory\n");
  const char* ops[] = {"allreduce",      "broadcast", "reduce", "allgather",
                       "reduce_scatter", "alltoall",  "gather", "scatter"};
  const size_t sizes[] = {8, 1024, 65536, 1 << 20, 16 << 20, 256 << 20};
  std::printf("\nalgorithm by operation and size (this communicator's cost model%s)\n%-15s",
              comm.config().algo.empty() ? "" : ", HCOMM_ALGO applied", "");
  for (size_t b : sizes) std::printf("%8s", hcomm::core::format_bytes(b).c_str());
  std::printf("\n");
  for (const char* op : ops) {
    std::printf("%-15s", op);
    for (size_t b : sizes) std::printf("%8s", comm.algorithm_for(op, b).c_str());
    std::printf("\n");
  }
}

/// The codecs' measured speeds (compression/codec_speed.hpp), one line each.
void print_codecs() {
  using hcomm::compression::Codec;
  std::printf(
      "# codec  encode MB/s  decode MB/s  wire/payload  (1 MiB float32 gradient, this CPU)\n");
  for (Codec c : {Codec::fp16, Codec::bf16, Codec::zstd, Codec::delta}) {
    const auto& s = hcomm::compression::codec_speed(c);
    std::printf("%-7s  %11.0f  %11.0f  %12.3f\n", hcomm::compression::codec_name(c),
                s.encode_bytes_per_us, s.decode_bytes_per_us, s.ratio);
  }
}

/// --links: traffic for the links to measure, then rank 0's view of their health.
bool measure_links(hcomm::Communicator& comm) {
  constexpr size_t kCount = 1 << 20;  // 4 MiB of float32
  constexpr int kRounds = 50;
  std::vector<float> send(kCount, 1.0f), recv(kCount);
  for (int i = 0; i < kRounds; ++i) {
    const hcomm::Status st = comm.allreduce(send.data(), recv.data(), kCount,
                                            hcomm::DataType::float32, hcomm::ReduceOp::sum);
    if (!st.ok()) {
      std::fprintf(stderr, "hcomm-info: the links' allreduces: %s\n", st.to_string().c_str());
      return false;
    }
  }
  if (comm.rank() != 0) return true;
  const hcomm::FailoverStats fs = comm.failover_stats();
  std::printf(
      "\nlink health, rank 0's links after %d allreduces of 4 MiB (Gbit/s of payload; in: "
      "the peer's frames as they arrived, out: rank 0's as the peer acknowledged them)\n",
      kRounds);
  if (fs.links.empty()) {
    std::printf("  no peer has a reliable channel (HCOMM_FAILOVER=off, or one host)\n");
    return true;
  }
  std::printf("  %4s %-14s %-10s %8s %8s %8s %8s %9s %9s %9s %6s %8s %6s\n", "peer", "link",
              "state", "in", "healthy", "out", "healthy", "rtt us", "min us", "tcp us", "loss%",
              "resent", "errors");
  for (const hcomm::LinkHealthInfo& l : fs.links)
    std::printf("  %4d %-14s %-10s %8.3f %8.3f %8.3f %8.3f %9.0f %9.0f %9.0f %6.2f %8" PRIu64
                " %6" PRIu64 "\n",
                l.peer, l.link.c_str(), l.state.c_str(), l.goodput_in_gbps, l.healthy_in_gbps,
                l.goodput_out_gbps, l.healthy_out_gbps, l.rtt_us, l.min_rtt_us, l.medium_rtt_us,
                100 * l.loss, l.retransmits, l.errors);
  std::printf("  gray failures %" PRIu64 ", probe rounds %" PRIu64 " (%" PRIu64 " passed)\n",
              fs.gray_failures, fs.probe_rounds, fs.probes_passed);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Mode mode = parse_args(argc, argv);
  if (mode == Mode::algorithms) {
    print_algorithms();
    return 0;
  }
  if (mode == Mode::config_markdown) {
    hcomm::tools::print_config_markdown(stdout);
    return 0;
  }
  if (mode == Mode::config) return hcomm::tools::print_config(stdout, stderr) ? 0 : 2;
  if (mode == Mode::codecs) {
    print_codecs();
    return 0;
  }
  print_machine();
  const bool topo_ok = print_topology_file();
  auto cfg = hcomm::Config::from_env();
  if (!cfg.ok()) {
    std::fprintf(stderr, "hcomm-info: %s\n", cfg.status().to_string().c_str());
    return 1;
  }
  if (cfg->world_size < 1) {
    std::printf(
        "\nnot launched as a world: run `hcomm-run -n N hcomm-info` (or under srun / "
        "mpirun) for ranks, transports and algorithms\n");
    return topo_ok ? 0 : 1;
  }
  auto comm = hcomm::Communicator::create(cfg.value());
  if (!comm.ok()) {
    std::fprintf(stderr, "hcomm-info: %s\n", comm.status().to_string().c_str());
    return 1;
  }
  const auto letters = gather_transport_letters(**comm);
  if ((*comm)->rank() == 0) print_world(**comm, letters);
  if (mode == Mode::world_links && !measure_links(**comm)) return 1;
  return topo_ok ? 0 : 1;
}
