// rdma_probe: is there working RDMA here? Lists the RDMA devices, opens each, prints its port
// state and the index of its IPv4 RoCEv2 GID, then runs a real RC QP exchange between two of
// them in this one process (two contexts, two QPs connected to each other through their GIDs):
//   A -> B  RDMA WRITE with immediate, 8 KiB, into B's registered buffer (B gets the immediate);
//   B -> A  SEND, 4 KiB, into a receive A posted;
// every byte is checked. Devices: RXE_DEV_A / RXE_DEV_B when set (tests/rdma/run_in_vm.sh sets
// them to rxe0 / rxe1), else the first two usable ones (or one device with itself).
// QPs use retry_cnt 6 and timeout 14 (~0.5 s to IBV_WC_RETRY_EXC_ERR on a dead path; on rdma_rxe
// retry_cnt 7 would retry forever); every completion is awaited with a deadline.
// Exit: 0 all good; 2 no RDMA device at all (e.g. a kernel without RDMA: it fails at once);
// 1 anything else, with the reason on stderr.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <net/if.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr uint8_t kPort = 1;
constexpr size_t kWriteBytes = 8192;  // A -> B, RDMA WRITE with immediate, at offset 0
constexpr size_t kSendBytes = 4096;   // B -> A, SEND, at offset kWriteBytes
constexpr size_t kBufferBytes = kWriteBytes + kSendBytes;
constexpr uint32_t kImmediate = 0x5eedf00d;
constexpr auto kDeadline = std::chrono::seconds(20);  // per completion; TCG guests are slow

int fail(const char* what) {
  std::fprintf(stderr, "rdma_probe: FAIL: %s\n", what);
  return 1;
}

int fail_errno(const char* what, int err) {
  std::fprintf(stderr, "rdma_probe: FAIL: %s: %s\n", what, std::strerror(err));
  return 1;
}

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, gid.raw, text, sizeof text);
  return text;
}

bool is_ipv4_mapped(const ibv_gid& gid) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(gid.raw, prefix, sizeof prefix) == 0;
}

uint8_t pattern(size_t i, unsigned seed) {
  return static_cast<uint8_t>(i * 131 + seed * 29 + 7);
}

uint64_t tx_packets(const std::string& netdev) {
  std::ifstream in("/sys/class/net/" + netdev + "/statistics/tx_packets");
  uint64_t n = 0;
  in >> n;
  return n;
}

// One device's end of the exchange. Owns everything it opens.
struct End {
  std::string name;
  ibv_context* ctx = nullptr;
  ibv_port_attr port{};
  int gid_index = -1;  // IPv4 RoCEv2 GID, -1 if none
  ibv_gid gid{};
  std::string netdev;  // from the GID entry, empty if unknown
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  ibv_mr* mr = nullptr;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(kBufferBytes, 0);

  End() = default;
  End(const End&) = delete;
  End& operator=(const End&) = delete;
  ~End() {
    if (qp) ibv_destroy_qp(qp);
    if (mr) ibv_dereg_mr(mr);
    if (cq) ibv_destroy_cq(cq);
    if (pd) ibv_dealloc_pd(pd);
    if (ctx) ibv_close_device(ctx);
  }
};

// Finds the IPv4 RoCEv2 GID through ibv_query_gid_ex, or through sysfs where that is missing.
void find_roce_v2_ipv4_gid(End& end) {
  struct ibv_gid_entry entry {};
  for (int i = 0; i < end.port.gid_tbl_len; ++i) {
    int err = ibv_query_gid_ex(end.ctx, kPort, static_cast<uint32_t>(i), &entry, 0);
    if (err == 0) {
      if (entry.gid_type != IBV_GID_TYPE_ROCE_V2 || !is_ipv4_mapped(entry.gid)) continue;
      end.gid_index = i;
      end.gid = entry.gid;
      char name[IF_NAMESIZE] = "";
      if (entry.ndev_ifindex && if_indextoname(entry.ndev_ifindex, name)) end.netdev = name;
      return;
    }
    if (err != EOPNOTSUPP && err != ENOSYS) continue;  // ENODATA: an empty slot
    std::string type;
    std::getline(std::ifstream("/sys/class/infiniband/" + end.name + "/ports/1/gid_attrs/types/" +
                               std::to_string(i)),
                 type);
    if (type == "RoCE v2" && ibv_query_gid(end.ctx, kPort, i, &end.gid) == 0 &&
        is_ipv4_mapped(end.gid)) {
      end.gid_index = i;
      return;
    }
  }
}

