#include "failover/link_proxies.hpp"

namespace hcomm::failover {

SendProxy::SendProxy(ProxyOwner& o, ReplayBuffer::Frame& frame, int s)
    : owner(o), entry(&frame), slot(s) {
  header = frame.header;
  payload = frame.payload;
  buffer = frame.buffer;
  buffer_bytes = frame.buffer_bytes;
}

RecvProxy::RecvProxy(ProxyOwner& o, PendingReceive& p, int s) : owner(o), pending(&p), slot(s) {
  key = p.user->key;
}

Status RecvProxy::accept(const transport::FrameHeader& h) {
  if (stale || pending == nullptr) return {HCOMM_ERR_ABORTED, "the link was left behind"};
  matched = true;
  owner.on_proxy_matched(this);
  if (stale || pending == nullptr) return {HCOMM_ERR_ABORTED, "the link was left behind"};
  seq = h.link_seq;
  flags = h.flags;
  Status st = pending->user->accept(h);
  rejected = !st.ok();
  return st;
}

void* RecvProxy::destination() {
  return stale || pending == nullptr ? nullptr : pending->user->destination();
}

void RecvProxy::on_piece(size_t offset, const void* data, size_t bytes) {
  if (stale || pending == nullptr) return;
  size_t& done = pending->delivered;
  if (offset + bytes <= done) return;
  if (offset < done) {
    const size_t skip = done - offset;
    data = static_cast<const std::byte*>(data) + skip;
    bytes -= skip;
    offset = done;
  }
  pending->user->on_piece(offset, data, bytes);
  done = offset + bytes;
}

size_t RecvProxy::piece_granularity() const {
  return pending == nullptr ? 1 : pending->user->piece_granularity();
}

}  // namespace hcomm::failover
