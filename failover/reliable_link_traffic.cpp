// ReliableLink: the executor's data frames. A send is numbered and kept (replay_buffer.hpp),
// then handed to the active link through a SendProxy; its request completes once the frame is
// copied (small ones) or acknowledged (large ones), and the frame is dropped once acknowledged
// and no link holds it. A receive is kept as a PendingReceive and posted on the active link
// through a RecvProxy; a frame the peer sent before (a replay of one delivered here) is dropped
// on arrival and acknowledged again; every frame that arrived whole is acknowledged (receipts).
#include <utility>
#include <vector>

#include "failover/reliable_link.hpp"

namespace hcomm::failover {

// ---- sending

void ReliableLink::post_send(transport::SendRequest* request) {
  if (!error_.ok()) return request->on_sent(peer_closed_ ? Status{} : error_);
  ReplayBuffer::Frame& f = replay_.add(request);
  const uint64_t seq = f.header.link_seq;
  const bool copied = f.copied;
  if (active_ != kNoSlot) transmit(f, pick_slot(f));
  // A copied frame is complete for the caller at once (the copy is what gets replayed). The
  // send may have called back already: looked up anew.
  if (copied) {
    ReplayBuffer::Frame* now = replay_.find(seq);
    if (now != nullptr && now->user != nullptr) std::exchange(now->user, nullptr)->on_sent({});
  }
}

void ReliableLink::transmit(ReplayBuffer::Frame& f, int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  auto* p = new SendProxy(*this, f, slot);
  s.sends.insert(p);
  f.in_flight = true;
  f.sent_once = true;
  f.last_slot = slot;
  f.last_epoch = s.epoch;
  s.last_sent = scheduler_.now();
  if ((f.header.flags & transport::kFrameAckNow) != 0) count_on(f, slot);
  s.link->post_send(p);  // may call back at once
}

void ReliableLink::on_proxy_sent(SendProxy* p, const Status& status) {
  const int slot = p->slot;
  slots_[static_cast<size_t>(slot)].sends.erase(p);
  ReplayBuffer::Frame* f = p->entry;
  delete p;
  if (f == nullptr) return;
  f->in_flight = false;
  // Acknowledged already (the peer had it from an earlier link): done, whatever this send did.
  if (status.ok() || f->acked) return maybe_release(*f);
  // A failed send on a failed link is no error for the caller: the frame goes again on the next
  // link. One the link refused by itself (it is still healthy) is.
  const Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.link == nullptr || !s.link->error().ok()) return;
  transport::SendRequest* user = replay_.remove(f->header.link_seq);
  if (user != nullptr) user->on_sent(status);
}

void ReliableLink::maybe_release(ReplayBuffer::Frame& f) {
  if (!f.acked || f.in_flight) return;
  transport::SendRequest* user = replay_.remove(f.header.link_seq);
  if (user != nullptr) user->on_sent(Status{});
}

void ReliableLink::on_acknowledged(uint64_t cumulative, const std::vector<AckRange>& ranges) {
  // Releasing completes callers, whose callbacks may post and release more: look each up anew.
  for (uint64_t seq : replay_.acknowledge(cumulative, ranges))
    if (ReplayBuffer::Frame* f = replay_.find(seq)) {
      if (f->counted_slot >= 0) {
        slots_[static_cast<size_t>(f->counted_slot)].health.on_acked(f->header.length, f->stamp,
                                                                     scheduler_.now());
        f->counted_slot = -1;
      }
      maybe_release(*f);
    }
}

void ReliableLink::send_abort(uint32_t comm_id, uint64_t op_seq, const std::string& reason) {
  // Without a link now, the next one carries it (the peer's operation must fail, not wait).
  if (active_ == kNoSlot) return held_aborts_.push_back({comm_id, op_seq, reason});
  slots_[static_cast<size_t>(active_)].link->send_abort(comm_id, op_seq, reason);
}

void ReliableLink::send_channel(const transport::FrameHeader& header, std::string payload) {
  if (active_ != kNoSlot)
    slots_[static_cast<size_t>(active_)].link->send_channel(header, std::move(payload));
}

// ---- receiving

