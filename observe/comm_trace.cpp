#include "observe/comm_trace.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include <unistd.h>

#include "core/log.hpp"
#include "observe/stall_report.hpp"

namespace hcomm::observe {

namespace {

constexpr int64_t kMs = 1000 * 1000;
constexpr int64_t kPublishEveryNs = 1000 * kMs;  // progress and dump requests
constexpr int64_t kSlowEveryNs = 500 * kMs;      // failover state, QoS, lost peers
constexpr int64_t kSampleEveryNs = 100 * kMs;    // the profile's counters
constexpr size_t kMaxSamples = 100000;
constexpr size_t kMaxTransfers = 1000000;  // level 2: ~64 MB at most

}  // namespace

CommTrace::CommTrace(CommIdentity identity, const Settings& settings,
                     actors::CommunicatorControl* control, StatsComm* slot)
    : identity_(std::move(identity)),
      settings_(settings),
      recorder_(settings.profile > 0 ? std::max(settings.trace_buffer, Settings::kProfileOps)
                : settings.records() ? std::max<size_t>(settings.trace_buffer, 1)
                                     : 0),
      slot_(slot),
      control_(control) {
  // The board: the stall report's view of the other ranks, the dump requests, the clock offset.
  // Only ranks that talk to it connect (a 1-rank communicator has nobody to ask).
  if (identity_.size > 1 && (settings_.stall_warn_ms > 0 || settings_.profile > 0)) {
    auto board = ProgressBoard::connect(identity_.root_addr, identity_.id, identity_.size);
    if (board.ok()) {
      board_ = std::move(board.value());
      int64_t uncertainty = 0;
      auto offset = identity_.rank == 0 ? Expected<int64_t>(int64_t{0})
                                        : board_->clock_offset_ns(&uncertainty);
      if (board_ok(offset.status())) offset_ns_ = offset.value();
      HCOMM_LOG(info, core::log::kInit, "clock offset to rank 0: %.1f us (+- %.1f us)",
                static_cast<double>(offset_ns_) / 1000.0,
                static_cast<double>(uncertainty) / 1000.0);
      if (board_) {
        auto seen = board_->dump_requests();
        if (board_ok(seen.status())) dumps_seen_ = seen.value();
      }
    } else {
      board_ok(board.status());
    }
  }
}

bool CommTrace::board_ok(const Status& st) {
  if (st.ok()) return true;
  if (board_)
    HCOMM_LOG(info, core::log::kBoot,
              "communicator %s: the ranks' progress board is off (%s): stall reports name only "
              "this rank's peers",
              identity_.id.c_str(), st.to_string().c_str());
  board_.reset();
  return false;
}

void CommTrace::detach() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  control_ = nullptr;
  if (slot_ != nullptr) slot_->in_flight.store(0, std::memory_order_relaxed);
}

std::vector<std::pair<std::string, uint64_t>> CommTrace::bytes_by_transport_locked() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  if (control_ == nullptr) return out;
  for (int p = 0; p < identity_.size; ++p) {
    if (p == identity_.rank) continue;
    const std::string& name = control_->transport_to(p);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == name; });
    if (it == out.end()) it = out.insert(out.end(), {name, 0});
    it->second += control_->bytes_sent(p);
  }
  return out;
}

