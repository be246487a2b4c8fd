// hcomm as a torch.distributed backend (torch 1.13's c10d::ProcessGroup): the extension
// hcomm._torch, one translation unit because torch's headers are heavy. hcomm/torch.py registers
// it as backend "hcomm".
//
// Each process group owns one hcomm::Communicator, created through the group's c10d store (rank
// 0 publishes the address of hcomm's rendezvous under "hcomm/root"; the store torch hands a new
// group is prefixed, so groups never meet). Every operation starts at once and returns a
// HcommWork that the operation's completion finishes (no thread per operation): its future
// completes with the output tensors (DDP reads them from it), failures carry hcomm's message and
// code. Contiguous CPU tensors are used in place; list forms go through one flat buffer.
//
// The torch-facing part is the thin adapter (ProcessGroupHcomm's overrides); the operations
// themselves are hcomm calls on raw buffers, so torch >= 2's c10d::Backend can reuse them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <pybind11/chrono.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <hcomm/hcomm.hpp>

#include "stats.hpp"

namespace hcomm::torch_backend {
namespace {

using c10d::OpType;

DataType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return DataType::float32;
    case at::kDouble:
      return DataType::float64;
    case at::kHalf:
      return DataType::float16;
    case at::kBFloat16:
      return DataType::bfloat16;
    case at::kChar:
      return DataType::int8;
    case at::kByte:
    case at::kBool:
      return DataType::uint8;
    case at::kInt:
      return DataType::int32;
    case at::kLong:
      return DataType::int64;
    default:
      TORCH_CHECK(false, "hcomm: tensors of ", t.scalar_type(),
                  " are not supported (float32/64, float16, bfloat16, int8/32/64, uint8, bool)");
  }
}

/// The hcomm op for torch's `op` on tensors of `type`. bool tensors are bytes 0/1 to hcomm, so
/// their SUM is a logical or (MAX) and PRODUCT a logical and (MIN), as torch's NCCL backend
/// does: a byte sum could leave a 2 in a bool.
ReduceOp op_of(const c10d::ReduceOp& op, at::ScalarType type) {
  if (type == at::kBool) {
    TORCH_CHECK(op.op_ != c10d::ReduceOp::AVG, "hcomm: AVG of bool tensors has no meaning");
    if (op.op_ == c10d::ReduceOp::SUM) return ReduceOp::max;
    if (op.op_ == c10d::ReduceOp::PRODUCT) return ReduceOp::min;
  }
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return ReduceOp::sum;
    case c10d::ReduceOp::AVG:
      return ReduceOp::avg;
    case c10d::ReduceOp::PRODUCT:
      return ReduceOp::prod;
    case c10d::ReduceOp::MIN:
      return ReduceOp::min;
    case c10d::ReduceOp::MAX:
      return ReduceOp::max;
    case c10d::ReduceOp::BAND:
      return ReduceOp::band;
    case c10d::ReduceOp::BOR:
      return ReduceOp::bor;
    case c10d::ReduceOp::BXOR:
      return ReduceOp::bxor;
    default:
      TORCH_CHECK(false, "hcomm: reduce op ", static_cast<int>(op.op_),
                  " is not supported (SUM, AVG, PRODUCT, MIN, MAX; BAND, BOR, BXOR for integers)");
  }
}

void check_cpu(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_cpu(), "hcomm: CPU tensors only (got one on ", t.device(), ")");
}

std::string text(const Status& st) {
  return "hcomm: " + st.to_string();
}

