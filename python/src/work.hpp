// An operation started from Python: the library's Work, the buffers it reads and writes (kept
// alive while it runs), and what wait() returns. Waiting releases the GIL and looks for signals
// every 20 ms, so Ctrl-C raises KeyboardInterrupt within that while the operation goes on.
#pragma once

#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include <hcomm/communicator.hpp>

#include "buffers.hpp"

namespace hcomm::python {

namespace py = pybind11;

class PyWork {
 public:
  PyWork(Work work, std::vector<Buffer> buffers, py::object result,
         std::shared_ptr<Communicator> comm);
  /// Keeps the buffers of an operation still running (until it completes): GIL held.
  ~PyWork();

  /// Waits up to `timeout_s` seconds (None: the communicator's op timeout); returns the result
  /// (the output array, or None), raises the operation's hcomm.Error, hcomm.TimeoutError when it
  /// still runs (it goes on), KeyboardInterrupt on Ctrl-C (it goes on).
  py::object wait(std::optional<double> timeout_s);
  /// Moves the operation on for a moment (as MPI_Test does: an operation nobody waits on may
  /// otherwise wait for the engine thread's next look), then says whether it completed.
  bool is_completed() const {
    if (!work_.test()) (void)work_.wait(std::chrono::milliseconds(0));
    return work_.test();
  }
  /// None while running or after success; else the hcomm.Error it failed with.
  py::object exception() const;
  const Work& work() const { return work_; }

 private:
  Work work_;
  std::vector<Buffer> buffers_;
  py::object result_;
  std::shared_ptr<Communicator> comm_;
};

/// Waits for `work` with the GIL released, `limit` at most, checking for signals every 20 ms.
/// Returns nullopt when a signal handler raised (the Python error is set), else the status
/// (HCOMM_ERR_TIMEOUT while the operation still runs).
std::optional<Status> wait_interruptible(const Work& work, std::chrono::milliseconds limit);

/// Frees the buffers of dropped operations that have completed since (GIL held).
void reap_orphans();

}  // namespace hcomm::python
