// HCOMM_TOPO_FILE's grammar: the input is the file's text. A parse either fails with a message or
// gives a table whose every host is found again and whose distances are a metric of 0..3.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "topology/topology_file.hpp"

using hcomm::topology::TopologyFile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = TopologyFile::parse(text, "fuzz.topo");
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) std::abort();
    return 0;
  }
  const TopologyFile& file = parsed.value();
  const auto& hosts = file.hosts();
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (file.find(hosts[i].host) != &hosts[i]) std::abort();
    if (file.distance(hosts[i].host, hosts[i].host) != 0) std::abort();
    const auto& other = hosts[(i + 1) % hosts.size()];
    const int d = file.distance(hosts[i].host, other.host);
    if (d < 0 || d > 3 || d != file.distance(other.host, hosts[i].host)) std::abort();
    // A switch belongs to one rack.
    if (other.switch_name == hosts[i].switch_name && other.rack != hosts[i].rack) std::abort();
  }
  return 0;
}
