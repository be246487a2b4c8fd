#include "qos/link_capacity.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <fstream>

#include "core/parse.hpp"

namespace hcomm::qos {
namespace {

/// The interface that has `ip` (IPv4), or "".
std::string interface_of(const std::string& ip) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (ifaddrs* a = list; a != nullptr && name.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
    if (ip == text) name = a->ifa_name;
  }
  freeifaddrs(list);
  return name;
}

}  // namespace

double link_capacity(const Config& cfg, const std::string& local_ip, bool fallback,
                     std::string* why) {
  const double gbps =
      fallback && cfg.fallback_link_gbps > 0 ? cfg.fallback_link_gbps : cfg.link_gbps;
  if (gbps > 0) {
    *why = std::string(fallback && cfg.fallback_link_gbps > 0 ? "HCOMM_FALLBACK_LINK_GBPS"
                                                              : "HCOMM_LINK_GBPS");
    return gbps * 1e9 / 8;
  }
  const auto names = core::split_list(cfg.socket_ifname);
  const std::string ifname = names.empty() ? interface_of(local_ip) : names[0];
  long mbps = -1;
  if (!ifname.empty()) std::ifstream("/sys/class/net/" + ifname + "/speed") >> mbps;
  if (mbps > 0) {
    *why = ifname + " reports " + std::to_string(mbps) + " Mbit/s";
    return static_cast<double>(mbps) * 1e6 / 8;
  }
  *why = "no speed known for " + (ifname.empty() ? local_ip : ifname) +
         ": assumed 10 Gbit/s, set HCOMM_LINK_GBPS";
  return 10e9 / 8;
}

}  // namespace hcomm::qos
