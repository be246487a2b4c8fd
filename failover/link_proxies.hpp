// The requests a ReliableLink posts on one of its links for the executor's: a SendProxy is one
// attempt at sending a kept frame (failover/replay_buffer.hpp), a RecvProxy one posting of a
// receive the executor posted (PendingReceive). A request may be posted on several links in
// turn, and a receive on both at once (multi-path: its frame may come on either); each posting
// is its own proxy, so that a link left behind can still call its proxies back, harmlessly,
// while it is being destroyed. A receive posted on both links is matched by one: the moment one
// proxy matches its frame, the owner withdraws the other (on_proxy_matched()).
//
// Ownership: the ReliableLink allocates proxies and frees them after their callback, or when
// the link they are posted on is destroyed. A proxy whose link was retired is stale: it ignores
// every callback. A proxy whose frame or receive is gone (detached: null entry or pending)
// completes nothing. Engine thread only.
//
// Exactly once: a receive keeps, across its postings, how many payload bytes it was handed in
// pieces; a frame sent again after a switch starts from its beginning, and its posting skips the
// bytes the receive has already (pieces end on element boundaries, so this count does too). A
// receive whose frame is stored (destination()) is simply written again, whole.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "failover/link_supervisor.hpp"
#include "failover/replay_buffer.hpp"
#include "transport/link.hpp"

namespace hcomm::failover {

struct SendProxy;
struct RecvProxy;

/// Where proxies report (the ReliableLink); called only for proxies that are not stale.
class ProxyOwner {
 public:
  virtual void on_proxy_sent(SendProxy* proxy, const Status& status) = 0;
  virtual void on_proxy_received(RecvProxy* proxy, const Status& status) = 0;
  /// `proxy`'s link matched a frame to it (before the executor judges the header).
  virtual void on_proxy_matched(RecvProxy* proxy) = 0;

 protected:
  ~ProxyOwner() = default;
};

/// One attempt at sending `entry` on `slot`'s link.
struct SendProxy final : transport::SendRequest {
  SendProxy(ProxyOwner& owner, ReplayBuffer::Frame& frame, int slot);
  ProxyOwner& owner;
  ReplayBuffer::Frame* entry;  ///< null once detached (its link was retired)
  const int slot;
  bool stale = false;
  void on_sent(const Status& status) override {
    if (!stale) owner.on_proxy_sent(this, status);
  }
};

/// A receive posted by the executor, kept until its frame arrived whole (on whichever link).
struct PendingReceive {
  transport::RecvRequest* user = nullptr;
  /// Its posting on each slot's link, if any (both only under multi-path, until one matched).
  std::array<RecvProxy*, 2> proxies{};
  size_t delivered = 0;  ///< payload bytes handed over in pieces so far, on any link
  bool posted() const { return proxies[0] != nullptr || proxies[1] != nullptr; }
};

/// One posting of `pending` on `slot`'s link.
struct RecvProxy final : transport::RecvRequest {
  RecvProxy(ProxyOwner& owner, PendingReceive& pending, int slot);
  ProxyOwner& owner;
  PendingReceive* pending;  ///< null once detached (the receive is gone, or moved on)
  const int slot;
  bool stale = false;
  /// The executor's accept() refused the frame (the frame still arrived whole).
  bool rejected = false;
  /// Its link matched a frame to it: it cannot be withdrawn any more.
  bool matched = false;
  /// The frame that matched: its number and flags (for the acknowledgement).
  uint64_t seq = 0;
  uint8_t flags = 0;

  Status accept(const transport::FrameHeader& header) override;
  void* destination() override;
  void on_piece(size_t offset, const void* data, size_t bytes) override;
  size_t piece_granularity() const override;
  void on_received(const Status& status) override {
    if (!stale) owner.on_proxy_received(this, status);
  }
};

}  // namespace hcomm::failover
