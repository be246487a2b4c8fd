#include "transport/rdma/rdma_device.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include "core/log.hpp"

namespace hcomm::transport::rdma {
namespace {

bool is_ipv4_mapped(const ibv_gid& gid) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, prefix, sizeof prefix) == 0;
}

/// A GID entry: its type (RoCE v1/v2) and netdev. ibv_query_gid_ex (rdma-core 34+) first; older
/// kernels answer EOPNOTSUPP, then sysfs says the type.
struct GidEntry {
  bool valid = false;
  bool roce_v2 = false;
  ibv_gid gid{};
  std::string netdev;
};

GidEntry query_gid(ibv_context* ctx, const std::string& device, uint8_t port, int index) {
  GidEntry out;
  ibv_gid_entry entry{};
  int err = ibv_query_gid_ex(ctx, port, static_cast<uint32_t>(index), &entry, 0);
  if (err == 0) {
    out.valid = true;
    out.roce_v2 = entry.gid_type == IBV_GID_TYPE_ROCE_V2;
    out.gid = entry.gid;
    char name[IF_NAMESIZE] = "";
    if (entry.ndev_ifindex && if_indextoname(entry.ndev_ifindex, name)) out.netdev = name;
    return out;
  }
  if (err != EOPNOTSUPP && err != ENOSYS) return out;  // ENODATA: an empty slot
  std::string type;
  std::getline(std::ifstream("/sys/class/infiniband/" + device + "/ports/" + std::to_string(port) +
                             "/gid_attrs/types/" + std::to_string(index)),
               type);
  if (ibv_query_gid(ctx, port, index, &out.gid) != 0) return out;
  out.valid = true;
  out.roce_v2 = type == "RoCE v2";
  return out;
}

std::string memlock_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return "unknown";
  if (rl.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(rl.rlim_cur / 1024) + " KiB";
}

std::mutex& devices_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::weak_ptr<RdmaDevice>>& devices() {
  static std::map<std::string, std::weak_ptr<RdmaDevice>> d;
  return d;
}

Status no_device(const std::string& what) {
  return {HCOMM_ERR_NO_DEVICE,
          what +
              ". Check that `ibv_devices` lists a device, that its port is ACTIVE with an IPv4 "
              "address on its network interface (`ibv_devinfo -v`, `rdma link`), that "
              "/dev/infiniband/uverbs* is accessible, and HCOMM_RDMA_DEVICE; or use "
              "HCOMM_TRANSPORT=auto/tcp"};
}

}  // namespace

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, gid.raw, text, sizeof text);
  return text;
}

/// ibv_reg_mr on the device's protection domain, for the registration cache.
class RdmaDevice::Registrar final : public rdma::Registrar {
 public:
  explicit Registrar(RdmaDevice& device) : device_(device) {}
  Expected<Registration> register_range(void* addr, size_t bytes) override {
    ibv_mr* mr =
        ibv_reg_mr(device_.pd(), addr, bytes,
                   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (mr == nullptr) return device_.registration_error(bytes, errno);
    return Registration{mr, mr->lkey, mr->rkey};
  }
  void deregister(void* handle) override { ibv_dereg_mr(static_cast<ibv_mr*>(handle)); }

 private:
  RdmaDevice& device_;
};

Expected<std::shared_ptr<RdmaDevice>> RdmaDevice::open(const std::string& name, int gid_index,
                                                       size_t pin_budget) {
  std::lock_guard<std::mutex> lock(devices_mutex());
  const std::string key = name + "/" + std::to_string(gid_index);
  if (auto d = devices()[key].lock()) return d;

  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) {
    return no_device(std::string("no RDMA device: ibv_get_device_list failed (") +
                     std::strerror(errno) + "; this kernel may have no RDMA support)");
  }
  std::string seen;
  std::shared_ptr<RdmaDevice> found;
  for (int i = 0; i < count && !found; ++i) {
    const std::string dev_name = ibv_get_device_name(list[i]);
    if (!name.empty() && dev_name != name) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) {
      seen += " " + dev_name + " (cannot open: " + std::strerror(errno) + ")";
      continue;
    }
    ibv_port_attr port{};
    const uint8_t port_num = 1;
    if (ibv_query_port(ctx, port_num, &port) != 0 || port.state != IBV_PORT_ACTIVE) {
      seen += " " + dev_name + " (port 1 not active)";
      ibv_close_device(ctx);
      continue;
    }
    int index = -1;
    GidEntry gid;
    if (gid_index >= 0) {
      gid = query_gid(ctx, dev_name, port_num, gid_index);
      if (gid.valid) index = gid_index;
    } else {
      for (int g = 0; g < port.gid_tbl_len && index < 0; ++g) {
        GidEntry e = query_gid(ctx, dev_name, port_num, g);
        if (e.valid && e.roce_v2 && is_ipv4_mapped(e.gid)) {
          index = g;
          gid = e;
        }
      }
    }
    if (index < 0) {
      seen += " " + dev_name +
              (gid_index >= 0 ? " (no GID " + std::to_string(gid_index) + ")"
                              : std::string(" (no IPv4 RoCEv2 GID: is an IPv4 address on its "
                                            "interface?)"));
      ibv_close_device(ctx);
      continue;
    }
    ibv_pd* pd = ibv_alloc_pd(ctx);
    if (pd == nullptr) {
      seen += " " + dev_name + " (ibv_alloc_pd: " + std::strerror(errno) + ")";
      ibv_close_device(ctx);
      continue;
    }
    found.reset(new RdmaDevice());
    found->name_ = dev_name;
    found->context_ = ctx;
    found->pd_ = pd;
    found->port_ = port_num;
    found->gid_index_ = index;
    found->gid_ = gid.gid;
    found->netdev_ = gid.netdev;
    found->active_mtu_ = port.active_mtu;
    found->registrar_ = std::make_unique<Registrar>(*found);
    found->cache_ = std::make_unique<MrCache>(*found->registrar_, pin_budget);
  }
  ibv_free_device_list(list);
  if (!found) {
    if (count == 0) return no_device("no RDMA device found (ibv_get_device_list lists none)");
    if (!name.empty() && seen.empty())
      return no_device("HCOMM_RDMA_DEVICE=" + name + " is not among this host's " +
                       std::to_string(count) + " RDMA device(s)");
    return no_device("no usable RDMA device:" + seen);
  }
  HCOMM_LOG(info, core::log::kNet, "rdma: opened %s", found->describe().c_str());
  devices()[key] = found;
  return found;
}

