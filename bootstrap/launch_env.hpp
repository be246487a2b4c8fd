// Bootstrap: who this process is, as its launcher told it through the environment; and what
// hcomm's own launcher (hcomm-run) tells each rank. The one place the variables are named.
//
// Launchers understood, first match wins for rank and size:
//   HCOMM     HCOMM_RANK, HCOMM_WORLD_SIZE                (hcomm-run, or set by hand)
//   torchrun  RANK, WORLD_SIZE
//   Open MPI  OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//   Slurm     SLURM_PROCID, SLURM_NTASKS (SLURM_NPROCS on old releases)
// The root address is looked up on its own, whichever family gave the rank: HCOMM_ROOT_ADDR, else
// MASTER_ADDR + MASTER_PORT. A variable set to the empty string counts as unset. The HCOMM_*
// names and ranges are core/config_vars.cpp's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm::bootstrap {

struct LaunchEnv {
  int rank = -1;          ///< -1: no launcher variable found
  int world_size = -1;    ///< -1: no launcher variable found
  std::string root_addr;  ///< "host:port" of the rendezvous root, or empty when none is set
  std::string source;  ///< who gave rank and size: "HCOMM", "torchrun", "Open MPI", "Slurm", or ""
};

/// Reads the launcher variables of the process environment. Finding none is not an error (the
/// fields keep their "unset" values). Fails with HCOMM_ERR_INVALID_ARG naming the variable and its
/// value when one does not parse, when only half of a rank/size pair is set, or when the rank is
/// not in [0, world_size).
Expected<LaunchEnv> read_launch_env();

/// The variables that give the rank, and the world size, in the order read_launch_env() tries
/// them, for messages: "HCOMM_RANK (or RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID)".
std::string rank_variables();
std::string world_size_variables();

/// One rank's place in a job started by hcomm's own launcher (hcomm-run).
struct LaunchPlace {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  ///< among the ranks of its host
  int local_size = 1;
  std::string root_addr;  ///< "host:port"
};

/// The environment entries ("NAME=value") that tell a rank its place: HCOMM_RANK,
/// HCOMM_WORLD_SIZE, HCOMM_LOCAL_RANK, HCOMM_LOCAL_SIZE and HCOMM_ROOT_ADDR. read_launch_env()
/// reads them back ahead of every other launcher's (HCOMM_ROOT_ADDR ahead of MASTER_ADDR too).
std::vector<std::string> launch_variables(const LaunchPlace& place);

/// Whether `entry` ("NAME=value") sets one of the variables launch_variables() writes: a
/// launcher drops those from the environment it passes on, so no stale one survives.
bool is_launch_variable(const char* entry);

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

/// Splits "host:port" (host: IPv4 dotted quad or a host name; port: 0..65535, where 0 asks for an
/// ephemeral port wherever the caller allows it). IPv6 ("[::1]:29500", "::1") is refused with
/// HCOMM_ERR_INVALID_ARG and a message saying so; so is anything else that does not parse.
Expected<HostPort> parse_host_port(const std::string& s);

}  // namespace hcomm::bootstrap
