// HCOMM_TOPO_FILE: which switch and rack each host hangs from, so that collectives can keep
// traffic inside a switch or a rack. The file is optional; without it every two hosts count as
// far apart.
//
// Format, one line per host:
//
//   host <name> switch <switch> [rack <rack>]
//
// - <name> is a hostname or an hcomm host id (HCOMM_HOST_ID); names compare exactly.
// - Fields are separated by spaces or tabs; '#' starts a comment that runs to the end of the line;
//   blank lines are ignored. `switch` and `rack` may come in either order.
// - `rack` is optional. A switch belongs to one rack: a line without `rack` takes the rack that
//   another line gives its switch, and a switch no line places in a rack is a rack of its own.
// - A host listed twice, an unknown keyword, a keyword without its value, or one switch given two
//   racks is an error naming the file and line.
//
// Example:
//
//   # rack A: two switches
//   host node01 switch sw1 rack A
//   host node02 switch sw1 rack A
//   host node03 switch sw2 rack A
//   host node04 switch sw3          # sw3 is a rack of its own
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "hcomm/status.hpp"

namespace hcomm::topology {

struct Placement {
  std::string host;
  std::string switch_name;
  std::string rack;  ///< "" when the switch is a rack of its own
  int line = 0;      ///< where the file lists the host, for messages
};

class TopologyFile {
 public:
  /// Parses the file's text; `origin` (the path) prefixes every error message.
  static Expected<TopologyFile> parse(const std::string& text, const std::string& origin);
  /// Reads and parses the file at `path`; HCOMM_ERR_INVALID_ARG if it cannot be read.
  static Expected<TopologyFile> load(const std::string& path);

  /// The host's placement, or nullptr when the file does not list it.
  const Placement* find(const std::string& host) const;
  /// 0 same host, 1 same switch, 2 same rack, 3 different racks or a host the file does not list.
  int distance(const std::string& a, const std::string& b) const;
  /// Every listed host, in file order.
  const std::vector<Placement>& hosts() const { return hosts_; }

 private:
  std::vector<Placement> hosts_;
  std::unordered_map<std::string, size_t> index_;  // host name → position in hosts_
};

}  // namespace hcomm::topology