void CommTrace::refresh_stats(const FlightRecorder::Scan& scan, int64_t now_ns, bool slow_fields) {
  if (slot_ == nullptr) return;
  StatsComm& s = *slot_;
  s.in_flight.store(scan.in_flight, std::memory_order_relaxed);
  s.oldest_age_us.store(scan.oldest ? static_cast<uint64_t>(std::max<int64_t>(
                                          1, (now_ns - scan.oldest->enqueued_ns) / 1000))
                                    : 0,
                        std::memory_order_relaxed);
  s.oldest_seq.store(scan.oldest ? scan.oldest->seq : 0, std::memory_order_relaxed);
  s.oldest_kind.store(scan.oldest ? static_cast<uint32_t>(scan.oldest->kind) : 0,
                      std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (control_ == nullptr) return;
  const auto bytes = bytes_by_transport_locked();
  const size_t n = std::min(bytes.size(), kStatsTransports);
  for (size_t i = 0; i < n; ++i) {
    if (i >= s.num_transports) {
      std::strncpy(s.transports[i].name, bytes[i].first.c_str(), sizeof s.transports[i].name - 1);
      s.num_transports = static_cast<uint32_t>(i + 1);
    }
    s.transports[i].bytes_sent.store(bytes[i].second, std::memory_order_relaxed);
  }
  if (slow_fields) {
    const FailoverStats fs = control_->failover_stats();
    s.failovers.store(fs.failovers, std::memory_order_relaxed);
    s.failbacks.store(fs.failbacks, std::memory_order_relaxed);
    s.gray_failures.store(fs.gray_failures, std::memory_order_relaxed);
    uint64_t retransmits = 0;
    double rtt_us = 0;
    for (const LinkHealthInfo& l : fs.links) {
      retransmits += l.retransmits;
      if (l.state == "active" || l.state == "multipath") rtt_us = std::max(rtt_us, l.rtt_us);
    }
    s.retransmits.store(retransmits, std::memory_order_relaxed);
    s.link_rtt_us.store(static_cast<uint64_t>(rtt_us), std::memory_order_relaxed);
    s.peers_on_fallback.store(static_cast<uint32_t>(control_->peers_on_fallback()),
                              std::memory_order_relaxed);
    s.peers_lost.store(static_cast<uint32_t>(control_->lost_peers().size()),
                       std::memory_order_relaxed);
    const QosClass q = control_->qos();
    s.qos_min.store(static_cast<uint32_t>(q.min_rate), std::memory_order_relaxed);
    s.qos_max.store(static_cast<uint32_t>(q.max_rate), std::memory_order_relaxed);
    s.qos_priority.store(static_cast<uint32_t>(q.priority), std::memory_order_relaxed);
  }
  s.updated_ns.store(now_ns, std::memory_order_relaxed);
}

void CommTrace::sample_counters(const FlightRecorder::Scan& scan, int64_t now_ns) {
  CounterSample sample;
  sample.at_ns = now_ns;
  sample.in_flight = scan.in_flight;
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    sample.bytes_sent = bytes_by_transport_locked();
  }
  std::lock_guard<std::mutex> lock(samples_mutex_);
  if (samples_.size() == kMaxSamples) samples_.pop_front();
  samples_.push_back(std::move(sample));
}

void CommTrace::publish_progress(const FlightRecorder::Scan& scan, bool force) {
  if (!board_ || !scan.newest_collective) return;
  const OpRecord& last = *scan.newest_collective;
  if (!force && last.seq == published_seq_ && last.state == published_state_) return;
  Progress mine;
  mine.seq = last.seq;
  mine.kind = last.kind;
  mine.state = last.state;
  mine.entered_ns = last.enqueued_ns + offset_ns_;
  mine.pid = static_cast<int>(::getpid());
  mine.host = identity_.host;
  if (board_ok(board_->publish(identity_.rank, mine))) {
    published_seq_ = last.seq;
    published_state_ = last.state;
  }
}

