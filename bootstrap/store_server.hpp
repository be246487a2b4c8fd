// Bootstrap: the rendezvous key-value store that rank 0 hosts (like torch's TCPStore).
//
// Wire protocol (version 1). Every message is a frame: u32 body length, then the body. Integers are
// big-endian; a "str" is a u32 length then that many bytes (binary-safe). A client sends one
// request and reads its reply before it sends the next.
//   request  = op:u8, then per op:
//     HELLO(0)  magic:u32 ("HCST") version:u32    must be the first request of a connection
//     SET(1)    key:str value:str
//     GET(2)    timeout_ms:u32 key:str             parked by the server until the key is set
//     ADD(3)    key:str delta:i64                  the value is a decimal counter, 0 when absent
//     WAIT(4)   timeout_ms:u32 count:u32 key:str*count   parked until every key is set
//     TIME(5)   nothing                            the server's steady clock (clock alignment)
//   reply    = status:u8, then per status:
//     OK(0)       HELLO: version:u32 | SET, WAIT: nothing | GET: value:str | ADD: new value:i64
//                 | TIME: steady clock ns:u64
//     TIMEOUT(1)  GET: nothing | WAIT: count:u32 key:str*count (the keys still absent)
//     ERROR(2)    message:str (the request was refused; the connection stays usable)
// Keys hold at most kMaxKeyBytes, values at most kMaxValueBytes, all of them together at most
// StoreLimits::max_bytes (a SET or ADD past it is refused with ERROR). A frame over
// kMaxFrameBytes, a malformed request, or a HELLO (and, when the store has a job key, the
// authentication of core/auth_handshake.hpp before it) not done within the greeting timeout make
// the server close the connection. Keys are never deleted.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "bootstrap/store_table.hpp"
#include "core/job_key.hpp"
#include "hcomm/status.hpp"

namespace hcomm::bootstrap {

namespace store_wire {

constexpr uint32_t kMagic = 0x48435354;  // "HCST"
constexpr uint32_t kVersion = 1;
constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxValueBytes = size_t{16} << 20;
constexpr size_t kMaxHelloBytes = 64;  ///< the longest frame accepted before HELLO
constexpr size_t kMaxFrameBytes = kMaxValueBytes + (size_t{64} << 10);

enum Op : uint8_t { kHello = 0, kSet = 1, kGet = 2, kAdd = 3, kWait = 4, kTime = 5 };
enum Reply : uint8_t { kOk = 0, kTimeout = 1, kError = 2 };

/// Builds one frame: put the fields, then take() the bytes with the length prefix filled in.
class FrameWriter {
 public:
  FrameWriter() : buf_(4, '\0') {}
  FrameWriter& u8(uint8_t v) {
    buf_.push_back(static_cast<char>(v));
    return *this;
  }
  FrameWriter& u32(uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) buf_.push_back(static_cast<char>((v >> s) & 0xff));
    return *this;
  }
  FrameWriter& u64(uint64_t v) {
    for (int s = 56; s >= 0; s -= 8) buf_.push_back(static_cast<char>((v >> s) & 0xff));
    return *this;
  }
  FrameWriter& str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    buf_.append(s);
    return *this;
  }
  /// Body size so far (without the prefix).
  size_t body_size() const { return buf_.size() - 4; }
  std::string take() {
    uint32_t n = static_cast<uint32_t>(body_size());
    for (int i = 0; i < 4; ++i) buf_[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
    return std::move(buf_);
  }

 private:
  std::string buf_;
};

/// Reads the fields of one frame body; every getter returns false (and reads nothing) when the
/// body is too short.
class FrameReader {
 public:
  FrameReader(const char* data, size_t size) : p_(data), end_(data + size) {}
  bool u8(uint8_t* v) {
    if (left() < 1) return false;
    *v = static_cast<uint8_t>(*p_++);
    return true;
  }
  bool u32(uint32_t* v) {
    if (left() < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i) *v = (*v << 8) | static_cast<uint8_t>(*p_++);
    return true;
  }
  bool u64(uint64_t* v) {
    if (left() < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) *v = (*v << 8) | static_cast<uint8_t>(*p_++);
    return true;
  }
  bool str(std::string* s) {
    uint32_t n = 0;
    if (left() < 4) return false;
    const char* save = p_;
    u32(&n);
    if (left() < n) {
      p_ = save;
      return false;
    }
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

/// A key as it appears in messages: at most 64 bytes, non-printable bytes as '?'.
inline std::string printable_key(const std::string& key) {
  std::string s = key.substr(0, 64);
  for (auto& c : s) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return key.size() > 64 ? s + "..." : s;
}

/// Decodes a big-endian u32 (the frame length prefix).
inline uint32_t load_u32(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

}  // namespace store_wire

struct StoreServerOptions {
  /// The job's key: every client must prove it holds it before its HELLO. Null: no proof asked.
  std::shared_ptr<const core::JobKey> key;
  StoreLimits limits;
  /// From accept to a done HELLO (authentication included); a slower connection is closed.
  std::chrono::milliseconds greeting_timeout{5000};
  /// Connections greeting at once; one more is closed at accept (and logged once per address).
  size_t max_greeting = 256;

  /// The job's key (core::JobKey::from_environment()) and HCOMM_STORE_MAX_BYTES; an error
  /// names the variable that is wrong.
  static Expected<StoreServerOptions> from_environment();
};

/// The store server: one background thread (epoll, non-blocking sockets) serving any number of
/// clients. GET and WAIT requests whose keys are absent are parked, not polled: SET and ADD wake
/// them, and the server answers TIMEOUT itself when their deadline passes.
/// Thread safety: start() and the destructor from one thread; port() from any.
class StoreServer {
 public:
  /// Listens on bind_host:port ("" or "0.0.0.0" = every interface; port 0 = an ephemeral one,
  /// see port()) with SO_REUSEADDR, and starts the serving thread. Fails with
  /// HCOMM_ERR_TRANSPORT naming the address when it is in use (pick another port), and with
  /// HCOMM_ERR_INVALID_ARG when bind_host is not an address of this host.
  static Expected<std::unique_ptr<StoreServer>> start(const std::string& bind_host, uint16_t port,
                                                      StoreServerOptions options = {});

  /// Stops the thread and closes every socket; parked clients see the connection close and fail
  /// with HCOMM_ERR_TRANSPORT. Does not wait for clients.
  ~StoreServer();

  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  /// The port it listens on (the chosen one when start() was given 0).
  uint16_t port() const;
  /// How many client connections are open now (as of the serving thread's last pass). Any
  /// thread.
  size_t clients() const;

 private:
  struct Impl;
  explicit StoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hcomm::bootstrap