// Opens the device and prints one line about it. Returns false if it cannot be opened.
bool open_and_describe(ibv_device* device, End& end) {
  end.name = ibv_get_device_name(device);
  end.ctx = ibv_open_device(device);
  if (!end.ctx) {
    std::printf("%s: cannot open: %s\n", end.name.c_str(), std::strerror(errno));
    return false;
  }
  if (int err = ibv_query_port(end.ctx, kPort, &end.port)) {
    std::printf("%s: cannot query port %d: %s\n", end.name.c_str(), kPort, std::strerror(err));
    return false;
  }
  find_roce_v2_ipv4_gid(end);
  const bool ethernet = end.port.link_layer == IBV_LINK_LAYER_ETHERNET;
  std::printf("%s: port %d %s, link layer %s, active mtu %d, netdev %s, ", end.name.c_str(), kPort,
              ibv_port_state_str(end.port.state), ethernet ? "Ethernet" : "InfiniBand",
              128 << end.port.active_mtu, end.netdev.empty() ? "?" : end.netdev.c_str());
  if (end.gid_index < 0)
    std::printf("no IPv4 RoCEv2 GID (among %d)\n", end.port.gid_tbl_len);
  else
    std::printf("IPv4 RoCEv2 GID index %d = %s\n", end.gid_index, gid_text(end.gid).c_str());
  return true;
}

bool usable(const End& end) {
  return end.port.state == IBV_PORT_ACTIVE && end.gid_index >= 0;
}

// PD, CQ, registered buffer and an RC QP in RESET.
int create_resources(End& end) {
  if (!(end.pd = ibv_alloc_pd(end.ctx))) return fail_errno("ibv_alloc_pd", errno);
  if (!(end.cq = ibv_create_cq(end.ctx, 16, nullptr, nullptr, 0)))
    return fail_errno("ibv_create_cq", errno);
  end.mr = ibv_reg_mr(end.pd, end.buffer.data(), end.buffer.size(),
                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!end.mr) return fail_errno("ibv_reg_mr (ulimit -l?)", errno);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = end.cq;
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 1;
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  if (!(end.qp = ibv_create_qp(end.pd, &init))) return fail_errno("ibv_create_qp", errno);
  return 0;
}