void ReliableLink::post_recv(transport::RecvRequest* request) {
  if (stored_.deliver_stored(request)) return;
  if (final_ != nullptr) return final_->post_recv(request);
  if (!error_.ok()) return request->on_received(error_);
  auto owned = std::make_unique<PendingReceive>();
  PendingReceive* p = owned.get();
  p->user = request;
  pending_.emplace(request, std::move(owned));
  if (active_ != kNoSlot) post_everywhere(p);
}

RecvProxy* ReliableLink::attach_proxy(PendingReceive* pending, int slot) {
  auto* p = new RecvProxy(*this, *pending, slot);
  slots_[static_cast<size_t>(slot)].recvs.insert(p);
  pending->proxies[static_cast<size_t>(slot)] = p;
  return p;
}

bool ReliableLink::withdraw(RecvProxy* proxy) {
  Slot& s = slots_[static_cast<size_t>(proxy->slot)];
  if (proxy->matched || !s.link || !s.link->cancel_recv(proxy)) return false;
  s.recvs.erase(proxy);
  if (proxy->pending != nullptr)
    proxy->pending->proxies[static_cast<size_t>(proxy->slot)] = nullptr;
  delete proxy;
  return true;
}

bool ReliableLink::cancel_recv(transport::RecvRequest* request) {
  if (final_ != nullptr && pending_.count(request) == 0) return final_->cancel_recv(request);
  auto it = pending_.find(request);
  if (it == pending_.end()) return false;
  PendingReceive* p = it->second.get();
  // A posting that matched its frame cannot be withdrawn (and is the only one left).
  for (RecvProxy* proxy : p->proxies)
    if (proxy != nullptr && proxy->matched) return false;
  for (RecvProxy* proxy : p->proxies)
    if (proxy != nullptr && !withdraw(proxy)) return false;
  pending_.erase(it);
  return true;
}

void ReliableLink::on_proxy_received(RecvProxy* proxy, const Status& status) {
  const auto on = static_cast<size_t>(proxy->slot);
  const Slot& slot = slots_[on];
  const bool link_failed = slot.link == nullptr || !slot.link->error().ok();
  slots_[on].recvs.erase(proxy);
  PendingReceive* p = proxy->pending;
  const uint64_t seq = proxy->seq;
  const uint8_t flags = proxy->flags;
  const bool rejected = proxy->rejected;
  delete proxy;
  if (p == nullptr) return;
  p->proxies[on] = nullptr;
  if (!status.ok() && !rejected && link_failed && final_ == nullptr) {
    // The link failed under it: posted again on the next link, or still posted on the other
    // (or failed when the peer is lost). After the peer's goodbye, the final link's verdict
    // stands.
    return;
  }
  // Done: a posting still waiting on the other link goes (it cannot have matched: this one
  // did, and withdrew it then).
  if (RecvProxy* twin = p->proxies[1 - on]; twin != nullptr && !withdraw(twin)) {
    twin->pending = nullptr;
    p->proxies[1 - on] = nullptr;
  }
  transport::RecvRequest* user = p->user;
  pending_.erase(user);
  if (status.ok() || rejected) on_delivered(seq, flags);
  user->on_received(status);
}

void ReliableLink::on_delivered(uint64_t seq, uint8_t flags) {
  // Arrived whole: in its receive, or stored for it (the store survives a failover). The
  // sender keeps it until then — no longer: a send completes once the peer has the bytes,
  // whether or not its receive is posted yet (as an eager or buffered send does).
  ack_when(receipts_.arrived(seq, flags));
}

bool ReliableLink::drop_duplicate(int slot, const transport::FrameHeader& h) {
  if (receipts_.has(h.link_seq)) {
    recorder_.count_duplicate();
    ack_when(receipts_.duplicate());  // the peer sent it again: it lacks the acknowledgement
    return true;
  }
  // The peer sends here: it moved its traffic (its switch frame may come later). Not on a link
  // this side left standing by: frames still arriving there were sent before the peer followed
  // this side's switch (a move of the peer's own to it comes with its switch notice).
  // Under multi-path a large frame on the other link is its share, not a move.
  const Slot& s = slots_[static_cast<size_t>(slot)];
  const bool share = params_.multipath && h.length >= params_.multipath_min_bytes;
  if (slot != active_ && s.state == SlotState::up && !s.standby && active_ != kNoSlot && !share)
    follow_soon(slot);
  return false;
}

}  // namespace hcomm::failover