CommTrace::Findings CommTrace::tick(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(tick_mutex_);
  Findings out;
  const FlightRecorder::Scan scan = recorder_.scan();
  const bool slow = now_ns >= next_slow_ns_;
  if (slow) next_slow_ns_ = now_ns + kSlowEveryNs;
  refresh_stats(scan, now_ns, slow);
  if (settings_.profile > 0 && now_ns >= next_sample_ns_) {
    next_sample_ns_ = now_ns + kSampleEveryNs;
    sample_counters(scan, now_ns);
  }
  if (now_ns >= next_publish_ns_) {
    next_publish_ns_ = now_ns + kPublishEveryNs;
    publish_progress(scan, false);
    if (board_) {
      auto requests = board_->dump_requests();
      if (board_ok(requests.status()) && requests.value() > dumps_seen_) {
        dumps_seen_ = requests.value();
        out.dump_reason = "request";
        out.dump_detail = "another rank of communicator " + identity_.id + " saw a stall";
      }
      // board_ok() drops the board when the store is gone (rank 0 exited first, say).
      if (board_ && !identity_.launch_error_key.empty() && !launch_error_seen_) {
        auto posted = board_->read(identity_.launch_error_key);
        if (posted.ok()) {
          launch_error_seen_ = true;
          out.launch_error = posted.value();
        } else if (posted.status().code() != HCOMM_ERR_TIMEOUT) {
          board_ok(posted.status());
        }
      }
    }
  }
  if (scan.failures > failed_seen_) {
    if (failed_seen_ == 0 && scan.first_failure) {
      out.dump_reason = "failed";
      out.dump_detail = op_name(*scan.first_failure) + " failed: " + scan.first_failure->failure;
    }
    failed_seen_ = scan.failures;
  }
  if (slow) {
    std::lock_guard<std::mutex> lock(control_mutex_);
    const size_t lost = control_ != nullptr ? control_->lost_peers().size() : lost_seen_;
    if (lost > lost_seen_) {
      out.dump_reason = "peer_lost";
      out.dump_detail = std::to_string(lost) + " peer(s) of communicator " + identity_.id + " lost";
    }
    lost_seen_ = lost;
  }
  if (!scan.oldest) return out;
  const OpRecord& op = *scan.oldest;
  const int64_t age = now_ns - op.enqueued_ns;
  if (identity_.op_timeout_ms > 0 && age >= identity_.op_timeout_ms * kMs &&
      timeout_enqueued_ns_ != op.enqueued_ns) {
    timeout_enqueued_ns_ = op.enqueued_ns;
    out.dump_reason = "timeout";
    out.dump_detail =
        op_name(op) + " passed its deadline of " + std::to_string(identity_.op_timeout_ms) + " ms";
  }
  const int64_t warn = settings_.stall_warn_ms * kMs;
  // Half way to a report every waiting rank says where it is, so that each report sees the
  // others' state, not their last periodic publication.
  if (warn > 0 && age >= warn / 2 && early_published_ns_ != op.enqueued_ns) {
    early_published_ns_ = op.enqueued_ns;
    publish_progress(scan, true);
  }
  if (warn <= 0 || age < warn) return out;
  const bool first = stall_enqueued_ns_ != op.enqueued_ns;
  if (!first && age < next_stall_age_ns_) return out;
  stall_enqueued_ns_ = op.enqueued_ns;
  next_stall_age_ns_ = (age / warn + 1) * warn;
  StallFacts facts;
  facts.rank = identity_.rank;
  facts.offset_ns = offset_ns_;
  publish_progress(scan, true);  // the others see that this rank is in it
  if (board_) {
    auto all = board_->read_all();
    if (board_ok(all.status())) facts.progress = std::move(all.value());
  }
  if (facts.progress.empty()) facts.progress_error = "no progress board (see HCOMM_DEBUG=INFO)";
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    for (int p = 0; p < identity_.size && control_ != nullptr; ++p)
      facts.transport_to.push_back(control_->transport_to(p));
  }
  facts.now_ns = steady_ns();
  out.stall_line = stall_line(op, facts);
  out.first_stall = first;
  return out;
}

std::string CommTrace::unreported_failure() {
  // Not waited for behind a tick blocked on the store: that tick reports it.
  std::unique_lock<std::mutex> lock(tick_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return "";
  const FlightRecorder::Scan scan = recorder_.scan();
  if (scan.failures == 0 || failed_seen_ > 0 || !scan.first_failure) return "";
  failed_seen_ = scan.failures;
  return op_name(*scan.first_failure) + " failed: " + scan.first_failure->failure;
}

void CommTrace::abort_for_launch_error(const std::string& reason) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  launch_error_ = reason;
  launch_error_found_.store(true, std::memory_order_release);
  if (control_ != nullptr) control_->abort(reason);
}

std::string CommTrace::launch_error() const {
  std::lock_guard<std::mutex> lock(control_mutex_);
  return launch_error_;
}

void CommTrace::request_dumps() {
  if (!board_) return;
  if (board_ok(board_->request_dump())) {
    auto seen = board_->dump_requests();  // this rank's own request is not one for it
    if (board_ok(seen.status())) dumps_seen_ = seen.value();
  }
}

void CommTrace::record_transfer(const collectives::TransferEvent& e) {
  TransferRecord t;
  t.seq = e.seq;
  t.kind = e.kind;
  t.send = e.send;
  t.peer = e.peer;
  t.step = e.step;
  t.chunk = e.chunk;
  t.bytes = e.bytes;
  t.start_ns = steady_ns(e.start);
  t.end_ns = steady_ns(e.end);
  std::lock_guard<std::mutex> lock(samples_mutex_);
  if (transfers_.size() == kMaxTransfers) {
    transfers_.pop_front();
    ++transfers_dropped_;
  }
  transfers_.push_back(t);
}

CommTraceData CommTrace::gather() {
  CommTraceData d;
  d.id = identity_.id;
  d.rank = identity_.rank;
  d.size = identity_.size;
  d.offset_ns = offset_ns_;
  d.buffer_size = settings_.trace_buffer;
  d.records = recorder_.snapshot();
  d.recorded = recorder_.recorded();
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    if (control_ != nullptr) d.link_events = control_->failover_stats().events;
  }
  std::lock_guard<std::mutex> lock(samples_mutex_);
  d.counters.assign(samples_.begin(), samples_.end());
  d.transfers.assign(transfers_.begin(), transfers_.end());
  d.transfers_dropped = transfers_dropped_;
  return d;
}

}  // namespace hcomm::observe