/// The Work of one hcomm operation; `after` runs on success before the future completes (copies
/// out of a flat buffer). Tensors the operation uses stay referenced until it completed.
class HcommWork final : public c10d::Work {
 public:
  HcommWork(int rank, OpType type, hcomm::Work work, std::vector<at::Tensor> outputs,
            std::vector<at::Tensor> keep, std::function<void()> after,
            std::chrono::milliseconds default_timeout)
      : c10d::Work(rank, type),
        work_(std::move(work)),
        outputs_(std::move(outputs)),
        timeout_(default_timeout),
        future_(c10::make_intrusive<c10::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {
    auto future = future_;
    auto outputs_copy = outputs_;
    work_.on_complete(
        [future, outputs_copy, keep = std::move(keep), after = std::move(after)](const Status& st) {
          if (!st.ok()) {
            future->setError(std::make_exception_ptr(std::runtime_error(text(st))));
            return;
          }
          try {
            if (after) after();
            future->markCompleted(c10::IValue(outputs_copy));
          } catch (...) {
            future->setError(std::current_exception());
          }
        });
  }

  bool isCompleted() override {
    // Moves the operation on for a moment, as MPI_Test does (see PyWork::is_completed).
    if (!work_.test()) (void)work_.wait(std::chrono::milliseconds(0));
    return work_.test();
  }
  bool isSuccess() const override { return work_.test() && work_.status().ok(); }
  std::exception_ptr exception() const override {
    if (!work_.test() || work_.status().ok()) return nullptr;
    return std::make_exception_ptr(std::runtime_error(text(work_.status())));
  }
  std::vector<at::Tensor> result() override { return outputs_; }
  bool wait(std::chrono::milliseconds timeout) override {
    // torch passes kNoTimeout (0 ms) for "no timeout given": the communicator's op timeout then.
    const auto limit = timeout.count() <= 0 ? timeout_ : timeout;
    const Status st = work_.wait(limit);  // torch calls wait() with the GIL released
    if (st.code() == HCOMM_ERR_TIMEOUT && !work_.test())
      TORCH_CHECK(false, "hcomm: the operation did not complete within ", limit.count(),
                  " ms (it goes on)");
    TORCH_CHECK(st.ok(), text(st));
    // The future may be completed by the engine a moment after the work: wait for it too.
    future_->wait();
    return true;
  }
  void synchronize() override {}
  /// A receive from any source: the rank whose message it took (torch reads it after wait()).
  int sourceRank() const override { return work_.source(); }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  hcomm::Work work_;
  std::vector<at::Tensor> outputs_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

/// This host's address on the route towards `peer` (IPv4 text), or 127.0.0.1.
std::string local_address_towards(const std::string& peer) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(9);
  if (peer.empty() || inet_pton(AF_INET, peer.c_str(), &to.sin_addr) != 1) return "127.0.0.1";
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "127.0.0.1";
  std::string out = "127.0.0.1";
  sockaddr_in me{};
  socklen_t len = sizeof me;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0) {
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf) != nullptr) out = buf;
  }
  ::close(fd);
  return out;
}

/// A port nobody listens on now (the kernel's choice).
int free_port(const std::string& ip) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  TORCH_CHECK(fd >= 0, "hcomm: socket(): ", std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  TORCH_CHECK(port > 0, "hcomm: no free port on ", ip);
  return port;
}

}  // namespace

class ProcessGroupHcomm final : public c10d::ProcessGroup {
 public:
  ProcessGroupHcomm(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout)
      : c10d::ProcessGroup(rank, size), timeout_(timeout) {
    std::string root;
    if (rank == 0) {
      const char* master = std::getenv("MASTER_ADDR");
      const std::string ip = local_address_towards(master ? master : "");
      root = ip + ":" + std::to_string(free_port(ip));
      store->set("hcomm/root", std::vector<uint8_t>(root.begin(), root.end()));
    } else {
      const std::vector<uint8_t> v = store->get("hcomm/root");
      root.assign(v.begin(), v.end());
    }
    auto cfg = Config::from_env();
    TORCH_CHECK(cfg.ok(), text(cfg.status()));
    cfg->rank = rank;
    cfg->world_size = size;
    cfg->root_addr = root;
    if (timeout.count() > 0) cfg->op_timeout = timeout;
    Expected<std::unique_ptr<Communicator>> made = Status();
    {
      pybind11::gil_scoped_release unlocked;
      made = Communicator::create(*cfg);
    }
    TORCH_CHECK(made.ok(), text(made.status()));
    comm_ = std::move(*made);
    init();
  }

