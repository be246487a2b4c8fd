// The C API's communicators, works, configuration and names (include/hcomm/hcomm.h).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "api/c_api_support.hpp"
#include "hcomm/config.hpp"
#include "hcomm/version.h"

using namespace hcomm::api::c;
using hcomm::Communicator;
using hcomm::Compression;
using hcomm::Config;
using hcomm::Status;

namespace {

/// The longest timeouts of a configuration: those its variables accept (core/config_vars.cpp).
constexpr int64_t kMaxConfigTimeoutMs = INT32_MAX;
/// Copies `text` into `out` (NUL-terminated); false when it does not fit.
template <size_t N>
bool copy_text(const std::string& text, char (&out)[N]) {
  if (text.size() >= N) return false;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return true;
}

/// The text of a fixed-size field, refused when it has no NUL within its array.
template <size_t N>
bool field_text(const char (&field)[N], std::string* out) {
  const void* end = std::memchr(field, '\0', N);
  if (end == nullptr) return false;
  *out = std::string(field, static_cast<const char*>(end));
  return true;
}

hcomm_status_t fill(const Config& cfg, hcomm_config_t* c) {
  c->rank = cfg.rank;
  c->world_size = cfg.world_size;
  if (!copy_text(cfg.root_addr, c->root_addr) || !copy_text(cfg.transport, c->transport) ||
      !copy_text(cfg.socket_ifname, c->socket_ifname) || !copy_text(cfg.algo, c->algo))
    return invalid("hcomm_config_init",
                   "a configured string is longer than hcomm_config_t holds (HCOMM_ROOT_ADDR, "
                   "HCOMM_TRANSPORT, HCOMM_SOCKET_IFNAME, HCOMM_ALGO)");
  c->connect_timeout_ms = cfg.connect_timeout.count();
  c->op_timeout_ms = cfg.op_timeout.count();
  c->compression = static_cast<hcomm_compression_t>(cfg.compression);
  c->comp_threshold = cfg.comp_threshold;
  return HCOMM_SUCCESS;
}

static_assert(HCOMM_COMPRESSION_NONE == static_cast<int>(Compression::none) &&
                  HCOMM_COMPRESSION_FP16 == static_cast<int>(Compression::fp16) &&
                  HCOMM_COMPRESSION_BF16 == static_cast<int>(Compression::bf16) &&
                  HCOMM_COMPRESSION_DELTA == static_cast<int>(Compression::delta) &&
                  HCOMM_COMPRESSION_ZSTD == static_cast<int>(Compression::zstd) &&
                  HCOMM_COMPRESSION_AUTO == static_cast<int>(Compression::automatic),
              "hcomm_compression_t mirrors hcomm::Compression");

bool valid_compression(int mode) {
  return mode >= HCOMM_COMPRESSION_NONE && mode <= HCOMM_COMPRESSION_AUTO;
}

/// `c` over the defaults and the environment; false (reported) when a field is malformed.
bool apply(const hcomm_config_t* c, Config* cfg) {
  const char* what = "hcomm_comm_create";
  std::string root, transport, ifname, algo;
  if (!field_text(c->root_addr, &root) || !field_text(c->transport, &transport) ||
      !field_text(c->socket_ifname, &ifname) || !field_text(c->algo, &algo)) {
    invalid(what, "a string field of hcomm_config_t is not NUL-terminated within its array");
    return false;
  }
  if (c->connect_timeout_ms <= 0 || c->op_timeout_ms <= 0 ||
      c->connect_timeout_ms > kMaxConfigTimeoutMs || c->op_timeout_ms > kMaxConfigTimeoutMs) {
    invalid(what,
            "connect_timeout_ms and op_timeout_ms must be in [1, 2147483647] milliseconds, as "
            "HCOMM_CONNECT_TIMEOUT_MS and HCOMM_TIMEOUT_MS (hcomm_config_init fills them)");
    return false;
  }
  if (!valid_compression(raw_enum(c->compression)) || c->comp_threshold > (size_t{1} << 30)) {
    invalid(what,
            "compression must be one of HCOMM_COMPRESSION_* and comp_threshold at most 1G "
            "(hcomm_config_init fills both)");
    return false;
  }
  cfg->compression = static_cast<Compression>(c->compression);
  cfg->comp_threshold = c->comp_threshold;
  cfg->rank = c->rank;
  cfg->world_size = c->world_size;
  cfg->root_addr = root;
  cfg->transport = transport;
  cfg->socket_ifname = ifname;
  cfg->algo = algo;
  cfg->connect_timeout = std::chrono::milliseconds(c->connect_timeout_ms);
  cfg->op_timeout = std::chrono::milliseconds(c->op_timeout_ms);
  return true;
}

hcomm_status_t create(const Config& cfg, hcomm_comm_t* out) {
  auto made = Communicator::create(cfg);
  if (!made.ok()) return report(made.status());
  auto object = std::make_shared<CommObject>();
  object->comm = std::shared_ptr<Communicator>(std::move(made.value()));
  *out = handle_of<hcomm_comm_t>(comms().add(std::move(object)));
  return HCOMM_SUCCESS;
}

std::shared_ptr<WorkObject> work_of(const char* what, hcomm_work_t h) {
  if (h == nullptr) {
    invalid(what, "the work is NULL");
    return nullptr;
  }
  auto object = works().find(number_of(h));
  if (!object)
    invalid(what, "not a work handle (freed already, or never returned by an _async call)");
  return object;
}

}  // namespace