std::vector<std::shared_ptr<RdmaDevice>> RdmaDevice::opened() {
  std::lock_guard<std::mutex> lock(devices_mutex());
  std::vector<std::shared_ptr<RdmaDevice>> out;
  for (auto& [key, weak] : devices())
    if (auto d = weak.lock()) out.push_back(std::move(d));
  return out;
}

RdmaDevice::~RdmaDevice() {
  cache_.reset();  // deregisters before the protection domain goes
  if (pd_) ibv_dealloc_pd(pd_);
  if (context_) ibv_close_device(context_);
}

Status RdmaDevice::registration_error(size_t bytes, int err) const {
  std::string what = "registering " + std::to_string(bytes) + " bytes with " + name_ +
                     " failed: " + std::strerror(err);
  if (err == ENOMEM || err == EPERM || err == EAGAIN)
    return {HCOMM_ERR_MMAP, what + ". The locked-memory limit (`ulimit -l`, now " +
                                memlock_limit() +
                                ") is too small for the memory hcomm pins: raise it (unlimited, "
                                "or at least 8 GB, in /etc/security/limits.conf or the "
                                "container's --ulimit memlock) or lower HCOMM_RDMA_PIN_BUDGET_MB"};
  return {HCOMM_ERR_MMAP, what};
}

namespace {

/// One sysfs counter file's value; false when it does not exist or does not parse.
bool read_counter(const std::string& path, uint64_t* value) {
  std::ifstream in(path);
  unsigned long long v = 0;
  if (!(in >> v)) return false;
  *value = v;
  return true;
}

}  // namespace

MediumCounters RdmaDevice::port_counters() const {
  const auto now = std::chrono::steady_clock::now();
  if (counters_read_ != std::chrono::steady_clock::time_point{} &&
      now - counters_read_ < kCountersEvery)
    return counters_;
  counters_read_ = now;
  const std::string dir =
      "/sys/class/infiniband/" + name_ + "/ports/" + std::to_string(static_cast<int>(port_)) + "/";
  MediumCounters c;
  uint64_t v = 0;
  if (read_counter(dir + "hw_counters/sent_pkts", &v) ||
      read_counter(dir + "counters/port_xmit_packets", &v)) {
    c.valid = true;
    c.packets_sent = v;
  }
  for (const char* name : {"hw_counters/completer_retry_err", "hw_counters/local_ack_timeout_err",
                           "hw_counters/packet_seq_err"})
    if (read_counter(dir + name, &v)) c.retransmits += v;
  for (const char* name :
       {"counters/symbol_error", "counters/port_rcv_errors", "counters/link_error_recovery",
        "counters/local_link_integrity_errors", "counters/excessive_buffer_overrun_errors",
        "hw_counters/retry_exceeded_err", "hw_counters/send_err"})
    if (read_counter(dir + name, &v)) c.errors += v;
  counters_ = c;
  return c;
}

std::string RdmaDevice::describe() const {
  return name_ + " port " + std::to_string(port_) + " GID " + std::to_string(gid_index_) + " " +
         gid_text(gid_) + (netdev_.empty() ? "" : " (" + netdev_ + ")");
}

AsyncEventMonitor& RdmaDevice::events() {
  if (!events_) events_ = std::make_unique<AsyncEventMonitor>(context_, port_, name_);
  return *events_;
}

}  // namespace hcomm::transport::rdma
