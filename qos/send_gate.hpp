// The send path of QoS: every data frame of a shaped communicator (PacedLink) passes through
// the process's SendGate. Each class (communicator) has a token bucket at the rate the QoS
// controller computed and a FIFO of frames waiting for it; whenever buckets allow, the classes
// that may send take turns in the order the Scheduler gives (default: higher priority first,
// then the frame queued first), and their frames go to their links. The gate also stamps the
// class's slot on the host board with "traffic now", which is how the controllers of the host
// know who is busy. Engine thread only (rates arrive through ProgressEngine::post()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "hcomm/qos.hpp"
#include "qos/token_bucket.hpp"
#include "transport/link.hpp"
#include "transport/progress_engine.hpp"

namespace hcomm::qos {

class HostBoard;

/// The process's Scheduler (set_scheduler()); null: the default order.
std::shared_ptr<Scheduler> current_scheduler();

class SendGate {
 public:
  using Clock = std::chrono::steady_clock;
  using ClassId = uint64_t;

  /// Lives as long as the engine: its timer is dropped with the engine, not cancelled.
  explicit SendGate(transport::ProgressEngine& engine) : engine_(engine) {}

  /// A class paced at `rate` bytes/s, reporting its traffic to `slot` of `board` (not owned;
  /// outlives the class).
  void add_class(ClassId id, int priority, double rate, HostBoard* board, int slot);
  /// The class goes away with its communicator: its queued frames are dropped (their requests
  /// are the executor's, which failed them).
  void remove_class(ClassId id);
  void set_class(ClassId id, int priority, double rate);
  /// Sends `request` on `link` when the class's turn comes (at once if it may).
  void post(ClassId id, transport::Link* link, transport::SendRequest* request);

  /// How long a class counts as busy after its last frame.
  static constexpr std::chrono::milliseconds kActiveFor{30};

 private:
  struct Queued {
    transport::Link* link;
    transport::SendRequest* request;
    Clock::time_point since;
  };
  struct Class {
    int priority = 0;
    TokenBucket bucket;
    std::deque<Queued> queue;
    HostBoard* board = nullptr;
    int slot = -1;
    std::vector<transport::Link*> links;  // seen so far: paced by the kernel too
  };
  void pump();
  /// Tells the board what the class sent (`bytes`) and whether it is busy or backlogged.
  void stamp(Class& c, Clock::time_point now, size_t bytes);
  void arm(Clock::time_point when);

  transport::ProgressEngine& engine_;
  std::map<ClassId, Class> classes_;
  bool pumping_ = false;
  transport::ProgressEngine::TimerId timer_ = 0;
  Clock::time_point timer_at_{};
  std::vector<QosTask> tasks_;  // reused
};

/// A communicator's link to a peer on another host, with its data frames paced by the gate.
/// Everything else passes straight to the link.
class PacedLink final : public transport::Link {
 public:
  PacedLink(transport::Link& inner, SendGate& gate, SendGate::ClassId id)
      : inner_(inner), gate_(gate), id_(id) {}

  int peer() const override { return inner_.peer(); }
  bool is_up() const override { return inner_.is_up(); }
  const std::string& describe() const override { return inner_.describe(); }
  transport::LinkCaps caps() const override { return inner_.caps(); }
  void post_send(transport::SendRequest* request) override {
    if (request->header.kind == static_cast<uint8_t>(transport::FrameKind::data))
      gate_.post(id_, &inner_, request);
    else
      inner_.post_send(request);
  }
  void post_recv(transport::RecvRequest* request) override { inner_.post_recv(request); }
  bool cancel_recv(transport::RecvRequest* request) override { return inner_.cancel_recv(request); }
  void send_abort(uint32_t comm_id, uint64_t op_seq, const std::string& reason) override {
    inner_.send_abort(comm_id, op_seq, reason);
  }
  void send_channel(const transport::FrameHeader& header, std::string payload) override {
    inner_.send_channel(header, std::move(payload));
  }
  void set_traffic_class(int tos) override { inner_.set_traffic_class(tos); }
  void set_pacing_rate(double bytes_per_second) override {
    inner_.set_pacing_rate(bytes_per_second);
  }
  void close() override { inner_.close(); }
  void abandon() override { inner_.abandon(); }
  const Status& error() const override { return inner_.error(); }

 private:
  transport::Link& inner_;
  SendGate& gate_;
  const SendGate::ClassId id_;
};

}  // namespace hcomm::qos