  ~ProcessGroupHcomm() override {
    // Destruction waits for hcomm's engine; let Python run meanwhile if this thread holds it.
    if (Py_IsInitialized() && PyGILState_Check()) {
      pybind11::gil_scoped_release unlocked;
      comm_.reset();
    } else {
      comm_.reset();
    }
  }

  const std::string getBackendName() const override { return "hcomm"; }
  /// The hcomm process group behind `pg`; a TypeError-like RuntimeError for another backend's.
  static ProcessGroupHcomm& of(const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto* mine = dynamic_cast<ProcessGroupHcomm*>(pg.get());
    TORCH_CHECK(mine != nullptr,
                "hcomm: not an hcomm process group (init_process_group(\"hcomm\"))");
    return *mine;
  }
  Communicator& comm() { return *comm_; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    TORCH_CHECK(tensors.size() == 1, "hcomm: one tensor per allreduce (got ", tensors.size(), ")");
    return reduce_in_place(OpType::ALLREDUCE, tensors[0],
                           op_of(opts.reduceOp, tensors[0].scalar_type()), -1);
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    TORCH_CHECK(!tensors.empty(), "hcomm: allreduce_coalesced of no tensor");
    at::Tensor flat = at::cat(flatten_each(tensors));
    std::vector<at::Tensor> outs = tensors;
    auto after = [flat, outs]() mutable {
      int64_t at = 0;
      for (auto& t : outs) {
        t.view(-1).copy_(flat.narrow(0, at, t.numel()));
        at += t.numel();
      }
    };
    hcomm::Work w =
        comm().allreduce_async(flat.data_ptr(), flat.data_ptr(), static_cast<size_t>(flat.numel()),
                               dtype_of(flat), op_of(opts.reduceOp, flat.scalar_type()));
    return make_work(OpType::ALLREDUCE_COALESCED, std::move(w), tensors, {flat}, after);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    TORCH_CHECK(tensors.size() == 1, "hcomm: one tensor per broadcast");
    at::Tensor t = tensors[0];
    check_cpu(t);
    at::Tensor buf = t.is_contiguous() ? t : t.contiguous();
    hcomm::Work w = comm().broadcast_async(buf.data_ptr(), static_cast<size_t>(buf.numel()),
                                           dtype_of(buf), static_cast<int>(opts.rootRank));
    return make_work(OpType::BROADCAST, std::move(w), tensors, {buf}, copy_back(t, buf));
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override {
    TORCH_CHECK(tensors.size() == 1, "hcomm: one tensor per reduce");
    return reduce_in_place(OpType::REDUCE, tensors[0],
                           op_of(opts.reduceOp, tensors[0].scalar_type()),
                           static_cast<int>(opts.rootRank));
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions&) override {
    TORCH_CHECK(inputs.size() == 1 && outputs.size() == 1 &&
                    outputs[0].size() == static_cast<size_t>(getSize()),
                "hcomm: allgather of one tensor into a list of world-size tensors");
    at::Tensor in = inputs[0].contiguous();
    check_cpu(in);
    at::Tensor flat = at::empty({getSize() * in.numel()}, in.options());
    std::vector<at::Tensor> outs = outputs[0];
    const int64_t n = in.numel();
    auto after = [flat, outs, n]() mutable {
      for (size_t r = 0; r < outs.size(); ++r)
        outs[r].view(-1).copy_(flat.narrow(0, static_cast<int64_t>(r) * n, n));
    };
    hcomm::Work w = comm().allgather_async(in.data_ptr(), flat.data_ptr(), static_cast<size_t>(n),
                                           dtype_of(in));
    return make_work(OpType::ALLGATHER, std::move(w), outputs[0], {in, flat}, after);
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions&) override {
    check_cpu(input);
    TORCH_CHECK(output.numel() == input.numel() * getSize(),
                "hcomm: all_gather_into_tensor: the output needs world_size x the input's "
                "elements (",
                input.numel() * getSize(), "), got ", output.numel());
    at::Tensor in = input.contiguous();
    at::Tensor out = output.is_contiguous() ? output : output.contiguous();
    hcomm::Work w = comm().allgather_async(in.data_ptr(), out.data_ptr(),
                                           static_cast<size_t>(in.numel()), dtype_of(in));
    return make_work(OpType::_ALLGATHER_BASE, std::move(w), {output}, {in, out},
                     copy_back(output, out));
  }

  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions&) override {
    TORCH_CHECK(!inputs.empty() && outputs.size() == static_cast<size_t>(getSize()),
                "hcomm: allgather_coalesced of a list of tensors into world-size lists");
    for (const auto& list : outputs)
      TORCH_CHECK(list.size() == inputs.size(),
                  "hcomm: allgather_coalesced: every output list has one tensor per input");
    at::Tensor in = at::cat(flatten_each(inputs));  // rank r's inputs, back to back
    const int64_t n = in.numel();
    at::Tensor flat = at::empty({getSize() * n}, in.options());
    std::vector<std::vector<at::Tensor>> outs = outputs;
    auto after = [flat, outs, n]() mutable {
      for (size_t r = 0; r < outs.size(); ++r) {
        int64_t at = static_cast<int64_t>(r) * n;
        for (auto& t : outs[r]) {
          t.view(-1).copy_(flat.narrow(0, at, t.numel()));
          at += t.numel();
        }
      }
    };
    std::vector<at::Tensor> all;
    for (const auto& list : outputs) all.insert(all.end(), list.begin(), list.end());
    hcomm::Work w = comm().allgather_async(in.data_ptr(), flat.data_ptr(), static_cast<size_t>(n),
                                           dtype_of(in));
    return make_work(OpType::ALLGATHER_COALESCED, std::move(w), all, {in, flat}, after);
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override {
    TORCH_CHECK(inputs.size() == 1, "hcomm: one tensor per gather");
    const int root = static_cast<int>(opts.rootRank);
    at::Tensor in = inputs[0].contiguous();
    check_cpu(in);
    const int64_t n = in.numel();
    at::Tensor flat;
    std::function<void()> after;
    std::vector<at::Tensor> outs;
    if (getRank() == root) {
      TORCH_CHECK(outputs.size() == 1 && outputs[0].size() == static_cast<size_t>(getSize()),
                  "hcomm: gather: the root passes a list of world-size tensors");
      flat = at::empty({getSize() * n}, in.options());
      outs = outputs[0];
      after = [flat, outs, n]() mutable {
        for (size_t r = 0; r < outs.size(); ++r)
          outs[r].view(-1).copy_(flat.narrow(0, static_cast<int64_t>(r) * n, n));
      };
    }
    hcomm::Work w = comm().gather_async(in.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr,
                                        static_cast<size_t>(n), dtype_of(in), root);
    return make_work(OpType::GATHER, std::move(w), outs, {in, flat}, after);
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == 1, "hcomm: one tensor per scatter");
    const int root = static_cast<int>(opts.rootRank);
    at::Tensor out = outputs[0];
    check_cpu(out);
    at::Tensor buf = out.is_contiguous() ? out : out.contiguous();
    at::Tensor flat;
    if (getRank() == root) {
      TORCH_CHECK(inputs.size() == 1 && inputs[0].size() == static_cast<size_t>(getSize()),
                  "hcomm: scatter: the root passes a list of world-size tensors");
      flat = at::cat(flatten_each(inputs[0]));
    }
    hcomm::Work w = comm().scatter_async(flat.defined() ? flat.data_ptr() : nullptr, buf.data_ptr(),
                                         static_cast<size_t>(buf.numel()), dtype_of(buf), root);
    return make_work(OpType::SCATTER, std::move(w), outputs, {buf, flat}, copy_back(out, buf));
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1 &&
                    inputs[0].size() == static_cast<size_t>(getSize()),
                "hcomm: reduce_scatter of a list of world-size tensors into one");
    at::Tensor flat = at::cat(flatten_each(inputs[0]));
    return reduce_scatter_flat(outputs[0], flat, opts, OpType::REDUCE_SCATTER);
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(input.numel() == output.numel() * getSize(),
                "hcomm: reduce_scatter_tensor: the input needs world_size x the output's elements");
    return reduce_scatter_flat(output, input.contiguous(), opts, OpType::_REDUCE_SCATTER_BASE);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions&) override {
    check_cpu(input);
    at::Tensor in = input.contiguous();
    at::Tensor out = output.is_contiguous() ? output : output.contiguous();
    const int64_t rows = in.dim() > 0 ? in.size(0) : 1;
    const int64_t row = rows > 0 ? in.numel() / rows : 0;  // elements per first-dimension row
    hcomm::Work w;
    if (output_splits.empty() && input_splits.empty()) {
      TORCH_CHECK(in.numel() % getSize() == 0 && out.numel() == in.numel(),
                  "hcomm: alltoall_base: equal splits need sizes divisible by the world size");
      w = comm().alltoall_async(in.data_ptr(), out.data_ptr(),
                                static_cast<size_t>(in.numel() / getSize()), dtype_of(in));
    } else {
      std::vector<size_t> sc, sd, rc, rd;
      splits(input_splits, in, row, sc, sd);
      splits(output_splits, out, row, rc, rd);
      w = comm().alltoallv_async(in.data_ptr(), sc, sd, out.data_ptr(), rc, rd, dtype_of(in));
    }
    return make_work(OpType::ALLTOALL_BASE, std::move(w), {output}, {in, out},
                     copy_back(output, out));
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions&) override {
    TORCH_CHECK(inputs.size() == static_cast<size_t>(getSize()) && outputs.size() == inputs.size(),
                "hcomm: alltoall of world-size lists");
    at::Tensor in = at::cat(flatten_each(inputs));
    std::vector<size_t> sc, sd, rc, rd;
    size_t at = 0;
    for (auto& t : inputs) {
      sc.push_back(static_cast<size_t>(t.numel()));
      sd.push_back(at);
      at += static_cast<size_t>(t.numel());
    }
    at = 0;
    for (auto& t : outputs) {
      rc.push_back(static_cast<size_t>(t.numel()));
      rd.push_back(at);
      at += static_cast<size_t>(t.numel());
    }
    at::Tensor flat = at::empty({static_cast<int64_t>(at)}, in.options());
    std::vector<at::Tensor> outs = outputs;
    auto after = [flat, outs, rd]() mutable {
      for (size_t r = 0; r < outs.size(); ++r)
        outs[r].view(-1).copy_(flat.narrow(0, static_cast<int64_t>(rd[r]), outs[r].numel()));
    };
    hcomm::Work w =
        comm().alltoallv_async(in.data_ptr(), sc, sd, flat.data_ptr(), rc, rd, dtype_of(in));
    return make_work(OpType::ALLTOALL, std::move(w), outputs, {in, flat}, after);
  }

  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override {
    TORCH_CHECK(tensors.size() == 1, "hcomm: one tensor per send");
    at::Tensor t = tensors[0].contiguous();
    check_cpu(t);
    hcomm::Work w =
        comm().send_async(t.data_ptr(), static_cast<size_t>(t.numel()), dtype_of(t), dst, tag);
    return make_work(OpType::SEND, std::move(w), tensors, {t}, {});
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override {
    TORCH_CHECK(tensors.size() == 1, "hcomm: one tensor per recv");
    at::Tensor t = tensors[0];
    check_cpu(t);
    at::Tensor buf = t.is_contiguous() ? t : t.contiguous();
    hcomm::Work w = comm().recv_async(buf.data_ptr(), static_cast<size_t>(buf.numel()),
                                      dtype_of(buf), src, tag);
    return make_work(OpType::RECV, std::move(w), tensors, {buf}, copy_back(t, buf));
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override {
    return recv(tensors, Communicator::kAnySource, tag);  // Work::sourceRank() says whose
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return make_work(OpType::BARRIER, comm().barrier_async(), {}, {}, {});
  }

 private:
  c10::intrusive_ptr<c10d::Work> make_work(OpType type, hcomm::Work w,
                                           std::vector<at::Tensor> outputs,
                                           std::vector<at::Tensor> keep,
                                           std::function<void()> after) {
    return c10::make_intrusive<HcommWork>(getRank(), type, std::move(w), std::move(outputs),
                                          std::move(keep), std::move(after),
                                          comm_->config().op_timeout);
  }

  c10::intrusive_ptr<c10d::Work> reduce_in_place(OpType type, at::Tensor t, ReduceOp op, int root) {
    check_cpu(t);
    at::Tensor buf = t.is_contiguous() ? t : t.contiguous();
    const size_t n = static_cast<size_t>(buf.numel());
    hcomm::Work w =
        root < 0 ? comm().allreduce_async(buf.data_ptr(), buf.data_ptr(), n, dtype_of(buf), op)
                 : comm().reduce_async(buf.data_ptr(), buf.data_ptr(), n, dtype_of(buf), op, root);
    return make_work(type, std::move(w), {t}, {buf}, copy_back(t, buf));
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_flat(at::Tensor output, at::Tensor flat,
                                                     const c10d::ReduceScatterOptions& opts,
                                                     OpType type) {
    check_cpu(output);
    at::Tensor out = output.is_contiguous() ? output : output.contiguous();
    hcomm::Work w = comm().reduce_scatter_async(flat.data_ptr(), out.data_ptr(),
                                                static_cast<size_t>(out.numel()), dtype_of(out),
                                                op_of(opts.reduceOp, out.scalar_type()));
    return make_work(type, std::move(w), {output}, {flat, out}, copy_back(output, out));
  }

  /// Copies `buf` into `t` after the operation when `buf` is a contiguous stand-in for it.
  static std::function<void()> copy_back(at::Tensor t, at::Tensor buf) {
    if (t.is_same(buf)) return {};
    return [t, buf]() mutable { t.copy_(buf); };
  }

  static std::vector<at::Tensor> flatten_each(const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> flat;
    for (const auto& t : ts) {
      check_cpu(t);
      flat.push_back(t.contiguous().view(-1));
    }
    return flat;
  }

  /// alltoall_base split sizes (rows of the first dimension) as element counts and offsets.
  void splits(const std::vector<int64_t>& rows, const at::Tensor& t, int64_t row,
              std::vector<size_t>& counts, std::vector<size_t>& displs) const {
    const int n = getSize();
    size_t at = 0;
    for (int r = 0; r < n; ++r) {
      const int64_t k = rows.empty() ? t.size(0) / n : rows[static_cast<size_t>(r)];
      counts.push_back(static_cast<size_t>(k * row));
      displs.push_back(at);
      at += static_cast<size_t>(k * row);
    }
    TORCH_CHECK(rows.empty() || rows.size() == static_cast<size_t>(n),
                "hcomm: alltoall_base: one split size per rank");
  }

  std::unique_ptr<Communicator> comm_;
  std::chrono::milliseconds timeout_;
};

}  // namespace hcomm::torch_backend

PYBIND11_MODULE(_torch, m) {
  using hcomm::torch_backend::ProcessGroupHcomm;
  pybind11::module_::import("torch.distributed");
  m.doc() = "hcomm's torch.distributed backend; import hcomm.torch to register it";
  m.def("create",
        [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
           std::chrono::duration<float> timeout) -> c10::intrusive_ptr<c10d::ProcessGroup> {
          return c10::make_intrusive<ProcessGroupHcomm>(
              store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
        });
  m.def("failover_stats", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    return hcomm::python::failover_stats_dict(ProcessGroupHcomm::of(pg).comm().failover_stats());
  });
  m.def("set_qos", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int min_rate, int max_rate,
                      int priority) {
    const hcomm::Status st =
        ProcessGroupHcomm::of(pg).comm().set_qos(hcomm::QosClass{min_rate, max_rate, priority});
    TORCH_CHECK(st.ok(), "hcomm: ", st.to_string());
  });
  m.def("set_compression", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int mode) {
    ProcessGroupHcomm::of(pg).comm().set_compression(static_cast<hcomm::Compression>(mode));
  });
}