// RESET -> INIT -> RTR -> RTS, connected to `peer` through its GID.
int connect(End& self, const End& peer, uint32_t self_psn, uint32_t peer_psn) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = kPort;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (int err = ibv_modify_qp(self.qp, &attr,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return fail_errno("ibv_modify_qp to INIT", err);

  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(self.port.active_mtu, peer.port.active_mtu);
  attr.dest_qp_num = peer.qp->qp_num;
  attr.rq_psn = peer_psn;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = peer.gid;
  attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(self.gid_index);
  attr.ah_attr.grh.hop_limit = 64;
  attr.ah_attr.port_num = kPort;
  if (int err = ibv_modify_qp(self.qp, &attr,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return fail_errno("ibv_modify_qp to RTR", err);

  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 6;
  attr.rnr_retry = 6;
  attr.sq_psn = self_psn;
  attr.max_rd_atomic = 1;
  if (int err = ibv_modify_qp(self.qp, &attr,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    return fail_errno("ibv_modify_qp to RTS", err);
  return 0;
}

int post_recv(End& end, size_t offset, size_t bytes, uint64_t id) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(end.buffer.data() + offset), static_cast<uint32_t>(bytes),
              end.mr->lkey};
  ibv_recv_wr wr{}, *bad = nullptr;
  wr.wr_id = id;
  wr.sg_list = bytes ? &sge : nullptr;
  wr.num_sge = bytes ? 1 : 0;
  if (int err = ibv_post_recv(end.qp, &wr, &bad)) return fail_errno("ibv_post_recv", err);
  return 0;
}

// Waits for one completion of `id` on end's CQ; fails on an error status or past the deadline.
int await(End& end, uint64_t id, const char* what, ibv_wc& wc) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  for (;;) {
    int n = ibv_poll_cq(end.cq, 1, &wc);
    if (n < 0) return fail("ibv_poll_cq failed");
    if (n == 1) {
      if (wc.status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "rdma_probe: FAIL: %s on %s completed with status %d (%s)\n", what,
                     end.name.c_str(), wc.status, ibv_wc_status_str(wc.status));
        return 1;
      }
      if (wc.wr_id != id) {
        std::fprintf(stderr, "rdma_probe: FAIL: %s: unexpected completion wr_id %llu\n", what,
                     static_cast<unsigned long long>(wc.wr_id));
        return 1;
      }
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "rdma_probe: FAIL: %s: no completion on %s within %lld s\n", what,
                   end.name.c_str(), static_cast<long long>(kDeadline.count()));
      return 1;
    }
  }
}

int check_bytes(const End& end, size_t offset, size_t bytes, unsigned seed, const char* what) {
  for (size_t i = 0; i < bytes; ++i) {
    if (end.buffer[offset + i] != pattern(i, seed)) {
      std::fprintf(stderr, "rdma_probe: FAIL: %s: byte %zu on %s is %u, expected %u\n", what, i,
                   end.name.c_str(), end.buffer[offset + i], pattern(i, seed));
      return 1;
    }
  }
  return 0;
}

double micros_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

int exchange(End& a, End& b) {
  if (int rc = create_resources(a)) return rc;
  if (int rc = create_resources(b)) return rc;
  if (int rc = connect(a, b, 0x1111, 0x2222)) return rc;
  if (int rc = connect(b, a, 0x2222, 0x1111)) return rc;
  std::printf("rdma_probe: RC QP %s qpn %u <-> %s qpn %u (path mtu %d, retry_cnt 6, timeout 14)\n",
              a.name.c_str(), a.qp->qp_num, b.name.c_str(), b.qp->qp_num,
              128 << std::min(a.port.active_mtu, b.port.active_mtu));
  for (size_t i = 0; i < kWriteBytes; ++i) a.buffer[i] = pattern(i, 1);
  for (size_t i = 0; i < kSendBytes; ++i) b.buffer[kWriteBytes + i] = pattern(i, 2);
  const uint64_t packets_before = a.netdev.empty() ? 0 : tx_packets(a.netdev);

  // A -> B: RDMA WRITE with immediate (B needs a receive, without buffer, for the immediate).
  if (int rc = post_recv(b, 0, 0, 21)) return rc;
  if (int rc = post_recv(a, kWriteBytes, kSendBytes, 12)) return rc;
  auto start = std::chrono::steady_clock::now();
  ibv_sge sge{reinterpret_cast<uintptr_t>(a.buffer.data()), kWriteBytes, a.mr->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = 11;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.imm_data = htonl(kImmediate);
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(b.buffer.data());
  wr.wr.rdma.rkey = b.mr->rkey;
  if (int err = ibv_post_send(a.qp, &wr, &bad)) return fail_errno("ibv_post_send (write)", err);
  ibv_wc wc{};
  if (int rc = await(a, 11, "RDMA WRITE with immediate (sender)", wc)) return rc;
  if (int rc = await(b, 21, "RDMA WRITE with immediate (receiver)", wc)) return rc;
  if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
      ntohl(wc.imm_data) != kImmediate || wc.byte_len != kWriteBytes)
    return fail("RDMA WRITE with immediate: wrong opcode, immediate or length at the receiver");
  if (int rc = check_bytes(b, 0, kWriteBytes, 1, "RDMA WRITE")) return rc;
  std::printf(
      "rdma_probe: RDMA WRITE with immediate %zu bytes %s -> %s: ok, immediate 0x%x, %.0f us\n",
      kWriteBytes, a.name.c_str(), b.name.c_str(), ntohl(wc.imm_data), micros_since(start));

  // B -> A: SEND into A's posted receive.
  start = std::chrono::steady_clock::now();
  sge = {reinterpret_cast<uintptr_t>(b.buffer.data() + kWriteBytes), kSendBytes, b.mr->lkey};
  wr = {};
  wr.wr_id = 22;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  if (int err = ibv_post_send(b.qp, &wr, &bad)) return fail_errno("ibv_post_send (send)", err);
  if (int rc = await(b, 22, "SEND (sender)", wc)) return rc;
  if (int rc = await(a, 12, "SEND (receiver)", wc)) return rc;
  if (wc.opcode != IBV_WC_RECV || wc.byte_len != kSendBytes)
    return fail("SEND: wrong opcode or length at the receiver");
  if (int rc = check_bytes(a, kWriteBytes, kSendBytes, 2, "SEND")) return rc;
  std::printf("rdma_probe: SEND %zu bytes %s -> %s: ok, %.0f us\n", kSendBytes, b.name.c_str(),
              a.name.c_str(), micros_since(start));
  if (!a.netdev.empty())
    std::printf("rdma_probe: %s sent %llu packets during the exchange\n", a.netdev.c_str(),
                static_cast<unsigned long long>(tx_packets(a.netdev) - packets_before));
  return 0;
}

}  // namespace

