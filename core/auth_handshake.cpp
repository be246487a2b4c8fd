#include "core/auth_handshake.hpp"

#include <cstring>
#include <mutex>
#include <unordered_set>

#include "core/log.hpp"

namespace hcomm::core {
namespace {

constexpr char kLabel[] = "hcomm-auth-1";

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

}  // namespace

AuthHandshake::AuthHandshake(std::shared_ptr<const JobKey> key, Role role)
    : key_(std::move(key)), role_(role) {
  Status st = random_bytes(nonce_, sizeof(nonce_));
  if (!st.ok()) {
    fail(st.message());
    return;
  }
  put_u32(out_, kMagic);
  put_u32(out_, kVersion);
  out_.append(reinterpret_cast<const char*>(nonce_), sizeof(nonce_));
}

size_t AuthHandshake::wanted() const {
  switch (state_) {
    case State::greeting:
      return kGreetingBytes - got_;
    case State::proof:
      return JobKey::kMacBytes - got_;
    default:
      return 0;
  }
}

void AuthHandshake::feed(const uint8_t* data, size_t size) {
  while (size > 0 && wanted() > 0) {
    const size_t n = std::min(size, wanted());
    std::memcpy(in_ + got_, data, n);
    got_ += n;
    data += n;
    size -= n;
    // A peer that is not authenticating is refused at its first 4 bytes, not after 40.
    if (state_ == State::greeting && got_ >= 4 && get_u32(in_) != kMagic)
      return fail("it did not authenticate (it runs without HCOMM_JOB_KEY, or is not hcomm)");
    if (wanted() > 0) break;
    got_ = 0;
    if (state_ == State::greeting) {
      on_greeting();
    } else {
      on_proof();
    }
  }
}

bool AuthHandshake::is_greeting(const uint8_t* first4) {
  return get_u32(first4) == kMagic;
}

void AuthHandshake::on_greeting() {
  if (get_u32(in_ + 4) != kVersion)
    return fail("it speaks authentication version " + std::to_string(get_u32(in_ + 4)) +
                ", this rank " + std::to_string(kVersion) + ": run the same hcomm everywhere");
  std::memcpy(peer_nonce_, in_ + 8, kNonceBytes);
  if (std::memcmp(peer_nonce_, nonce_, kNonceBytes) == 0)
    return fail("it sent back this side's own challenge");
  state_ = State::proof;
  if (role_ == Role::connector) {
    JobKey::Mac mine;
    proof(Role::connector, mine);
    out_.append(reinterpret_cast<const char*>(mine), sizeof(mine));
  }
}

void AuthHandshake::on_proof() {
  const Role peer = role_ == Role::connector ? Role::acceptor : Role::connector;
  JobKey::Mac expected;
  proof(peer, expected);
  if (!JobKey::same_mac(expected, in_))
    return fail("wrong job key: its HCOMM_JOB_KEY differs from this rank's");
  if (role_ == Role::acceptor) {
    JobKey::Mac mine;
    proof(Role::acceptor, mine);
    out_.append(reinterpret_cast<const char*>(mine), sizeof(mine));
  }
  state_ = State::done;
}

void AuthHandshake::proof(Role of, JobKey::Mac out) const {
  const uint8_t* nonce_c = role_ == Role::connector ? nonce_ : peer_nonce_;
  const uint8_t* nonce_a = role_ == Role::connector ? peer_nonce_ : nonce_;
  uint8_t msg[sizeof(kLabel) - 1 + 1 + 2 * kNonceBytes];
  size_t at = 0;
  std::memcpy(msg, kLabel, sizeof(kLabel) - 1);
  at += sizeof(kLabel) - 1;
  msg[at++] = static_cast<uint8_t>(of);
  std::memcpy(msg + at, nonce_c, kNonceBytes);
  std::memcpy(msg + at + kNonceBytes, nonce_a, kNonceBytes);
  key_->mac(msg, sizeof(msg), out);
}

void AuthHandshake::fail(std::string why) {
  state_ = State::failed;
  failure_ = std::move(why);
}

void log_refused_connection(const char* what, const std::string& remote, const std::string& why) {
  static std::mutex mutex;
  static std::unordered_set<std::string> logged;
  // The address without its port: an outsider's every new connection has a new one.
  const std::string host = remote.substr(0, remote.rfind(':'));
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (logged.size() > 4096 || !logged.insert(host + "|" + what).second) return;
  }
  HCOMM_LOG(warn, log::kNet,
            "%s: refused a connection from %s: %s (further refusals of this address are not "
            "logged)",
            what, remote.c_str(), why.c_str());
}

}  // namespace hcomm::core
