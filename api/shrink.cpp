// Communicator::shrink(): the survivors of a peer loss agree on who is left and build a new
// communicator of them (ncclCommShrink, MPI_Comm_shrink). The agreement runs over the old
// communicator's point-to-point links, which still work between survivors (only collectives
// fail once a peer is lost); the new one meets at a rendezvous store the lowest survivor starts,
// since rank 0 may be the one that is gone.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "api/communicator_impl.hpp"
#include "core/log.hpp"

namespace hcomm {

namespace api {

Work CommunicatorImpl::reserved_transfer(collectives::OpKind kind, void* buf, size_t bytes,
                                         int peer, bool caller_waits) {
  auto op = std::make_shared<collectives::Operation>();
  op->kind = kind;
  op->dtype = DataType::uint8;
  op->count = bytes;
  if (kind == collectives::OpKind::send)
    op->send = static_cast<std::byte*>(buf);
  else
    op->recv = static_cast<std::byte*>(buf);
  op->peer = peer;
  op->tag = kReservedTag;
  return submit(std::move(op), caller_waits);
}

Expected<Config> CommunicatorImpl::shrunk_config() {
  const int n = size();
  const int me = rank();
  // Every rank's view of who is lost; two rounds, so that a loss one survivor saw reaches all.
  std::vector<uint8_t> lost(static_cast<size_t>(n), 0);
  for (int p : control().lost_peers()) lost[static_cast<size_t>(p)] = 1;
  // A survivor answers within the peer timeout (it calls shrink() too); one that does not is
  // counted as lost.
  const auto wait = std::max(std::chrono::milliseconds(10000), 2 * cfg_.peer_timeout);
  for (int round = 0; round < 2; ++round) {
    // On the heap and kept when a wait runs out: a transfer that timed out stays posted, and a
    // late answer must find its memory (a few bytes, on a path that ends the communicator).
    auto views = std::make_shared<std::vector<std::vector<uint8_t>>>(static_cast<size_t>(n));
    auto mine = std::make_shared<std::vector<uint8_t>>(lost);
    bool timed_out = false;
    std::vector<Work> recvs(static_cast<size_t>(n));
    std::vector<Work> sends;
    for (int p = 0; p < n; ++p) {
      if (p == me || lost[static_cast<size_t>(p)]) continue;
      auto& view = (*views)[static_cast<size_t>(p)];
      view.assign(static_cast<size_t>(n), 0);
      recvs[static_cast<size_t>(p)] =
          reserved_transfer(collectives::OpKind::recv, view.data(), static_cast<size_t>(n), p);
      sends.push_back(reserved_transfer(collectives::OpKind::send, mine->data(), mine->size(), p));
    }
    for (int p = 0; p < n; ++p) {
      if (p == me || lost[static_cast<size_t>(p)]) continue;
      Status st = recvs[static_cast<size_t>(p)].wait(wait);
      if (!st.ok()) {
        HCOMM_LOG(warn, core::log::kInit, "shrink: rank %d did not answer (%s): counted as lost", p,
                  st.to_string().c_str());
        lost[static_cast<size_t>(p)] = 1;
        timed_out |= st.code() == HCOMM_ERR_TIMEOUT;
        continue;
      }
      for (int q = 0; q < n; ++q)
        lost[static_cast<size_t>(q)] |= (*views)[static_cast<size_t>(p)][static_cast<size_t>(q)];
    }
    for (auto& w : sends)  // small sends complete at once; failures are losses
      timed_out |= w.wait(wait).code() == HCOMM_ERR_TIMEOUT;
    if (timed_out) {
      static std::mutex kept_mutex;
      static std::vector<std::shared_ptr<void>> kept;
      std::lock_guard<std::mutex> lock(kept_mutex);
      kept.push_back(views);
      kept.push_back(mine);
    }
  }
  if (lost[static_cast<size_t>(me)])
    return Status{HCOMM_ERR_PEER_LOST,
                  "shrink: the other survivors count this rank as lost (it did not answer in "
                  "time): create a new communicator instead"};
  std::vector<int> survivors;
  for (int p = 0; p < n; ++p)
    if (!lost[static_cast<size_t>(p)]) survivors.push_back(p);
  const int root = survivors.front();
  // The root's store address, in a fixed-size message.
  constexpr size_t kAddressBytes = 128;
  std::vector<char> address(kAddressBytes, '\0');
  if (me == root) {
    auto a = control_->host_shrink_store();
    if (!a.ok()) return a.status();
    std::strncpy(address.data(), a.value().c_str(), kAddressBytes - 1);
    std::vector<Work> sends;
    for (int p : survivors)
      if (p != me)
        sends.push_back(
            reserved_transfer(collectives::OpKind::send, address.data(), kAddressBytes, p));
    for (auto& w : sends) {
      Status st = w.wait(wait);
      if (!st.ok()) return Status{st.code(), "shrink: " + st.message() + " (call shrink() again)"};
    }
  } else {
    Status st = reserved_transfer(collectives::OpKind::recv, address.data(), kAddressBytes, root)
                    .wait(wait);
    if (!st.ok())
      return Status{st.code(), "shrink: no address from rank " + std::to_string(root) +
                                   ", the lowest survivor: " + st.message() +
                                   " (call shrink() again)"};
  }
  Config next = cfg_;
  next.rank =
      static_cast<int>(std::find(survivors.begin(), survivors.end(), me) - survivors.begin());
  next.world_size = static_cast<int>(survivors.size());
  next.root_addr = std::string(address.data());
  HCOMM_LOG(info, core::log::kInit,
            "shrink: %d of %d ranks survive; this rank becomes rank %d of %d", next.world_size, n,
            next.rank, next.world_size);
  return next;
}

}  // namespace api

Expected<std::unique_ptr<Communicator>> Communicator::shrink() {
  auto next = impl_->shrunk_config();
  if (!next.ok()) return next.status();
  return Communicator::create(next.value());
}

}  // namespace hcomm
