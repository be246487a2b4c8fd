// core/auth_handshake: either side of the handshake, with the peer's messages made by the input.
// First byte: bit 0 the role of the side under test; bit 1 whether the peer is an honest
// handshake whose messages the rest of the input corrupts (XOR), bit 2 whether that peer holds
// a different key. Otherwise the rest of the input is the peer's bytes, fed in chunks whose sizes
// it also picks. The side under test must refuse without crashing, read no more than it wants,
// and never be done unless the peer holds the key and its bytes arrived unchanged.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "core/auth_handshake.hpp"
#include "tests/fuzz/fuzz_keys.hpp"

using hcomm::core::AuthHandshake;
using hcomm::core::JobKey;
using hcomm::fuzz::check;
using hcomm::fuzz::key;

namespace {

struct Input {
  const uint8_t* p;
  size_t left;
  uint8_t next() {
    if (left == 0) return 0;
    --left;
    return *p++;
  }
};

void feed_checked(AuthHandshake& side, const uint8_t* data, size_t size) {
  check(size <= side.wanted());
  side.feed(data, size);
  check(!(side.done() && side.failed()));
}

void raw_peer(AuthHandshake& side, Input in) {
  while (in.left > 0 && side.wanted() > 0) {
    size_t chunk = size_t{in.next()} % 48 + 1;
    chunk = std::min({chunk, in.left, side.wanted()});
    feed_checked(side, in.p, chunk);
    in.p += chunk;
    in.left -= chunk;
  }
  check(!side.done());  // no peer without the key gets through
}

void relayed_peer(AuthHandshake& side, AuthHandshake& peer, bool same_key, Input in) {
  bool corrupted = false;
  std::string to_peer, to_side;  // sent, not read yet
  for (int round = 0; round < 8 && !side.failed() && !peer.failed(); ++round) {
    to_peer += side.output();
    side.output().clear();
    size_t n = std::min(to_peer.size(), peer.wanted());
    if (n > 0) feed_checked(peer, reinterpret_cast<const uint8_t*>(to_peer.data()), n);
    to_peer.erase(0, n);
    to_side += peer.output();
    peer.output().clear();
    while (!to_side.empty() && side.wanted() > 0) {
      n = std::min(to_side.size(), side.wanted());
      for (size_t i = 0; i < n; ++i) {
        const uint8_t mask = in.next();
        corrupted |= mask != 0;
        to_side[i] = static_cast<char>(to_side[i] ^ mask);
      }
      feed_checked(side, reinterpret_cast<const uint8_t*>(to_side.data()), n);
      to_side.erase(0, n);
    }
    if (side.done() && peer.done()) break;
  }
  if (side.done()) check(same_key && !corrupted);
  if (!corrupted && same_key) check(side.done());  // and an honest one does
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const auto ours = key("fuzz-job-key-0123456789");
  static const auto other = key("another-job-key-987654");
  const uint8_t mode = data[0];
  const auto role = (mode & 1) ? AuthHandshake::Role::acceptor : AuthHandshake::Role::connector;
  AuthHandshake side(ours, role);
  check(!side.failed() && side.output().size() == AuthHandshake::kGreetingBytes);
  Input in{data + 1, size - 1};
  if (mode & 2) {
    const bool same_key = (mode & 4) == 0;
    AuthHandshake peer(same_key ? ours : other, role == AuthHandshake::Role::acceptor
                                                    ? AuthHandshake::Role::connector
                                                    : AuthHandshake::Role::acceptor);
    relayed_peer(side, peer, same_key, in);
  } else {
    raw_peer(side, in);
  }
  return 0;
}
