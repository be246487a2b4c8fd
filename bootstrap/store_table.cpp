#include "bootstrap/store_table.hpp"

#include <cerrno>
#include <cstdlib>

#include "bootstrap/store_server.hpp"
#include "core/parse.hpp"

namespace hcomm::bootstrap {
namespace {

bool parse_counter(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  size_t i = (s[0] == '-') ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t j = i; j < s.size(); ++j) {
    if (s[j] < '0' || s[j] > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

}  // namespace

Status StoreTable::set(const std::string& key, std::string value) {
  auto it = data_.find(key);
  const size_t old = it == data_.end() ? 0 : cost(key, it->second);
  const size_t next = cost(key, value);
  if (bytes_ - old + next > limits_.max_bytes)
    return Status{HCOMM_ERR_OUT_OF_MEM,
                  "the rendezvous store is full: it holds " + core::format_bytes(bytes_) + " in " +
                      std::to_string(data_.size()) + " keys, and this value of " +
                      core::format_bytes(value.size()) + " would pass HCOMM_STORE_MAX_BYTES=" +
                      core::format_bytes(limits_.max_bytes) + " (raise it on rank 0)"};
  bytes_ = bytes_ - old + next;
  if (it == data_.end()) {
    data_.emplace(key, std::move(value));
  } else {
    it->second = std::move(value);
  }
  return {};
}

Expected<int64_t> StoreTable::add(const std::string& key, int64_t delta) {
  int64_t current = 0;
  auto it = data_.find(key);
  if (it != data_.end() && !parse_counter(it->second, &current))
    return Status{HCOMM_ERR_INVALID_ARG, "key '" + store_wire::printable_key(key) +
                                             "' holds a value that is not a counter; ADD needs "
                                             "a decimal integer"};
  int64_t next = 0;
  if (__builtin_add_overflow(current, delta, &next))
    return Status{HCOMM_ERR_INVALID_ARG,
                  "counter '" + store_wire::printable_key(key) + "' would overflow"};
  Status st = set(key, std::to_string(next));
  if (!st.ok()) return st;
  return next;
}

const std::string* StoreTable::find(const std::string& key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

}  // namespace hcomm::bootstrap
