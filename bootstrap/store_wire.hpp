// Bootstrap: the store server's decoding of what a client sends (the wire protocol of
// store_server.hpp), apart from its sockets: where the next frame ends in a connection's buffered
// bytes, and what one frame's request says. Pure functions; the serving thread and the fuzzer
// (tests/fuzz/store_wire_fuzz.cpp) call them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/store_server.hpp"

namespace hcomm::bootstrap::store_wire {

/// The next frame in a connection's buffered bytes.
struct FrameCut {
  enum class Kind : uint8_t {
    need_more,        ///< not a whole frame yet
    oversized_hello,  ///< not greeted yet and the frame is longer than any HELLO
    oversized,        ///< longer than kMaxFrameBytes
    frame,            ///< a whole frame: 4 + length bytes, the body after the prefix
  };
  Kind kind = Kind::need_more;
  uint32_t length = 0;  ///< the body's length (but for need_more with under 4 bytes)
};
FrameCut cut_frame(const char* data, size_t avail, bool greeted);

/// One decoded request. Checks what the bytes alone decide (framing, fields, key sizes), not what
/// needs the table or the connection's state.
struct Request {
  enum class Outcome : uint8_t {
    ok,
    empty,         ///< the body has no op byte
    not_hello,     ///< the first request of a connection is not a well-formed HELLO
    unknown,       ///< an op that is not a request (after HELLO, HELLO too)
    malformed,     ///< fields missing, or bytes left after them
    key_too_long,  ///< `key` is longer than kMaxKeyBytes (WAIT: its first such key)
  };
  Outcome outcome = Outcome::ok;
  uint8_t op = 0;
  uint32_t version = 0;           ///< HELLO
  uint32_t timeout_ms = 0;        ///< GET, WAIT
  uint64_t delta = 0;             ///< ADD
  std::string key;                ///< SET, GET, ADD; key_too_long: the key
  std::string value;              ///< SET
  std::vector<std::string> keys;  ///< WAIT: in request order, repeats kept
};
/// Decodes a frame body: a HELLO when `greeted` is false, any other request when it is true.
Request decode_request(const char* body, size_t len, bool greeted);

}  // namespace hcomm::bootstrap::store_wire
