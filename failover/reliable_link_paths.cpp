// ReliableLink: multi-path. While both links are up, proven and admitted (and the channel was
// made with ReliableLinkParams::multipath), a frame of at least multipath_min_bytes that is kept
// in place goes on whichever link would deliver it first: its backlog (in-place bytes not yet
// acknowledged) plus the frame, over the link's measured goodput. The split therefore follows
// the measured bandwidths, a link that slows down gets less, and a sick one leaves the split
// (a gray failure) until the probe admits it again. Receives that large are posted on both
// links; the first posting to match its frame withdraws the other. Numbering, acknowledgement
// and replay do not care which link a frame took: exactly once holds as it does on one link.
#include "core/log.hpp"
#include "failover/reliable_link.hpp"

namespace hcomm::failover {

bool ReliableLink::striping() const {
  if (!params_.multipath || active_ == kNoSlot || closing_ || !error_.ok()) return false;
  for (const Slot& s : slots_)
    if (s.state != SlotState::up || !s.proven || !s.admitted) return false;
  return true;
}

int ReliableLink::pick_slot(const ReplayBuffer::Frame& f) const {
  if (f.header.length < params_.multipath_min_bytes ||
      (f.header.flags & transport::kFrameAckNow) == 0 || !striping())
    return active_;
  const int other = 1 - active_;
  const LinkHealth& a = slots_[static_cast<size_t>(active_)].health;
  const LinkHealth& b = slots_[static_cast<size_t>(other)].health;
  double rate_a = a.planning_bps();
  double rate_b = b.planning_bps();
  // Unmeasured: as fast as the other (both unmeasured: the backlogs alone decide).
  if (rate_a <= 0) rate_a = rate_b > 0 ? rate_b : 1;
  if (rate_b <= 0) rate_b = rate_a;
  const auto bytes = static_cast<double>(f.header.length);
  const double done_a = (static_cast<double>(a.outstanding()) + bytes) / rate_a;
  const double done_b = (static_cast<double>(b.outstanding()) + bytes) / rate_b;
  return done_b < done_a ? other : active_;
}

void ReliableLink::post_everywhere(PendingReceive* p) {
  if (active_ == kNoSlot) return;
  for (const RecvProxy* x : p->proxies)
    if (x != nullptr && x->matched) return;  // its frame is arriving
  transport::RecvRequest* user = p->user;
  const auto alive = [&] {
    auto it = pending_.find(user);
    return it != pending_.end() && it->second.get() == p;
  };
  if (stored_.contains(user->key)) {
    // Its frame arrived whole on a link that went away or stands by: handed over through a
    // proxy, which skips what a half-filled receive has already reduced.
    for (RecvProxy* x : p->proxies)
      if (x != nullptr) withdraw(x);
    if (!p->posted()) stored_.deliver_stored(attach_proxy(p, active_));
    return;
  }
  // The peer may put a large frame on either link: wait for it on both.
  const int other = 1 - active_;
  const Slot& beside = slots_[static_cast<size_t>(other)];
  const bool both = params_.multipath && beside.state == SlotState::up && beside.proven &&
                    user->expected_bytes() >= params_.multipath_min_bytes;
  for (int s : {active_, other}) {
    if (s == other && !both) break;
    Slot& on = slots_[static_cast<size_t>(s)];
    if (p->proxies[static_cast<size_t>(s)] != nullptr || on.state != SlotState::up) continue;
    on.link->post_recv(attach_proxy(p, s));  // may hand it a frame the link stored
    if (!alive()) return;
    const RecvProxy* posted = p->proxies[static_cast<size_t>(s)];
    if (posted != nullptr && posted->matched) return;
  }
}

void ReliableLink::on_proxy_matched(RecvProxy* proxy) {
  PendingReceive* p = proxy->pending;
  if (p == nullptr) return;
  const int other = 1 - proxy->slot;
  RecvProxy* twin = p->proxies[static_cast<size_t>(other)];
  if (twin == nullptr || withdraw(twin)) return;
  if (!twin->matched) {
    // Its link no longer has it (it failed): nothing to withdraw.
    twin->pending = nullptr;
    p->proxies[static_cast<size_t>(other)] = nullptr;
    return;
  }
  // Both links are delivering the frame: the peer sent it again here, having given the other
  // link up. That link goes now, before it writes another byte of it.
  fail_slot(other, "its frames came again on the other link");
}

void ReliableLink::admit(int slot, bool tell_peer) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.state != SlotState::up) return;
  s.admitted = true;
  if (!tell_peer) return;
  ChannelMessage notice;
  notice.kind = ChannelMessage::Kind::admit;
  notice.slot = slot;
  send_on(active_ != kNoSlot ? active_ : slot, std::move(notice));
}

bool ReliableLink::receiving_beside() const {
  if (active_ == kNoSlot) return false;
  for (const RecvProxy* p : slots_[static_cast<size_t>(1 - active_)].recvs)
    if (p->matched) return true;
  return false;
}

}  // namespace hcomm::failover
