// The rendezvous store's wire protocol as its server decodes it: the input is the byte stream a
// client sends (bootstrap/store_wire.hpp cuts it into frames and decodes each request), and the
// decoded requests drive a StoreTable as the server's would. The first byte picks the table's
// size limit, so that the full-table paths are reached too.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bootstrap/store_table.hpp"
#include "bootstrap/store_wire.hpp"

using namespace hcomm::bootstrap;
using namespace hcomm::bootstrap::store_wire;

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  StoreLimits limits;
  limits.max_bytes = size_t{data[0]} * 16;
  StoreTable table(limits);
  const char* in = reinterpret_cast<const char*>(data + 1);
  size_t avail = size - 1;
  bool greeted = false;
  while (true) {
    const FrameCut cut = cut_frame(in, avail, greeted);
    if (cut.kind != FrameCut::Kind::frame) break;
    check(4 + size_t{cut.length} <= avail);
    Request req = decode_request(in + 4, cut.length, greeted);
    in += 4 + size_t{cut.length};
    avail -= 4 + size_t{cut.length};
    if (req.outcome == Request::Outcome::key_too_long) {
      check(req.key.size() > kMaxKeyBytes);
      continue;
    }
    if (req.outcome != Request::Outcome::ok) break;  // the server closes the connection
    if (!greeted) {
      if (req.version != kVersion) break;
      greeted = true;
      continue;
    }
    check(req.key.size() <= kMaxKeyBytes);
    switch (req.op) {
      case kSet: {
        const std::string value = req.value;
        if (table.set(req.key, std::move(req.value)).ok()) {
          const std::string* stored = table.find(req.key);
          check(stored != nullptr && *stored == value);
        }
        break;
      }
      case kGet:
        check((table.find(req.key) != nullptr) == table.contains(req.key));
        break;
      case kAdd: {
        auto next = table.add(req.key, static_cast<int64_t>(req.delta));
        if (next.ok()) check(*table.find(req.key) == std::to_string(next.value()));
        break;
      }
      case kWait:
        for (const auto& k : req.keys) {
          check(k.size() <= kMaxKeyBytes);
          (void)table.contains(k);
        }
        break;
      case kTime:
        break;
      default:
        check(false);  // decode_request passes on requests only
    }
    check(table.bytes() <= limits.max_bytes);
  }
  return 0;
}
