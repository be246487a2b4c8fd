// The process's observer: the communicators' CommTraces, one thread that ticks them (every 10 ms:
// live counters, stall reports, dumps on deadlines, failures, peer loss, SIGUSR1 and other ranks'
// requests), and the files at the end (the profile, HCOMM_DUMP_ON_EXIT's dump).
//
// Failure semantics: observing never fails a communicator. A file that cannot be written or a
// store that cannot be reached is logged (once) and the rest goes on.
// Threads: attach/detach/dump from any thread; the observer thread runs until the process exits
// (the object is never destroyed: an exit handler stops the thread and writes the files).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "observe/comm_trace.hpp"
#include "observe/settings.hpp"
#include "observe/stats_segment.hpp"

namespace hcomm::observe {

class Observer {
 public:
  /// The process's settings (HCOMM_PROFILE ...): an error names a variable set to something it
  /// does not accept. Read once; later calls return the first answer.
  static Expected<Settings> settings();
  /// The process's observer (made on first use; settings() must have succeeded).
  static Observer& get();

  /// Starts observing a communicator; nullptr when nothing is recorded (settings say so).
  std::shared_ptr<CommTrace> attach(CommIdentity identity, actors::CommunicatorControl* control);
  /// Stops observing it (its control is about to go): writes the profile (HCOMM_PROFILE) and,
  /// with HCOMM_DUMP_ON_EXIT, the dump; keeps its records for the process's later files.
  void detach(const std::shared_ptr<CommTrace>& trace);
  /// Writes the flight recorder of every communicator of this process to
  /// HCOMM_DUMP_DIR/hcomm_trace.<rank>.<pid>.json; returns the path ("" when it failed).
  std::string dump(const std::string& reason, const std::string& detail);

 private:
  explicit Observer(Settings settings);
  void run();
  void tick();
  void at_exit();
  void write_profile();
  ProcessFacts facts() const;  // under mutex_
  std::vector<CommTraceData> gather();

  const Settings settings_;
  std::unique_ptr<StatsPublisher> stats_;
  std::string host_;
  mutable std::mutex mutex_;  // the lists below
  std::vector<std::shared_ptr<CommTrace>> live_;
  std::deque<CommTraceData> retired_;  // the last few detached communicators' records
  int process_rank_ = -1;              // of the first communicator
  int process_size_ = 1;
  int64_t process_offset_ns_ = 0;
  std::mutex dump_mutex_;  // one file written at a time
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // under wake_mutex_
  bool stopped_ = false;   // under wake_mutex_
  std::thread thread_;
};

}  // namespace hcomm::observe
