// How long a completed operation takes to reach the application: from the moment the data plane
// completes it (Work::completed_at()) to its Work::on_complete callback, or to the reply message
// at the actor that requested it through the communicator actor (hcomm/actor.hpp). One round:
// ITERS 8-byte allreduces one after the other, each latency sampled; prints the median and p90
// of the round. bench/actor_latency.sh runs alternated rounds and takes the medians.
//
// Usage (under hcomm-run, every rank alike):
//   actor_latency --mode callback|actor|wake [--policy stealing|sharing|polling] [--iters N]
#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <hcomm/actor.hpp>
#include <hcomm/hcomm.hpp>

using Clock = std::chrono::steady_clock;
namespace ha = hcomm::actor;

namespace {

constexpr int kWarmup = 200;

double ns_since(Clock::time_point t) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t).count();
}

/// The application's callback on the completing thread; the caller sleeps meanwhile.
std::vector<double> callback_latencies(hcomm::Communicator& comm, int iters) {
  std::vector<double> out;
  double in = 1, res = 0;
  for (int k = 0; k < kWarmup + iters; ++k) {
    auto done = std::make_shared<std::promise<double>>();
    auto got = done->get_future();
    hcomm::Work w =
        comm.allreduce_async(&in, &res, 1, hcomm::DataType::float64, hcomm::ReduceOp::sum);
    w.on_complete([w, done](const hcomm::Status&) { done->set_value(ns_since(w.completed_at())); });
    if (got.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      std::fprintf(stderr, "actor_latency: an allreduce did not complete in 30 s\n");
      std::exit(1);
    }
    if (k >= kWarmup) out.push_back(got.get());
  }
  return out;
}

struct DriverState {
  std::vector<double> samples;
  double in = 1, res = 0;
};

void next(caf::stateful_actor<DriverState>* self, const ha::communicator_actor& comm, int left,
          std::shared_ptr<std::promise<std::vector<double>>> done) {
  auto& st = self->state;
  self->request(
          comm, caf::duration{std::chrono::seconds(30)},
          ha::allreduce_request{&st.in, &st.res, 1, hcomm::DataType::float64, hcomm::ReduceOp::sum})
      .then(
          [=](const ha::op_done& d) {
            const double ns = ns_since(d.completed_at);
            self->state.samples.push_back(ns);
            if (left > 1) return next(self, comm, left - 1, done);
            done->set_value(std::move(self->state.samples));
          },
          [=](const caf::error& e) {
            std::fprintf(stderr, "actor_latency: %s\n", ha::status_of(e).to_string().c_str());
            std::exit(1);
          });
}

/// The reply at an actor of the application's actor system.
std::vector<double> reply_latencies(caf::actor_system& sys, const ha::communicator_actor& comm,
                                    int iters) {
  auto done = std::make_shared<std::promise<std::vector<double>>>();
  auto got = done->get_future();
  sys.spawn([=](caf::stateful_actor<DriverState>* self) -> caf::behavior {
    next(self, comm, kWarmup + iters, done);
    return {[](caf::ok_atom) {}};
  });
  if (got.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    std::fprintf(stderr, "actor_latency: the replies did not arrive in 120 s\n");
    std::exit(1);
  }
  auto all = got.get();
  return {all.begin() + kWarmup, all.end()};
}

/// For scale: one thread wakes another that sleeps on a condition variable (what any hand-off
/// to a sleeping thread costs here), stamped before the notify, read after the wake-up.
std::vector<double> wake_latencies(int iters) {
  std::mutex m;
  std::condition_variable cv;
  Clock::time_point stamp;
  bool posted = false, stop = false;
  std::vector<double> out;
  std::thread sleeper([&] {
    std::unique_lock<std::mutex> lock(m);
    for (;;) {
      cv.wait(lock, [&] { return posted || stop; });
      if (stop) return;
      out.push_back(ns_since(stamp));
      posted = false;
    }
  });
  for (int k = 0; k < kWarmup + iters; ++k) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // the sleeper is asleep
    {
      std::lock_guard<std::mutex> lock(m);
      stamp = Clock::now();
      posted = true;
    }
    cv.notify_one();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::lock_guard<std::mutex> lock(m);
    stop = true;
  }
  cv.notify_one();
  sleeper.join();
  return {out.begin() + std::min<size_t>(kWarmup, out.size()), out.end()};
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode, policy = "stealing";
  int iters = 2000;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string arg = argv[a];
    if (arg == "--mode")
      mode = argv[a + 1];
    else if (arg == "--policy")
      policy = argv[a + 1];
    else if (arg == "--iters")
      iters = std::atoi(argv[a + 1]);
  }
  if ((mode != "callback" && mode != "actor" && mode != "wake") ||
      (policy != "stealing" && policy != "sharing" && policy != "polling") || iters < 1) {
    std::fprintf(
        stderr,
        "usage: %s --mode callback|actor|wake [--policy stealing|sharing|polling] [--iters N]\n",
        argv[0]);
    return 2;
  }
  auto cfg = hcomm::Config::from_env();
  if (!cfg) {
    std::fprintf(stderr, "actor_latency: %s\n", cfg.status().to_string().c_str());
    return 1;
  }
  std::vector<double> samples;
  if (mode == "wake") {
    samples = wake_latencies(iters);
  } else if (mode == "callback") {
    auto comm = hcomm::Communicator::create(cfg.value());
    if (!comm) {
      std::fprintf(stderr, "actor_latency: %s\n", comm.status().to_string().c_str());
      return 1;
    }
    samples = callback_latencies(**comm, iters);
  } else {
    caf::actor_system_config sys_cfg;
    sys_cfg.set("scheduler.max-threads", 1);
    sys_cfg.set("scheduler.policy",
                policy == "sharing" ? caf::atom("sharing") : caf::atom("stealing"));
    // "polling": idle workers poll their queues for ~10^6 attempts before they sleep (CAF's
    // default sleeps after 100 attempts), trading a busy core for no wake-up.
    if (policy == "polling") sys_cfg.set("work-stealing.aggressive-poll-attempts", 1000000);
    caf::actor_system sys{sys_cfg};
    auto comm = ha::spawn_communicator(sys, cfg.value());
    if (!comm) {
      std::fprintf(stderr, "actor_latency: %s\n", comm.status().to_string().c_str());
      return 1;
    }
    samples = reply_latencies(sys, *comm, iters);
    caf::anon_send(*comm, ha::close_atom::value);
  }
  const std::string label = mode == "actor"  ? "reply (" + policy + ")"
                            : mode == "wake" ? "thread wake-up (condition variable)"
                                             : "callback";
  if (cfg.value().rank == 0)
    std::printf("%s: median %.0f ns, p90 %.0f ns (%zu samples)\n", label.c_str(),
                quantile(samples, 0.5), quantile(samples, 0.9), samples.size());
  return 0;
}
