#include "bootstrap/interface_address.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/log.hpp"

namespace hcomm::bootstrap {
namespace {

struct Iface {
  std::string name;
  std::string ipv4;  ///< empty when the interface has no IPv4 address
  bool up = false;
  bool loopback = false;
};

/// Every interface getifaddrs reports, one entry per name (its first IPv4 address).
Expected<std::vector<Iface>> list_interfaces() {
  ifaddrs* head = nullptr;
  if (getifaddrs(&head) != 0) {
    return Status(HCOMM_ERR_INTERNAL, std::string("getifaddrs failed: ") + std::strerror(errno));
  }
  std::vector<Iface> out;
  for (ifaddrs* a = head; a != nullptr; a = a->ifa_next) {
    if (a->ifa_name == nullptr) continue;
    Iface* entry = nullptr;
    for (auto& i : out) {
      if (i.name == a->ifa_name) entry = &i;
    }
    if (entry == nullptr) {
      out.push_back(Iface{a->ifa_name, "", false, false});
      entry = &out.back();
    }
    entry->up = entry->up || (a->ifa_flags & IFF_UP) != 0;
    entry->loopback = entry->loopback || (a->ifa_flags & IFF_LOOPBACK) != 0;
    if (entry->ipv4.empty() && a->ifa_addr != nullptr && a->ifa_addr->sa_family == AF_INET) {
      char buf[INET_ADDRSTRLEN] = {};
      auto* sin = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)) != nullptr) entry->ipv4 = buf;
    }
  }
  freeifaddrs(head);
  return out;
}

/// "lo (127.0.0.1), eth0 (10.0.0.5, down), ib0 (no IPv4)".
std::string describe(const std::vector<Iface>& ifaces) {
  std::string s;
  for (const auto& i : ifaces) {
    if (!s.empty()) s += ", ";
    s += i.name + " (" + (i.ipv4.empty() ? "no IPv4" : i.ipv4) + (i.up ? "" : ", down") + ")";
  }
  return s.empty() ? "none" : s;
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

/// The source address the kernel would use towards `host`, or "" when it cannot tell.
std::string route_source_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || res == nullptr) return "";
  std::string out;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    // connect() on a UDP socket only chooses the route and the source address: nothing is sent.
    if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      sockaddr_in local{};
      socklen_t len = sizeof(local);
      char buf[INET_ADDRSTRLEN] = {};
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
          local.sin_addr.s_addr != htonl(INADDR_ANY) &&
          inet_ntop(AF_INET, &local.sin_addr, buf, sizeof(buf)) != nullptr) {
        out = buf;
      }
    }
    close(fd);
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace

Expected<std::string> interface_ipv4(const std::string& ifname) {
  auto ifaces = list_interfaces();
  if (!ifaces) return ifaces.status();
  for (const auto& i : *ifaces) {
    if (i.name != ifname) continue;
    if (i.ipv4.empty()) {
      return Status(HCOMM_ERR_INVALID_ARG,
                    "network interface '" + ifname + "' has no IPv4 address; interfaces: " +
                        describe(*ifaces) + ". Set HCOMM_SOCKET_IFNAME to one that has");
    }
    if (!i.up) {
      HCOMM_LOG(warn, ::hcomm::core::log::kBoot, "interface %s (%s) is down", ifname.c_str(),
                i.ipv4.c_str());
    }
    return i.ipv4;
  }
  return Status(HCOMM_ERR_INVALID_ARG, "no network interface named '" + ifname +
                                           "'; interfaces: " + describe(*ifaces) +
                                           ". Set HCOMM_SOCKET_IFNAME to one of these");
}

Expected<std::string> pick_local_address(const std::string& ifname, const std::string& root_host) {
  if (!ifname.empty()) return interface_ipv4(ifname);
  if (is_loopback_host(root_host)) return std::string("127.0.0.1");
  if (!root_host.empty()) {
    std::string routed = route_source_address(root_host);
    if (!routed.empty()) {
      HCOMM_LOG(info, ::hcomm::core::log::kBoot, "using %s, the local address towards the root %s",
                routed.c_str(), root_host.c_str());
      return routed;
    }
  }
  auto ifaces = list_interfaces();
  if (!ifaces) return ifaces.status();
  for (const auto& i : *ifaces) {
    if (i.up && !i.loopback && !i.ipv4.empty()) {
      HCOMM_LOG(info, ::hcomm::core::log::kBoot, "using %s of interface %s (first one up)",
                i.ipv4.c_str(), i.name.c_str());
      return i.ipv4;
    }
  }
  return Status(HCOMM_ERR_NO_DEVICE,
                "found no local IPv4 address to reach the root '" + root_host +
                    "' and no non-loopback interface that is up; interfaces: " + describe(*ifaces) +
                    ". Set HCOMM_SOCKET_IFNAME");
}

}  // namespace hcomm::bootstrap