namespace hcomm {

const char* version() {
  return HCOMM_VERSION_STRING;
}

}  // namespace hcomm

extern "C" {

const char* hcomm_version(void) {
  return HCOMM_VERSION_STRING;
}

const char* hcomm_status_string(hcomm_status_t status) {
  // Read as the int the C caller passed (any int may arrive, not only an enumerator).
  const int v = hcomm::api::c::raw_enum(status);
  if (v < HCOMM_SUCCESS || v > HCOMM_ERR_INTERNAL) return "HCOMM_ERR_UNKNOWN";
  return hcomm::status_code_name(static_cast<hcomm_status_t>(v));
}

size_t hcomm_datatype_size(hcomm_datatype_t dtype) {
  const int v = hcomm::api::c::raw_enum(dtype);
  if (v < 0 || v >= hcomm::kNumDataTypes) return 0;
  return hcomm::dtype_size(static_cast<hcomm::DataType>(v));
}

hcomm_status_t hcomm_config_init(hcomm_config_t* config) {
  return guarded("hcomm_config_init", [&] {
    if (config == nullptr) return invalid("hcomm_config_init", "config is NULL");
    auto cfg = Config::from_env();
    if (!cfg.ok()) return report(cfg.status());
    return fill(cfg.value(), config);
  });
}

hcomm_status_t hcomm_comm_create_from_env(hcomm_comm_t* comm) {
  return guarded("hcomm_comm_create_from_env", [&] {
    if (comm == nullptr) return invalid("hcomm_comm_create_from_env", "comm is NULL");
    *comm = nullptr;
    auto cfg = Config::from_env();
    if (!cfg.ok()) return report(cfg.status());
    return create(cfg.value(), comm);
  });
}

hcomm_status_t hcomm_comm_create(const hcomm_config_t* config, hcomm_comm_t* comm) {
  return guarded("hcomm_comm_create", [&] {
    if (config == nullptr || comm == nullptr)
      return invalid("hcomm_comm_create", "config and comm must not be NULL");
    *comm = nullptr;
    auto cfg = Config::from_env();
    if (!cfg.ok()) return report(cfg.status());
    if (!apply(config, &cfg.value())) return HCOMM_ERR_INVALID_ARG;
    return create(cfg.value(), comm);
  });
}

hcomm_status_t hcomm_comm_destroy(hcomm_comm_t comm) {
  return guarded("hcomm_comm_destroy", [&] {
    if (comm == nullptr) return invalid("hcomm_comm_destroy", "the communicator is NULL");
    auto object = comms().remove(number_of(comm));
    if (!object)
      return invalid("hcomm_comm_destroy", "not a communicator handle (destroyed already?)");
    object->comm.reset();  // here, unless another thread's call still holds it
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_comm_rank(hcomm_comm_t comm, int* rank) {
  return guarded("hcomm_comm_rank", [&] {
    if (rank == nullptr) return invalid("hcomm_comm_rank", "rank is NULL");
    auto c = comm_of("hcomm_comm_rank", comm);
    if (!c) return HCOMM_ERR_INVALID_ARG;
    *rank = c->rank();
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_comm_set_compression(hcomm_comm_t comm, hcomm_compression_t mode) {
  const char* what = "hcomm_comm_set_compression";
  return guarded(what, [&] {
    auto c = comm_of(what, comm);
    if (!c) return HCOMM_ERR_INVALID_ARG;
    if (!valid_compression(raw_enum(mode)))
      return invalid(what, "mode " + std::to_string(raw_enum(mode)) +
                               " is none of HCOMM_COMPRESSION_NONE ... HCOMM_COMPRESSION_AUTO");
    c->set_compression(static_cast<Compression>(mode));
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_comm_get_compression(hcomm_comm_t comm, hcomm_compression_t* mode) {
  const char* what = "hcomm_comm_get_compression";
  return guarded(what, [&] {
    if (mode == nullptr) return invalid(what, "mode is NULL");
    auto c = comm_of(what, comm);
    if (!c) return HCOMM_ERR_INVALID_ARG;
    *mode = static_cast<hcomm_compression_t>(c->compression());
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_comm_size(hcomm_comm_t comm, int* size) {
  return guarded("hcomm_comm_size", [&] {
    if (size == nullptr) return invalid("hcomm_comm_size", "size is NULL");
    auto c = comm_of("hcomm_comm_size", comm);
    if (!c) return HCOMM_ERR_INVALID_ARG;
    *size = c->size();
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_comm_abort(hcomm_comm_t comm, const char* reason) {
  return guarded("hcomm_comm_abort", [&] {
    auto c = comm_of("hcomm_comm_abort", comm);
    if (!c) return HCOMM_ERR_INVALID_ARG;
    c->abort(reason != nullptr ? reason : "hcomm_comm_abort");
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_work_wait(hcomm_work_t work, int64_t timeout_ms) {
  return guarded("hcomm_work_wait", [&] {
    auto w = work_of("hcomm_work_wait", work);
    if (!w) return HCOMM_ERR_INVALID_ARG;
    // Work::wait takes a timeout past the clock's range as forever.
    const auto timeout = timeout_ms < 0 ? w->op_timeout : std::chrono::milliseconds(timeout_ms);
    return report(w->work.wait(timeout));
  });
}

hcomm_status_t hcomm_work_test(hcomm_work_t work, int* done) {
  return guarded("hcomm_work_test", [&] {
    if (done == nullptr) return invalid("hcomm_work_test", "done is NULL");
    auto w = work_of("hcomm_work_test", work);
    if (!w) return HCOMM_ERR_INVALID_ARG;
    *done = w->work.test() ? 1 : 0;
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_work_source(hcomm_work_t work, int* source) {
  return guarded("hcomm_work_source", [&] {
    if (source == nullptr) return invalid("hcomm_work_source", "source is NULL");
    auto w = work_of("hcomm_work_source", work);
    if (!w) return HCOMM_ERR_INVALID_ARG;
    *source = w->work.source();
    return HCOMM_SUCCESS;
  });
}

hcomm_status_t hcomm_work_free(hcomm_work_t work) {
  return guarded("hcomm_work_free", [&] {
    if (work == nullptr) return invalid("hcomm_work_free", "the work is NULL");
    if (!works().remove(number_of(work)))
      return invalid("hcomm_work_free", "not a work handle (freed already?)");
    return HCOMM_SUCCESS;
  });
}

}  // extern "C"
