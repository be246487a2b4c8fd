#include "scheduler.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include <hcomm/qos.hpp>

namespace hcomm::python {
namespace py = pybind11;
namespace {

/// What schedule() sees of a waiting frame.
struct Task {
  uint64_t comm = 0;     ///< the communicator's id (the same on every rank of it)
  int priority = 0;      ///< its QoS class's priority
  size_t bytes = 0;      ///< the frame's payload
  double waited_us = 0;  ///< how long it has waited
  size_t index = 0;      ///< its place in the list as given
};

class PyScheduler final : public Scheduler {
 public:
  explicit PyScheduler(py::object obj) : obj_(std::move(obj)) {}
  ~PyScheduler() override {
    if (!Py_IsInitialized()) {
      obj_.release();  // the interpreter is gone: nothing to decrement
      return;
    }
    py::gil_scoped_acquire gil;
    obj_ = py::object();
  }

  void schedule(std::vector<QosTask>& tasks) override {
    if (tasks.size() < 2 || !Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    try {
      const auto now = std::chrono::steady_clock::now();
      py::list list;
      for (size_t i = 0; i < tasks.size(); ++i)
        list.append(Task{tasks[i].comm, tasks[i].priority, tasks[i].bytes,
                         std::chrono::duration<double, std::micro>(now - tasks[i].queued).count(),
                         i});
      py::object out = obj_.attr("schedule")(list);
      py::list order = out.is_none() ? list : out.cast<py::list>();
      if (order.size() != tasks.size()) return complain("returned a list of another length");
      std::vector<QosTask> sorted;
      std::vector<bool> used(tasks.size(), false);
      for (py::handle h : order) {
        const size_t i = h.cast<Task>().index;
        if (i >= tasks.size() || used[i]) return complain("returned a task twice or a foreign one");
        used[i] = true;
        sorted.push_back(tasks[i]);
      }
      tasks.swap(sorted);
    } catch (py::error_already_set& e) {
      if (!complained_) {
        complained_ = true;
        std::fprintf(stderr, "hcomm: the Python scheduler raised; the default order is used: %s\n",
                     e.what());
      }
    } catch (const py::cast_error&) {
      complain("returned something that is not a list of its tasks");
    }
  }

 private:
  void complain(const char* what) {
    if (complained_) return;
    complained_ = true;
    std::fprintf(stderr, "hcomm: the Python scheduler %s; the default order is used\n", what);
  }
  py::object obj_;
  bool complained_ = false;
};

}  // namespace

void bind_scheduler(py::module_& m) {
  py::class_<Task>(m, "Task")
      .def_readonly("comm", &Task::comm)
      .def_readonly("priority", &Task::priority)
      .def_readonly("bytes", &Task::bytes)
      .def_readonly("waited_us", &Task::waited_us)
      .def_readonly("index", &Task::index)
      .def("__repr__", [](const Task& t) {
        return "Task(comm=" + std::to_string(t.comm) + ", priority=" + std::to_string(t.priority) +
               ", bytes=" + std::to_string(t.bytes) + ")";
      });
  m.def("_set_scheduler", [](py::object obj) {
    if (obj.is_none())
      set_scheduler(nullptr);
    else
      set_scheduler(std::make_shared<PyScheduler>(std::move(obj)));
  });
}

}  // namespace hcomm::python
