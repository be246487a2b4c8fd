// What every link does first with a frame it is given to send: one place for the rule that a
// frame to a peer that said goodbye counts as delivered, and for the sender's rank in headers.
// (Sequence numbers are the reliable channel's business, failover/.)
#pragma once

#include <atomic>
#include <cstdint>

#include "hcomm/status.hpp"
#include "transport/frame.hpp"
#include "transport/link.hpp"

namespace hcomm::transport {

struct FrameStamp {
  int my_rank = -1;
  /// Payload bytes of data frames sent to the peer (not owned; may be null): read by other
  /// threads, hence atomic.
  std::atomic<uint64_t>* bytes_sent = nullptr;

  /// post_send()'s first steps: counts a data frame's payload and stamps the frame with this
  /// rank. On a failed link the request completes at once instead
  /// (returns false): as delivered when the peer said goodbye — it had completed its part of
  /// every operation before leaving — else with the link's error.
  bool admit(SendRequest* request, const Status& link_error, bool peer_closed) {
    if (bytes_sent != nullptr && request->header.kind == static_cast<uint8_t>(FrameKind::data))
      bytes_sent->fetch_add(request->header.length, std::memory_order_relaxed);
    if (!link_error.ok()) {
      request->on_sent(peer_closed ? Status{} : link_error);
      return false;
    }
    stamp(request->header);
    return true;
  }
  /// A frame of the link's own (an abort, a goodbye).
  void stamp(FrameHeader& header) { header.src_rank = my_rank; }
};

}  // namespace hcomm::transport