int main() {
  int count = 0;
  errno = 0;
  ibv_device** devices = ibv_get_device_list(&count);
  if (!devices) {
    std::fprintf(stderr,
                 "rdma_probe: no RDMA here: ibv_get_device_list failed: %s (a kernel without "
                 "RDMA support? tests/rdma/run_in_vm.sh runs programs where there is)\n",
                 std::strerror(errno));
    return 2;
  }
  if (count == 0) {
    ibv_free_device_list(devices);
    std::fprintf(stderr, "rdma_probe: no RDMA here: ibv_get_device_list found no device\n");
    return 2;
  }
  std::printf("rdma_probe: %d RDMA device(s)\n", count);

  const char* want_a = std::getenv("RXE_DEV_A");
  const char* want_b = std::getenv("RXE_DEV_B");
  std::vector<End> ends(static_cast<size_t>(count));
  int index_a = -1, index_b = -1;
  for (int i = 0; i < count; ++i) {
    End& end = ends[static_cast<size_t>(i)];
    if (!open_and_describe(devices[i], end) || !usable(end)) continue;
    if (want_a ? end.name == want_a : index_a < 0)
      index_a = i;
    else if (want_b ? end.name == want_b : index_b < 0)
      index_b = i;
  }
  ibv_free_device_list(devices);
  if (index_a < 0)
    return fail(want_a ? "RXE_DEV_A is not a usable device (an ACTIVE port with an IPv4 RoCEv2 GID)"
                       : "no usable device (an ACTIVE port with an IPv4 RoCEv2 GID)");

  // One usable device only: a second context on it (the NIC loops the traffic back).
  End second;
  if (index_b < 0) {
    if (want_b) return fail("RXE_DEV_B is not a usable device");
    int n = 0;
    ibv_device** again = ibv_get_device_list(&n);
    for (int i = 0; again && i < n; ++i)
      if (ends[static_cast<size_t>(index_a)].name == ibv_get_device_name(again[i]))
        open_and_describe(again[i], second);
    if (again) ibv_free_device_list(again);
    if (!second.ctx || !usable(second)) return fail("cannot open a second context");
  }
  End& a = ends[static_cast<size_t>(index_a)];
  End& b = index_b < 0 ? second : ends[static_cast<size_t>(index_b)];
  if (int rc = exchange(a, b)) return rc;
  std::printf("rdma_probe: OK\n");
  return 0;
}
