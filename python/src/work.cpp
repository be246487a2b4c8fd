#include "work.hpp"

#include <algorithm>
#include <utility>

#include "errors.hpp"

namespace hcomm::python {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kSlice{20};

struct Orphan {
  Work work;
  std::vector<Buffer> buffers;
  std::shared_ptr<Communicator> comm;
};

std::vector<Orphan>& orphans() {
  static auto* list = new std::vector<Orphan>();  // GIL-protected; never destroyed
  return *list;
}

}  // namespace

std::optional<Status> wait_interruptible(const Work& work, std::chrono::milliseconds limit) {
  const auto start = Clock::now();
  while (true) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    const auto left = limit > waited ? limit - waited : std::chrono::milliseconds(0);
    Status st;
    {
      py::gil_scoped_release unlocked;
      st = work.wait(std::min(left, kSlice));
    }
    if (work.test()) return work.status();
    if (PyErr_CheckSignals() != 0) return std::nullopt;
    if (left <= kSlice) return st;
  }
}

void reap_orphans() {
  auto& list = orphans();
  list.erase(
      std::remove_if(list.begin(), list.end(), [](const Orphan& o) { return o.work.test(); }),
      list.end());
}

PyWork::PyWork(Work work, std::vector<Buffer> buffers, py::object result,
               std::shared_ptr<Communicator> comm)
    : work_(std::move(work)),
      buffers_(std::move(buffers)),
      result_(std::move(result)),
      comm_(std::move(comm)) {}

PyWork::~PyWork() {
  if (work_.valid() && !work_.test())
    orphans().push_back({std::move(work_), std::move(buffers_), std::move(comm_)});
}

py::object PyWork::wait(std::optional<double> timeout_s) {
  std::chrono::milliseconds limit = comm_->config().op_timeout;
  if (timeout_s) {
    if (*timeout_s < 0)
      throw py::value_error("timeout must be >= 0 seconds (None: the op timeout)");
    limit = std::chrono::milliseconds(static_cast<int64_t>(std::min(*timeout_s, 1e9) * 1000));
  }
  const auto st = wait_interruptible(work_, limit);
  if (!st) throw py::error_already_set();
  if (!st->ok()) {
    if (st->code() == HCOMM_ERR_TIMEOUT && !work_.test())
      raise_status({HCOMM_ERR_TIMEOUT, "the operation did not complete within " +
                                           std::to_string(limit.count()) +
                                           " ms; it goes on: wait again, or abort the "
                                           "communicator"});
    raise_status(*st);
  }
  return result_;
}

py::object PyWork::exception() const {
  if (!work_.test()) return py::none();
  const Status st = work_.status();
  return st.ok() ? py::none() : exception_for(st);
}

}  // namespace hcomm::python
