#include "transport/connection_auth.hpp"

#include <poll.h>

#include <thread>
#include <vector>

#include "core/auth_handshake.hpp"

namespace hcomm::transport {

namespace {

struct PeerHandshake {
  int peer;
  Connection* connection;
  core::AuthHandshake handshake;
};

// Sends what the handshake has to send, then feeds it the messages that are there. False with
// `error` set when the connection fails.
bool step(PeerHandshake& p, Status& error) {
  std::string& out = p.handshake.output();
  if (!out.empty()) {
    ConstBuffer part{out.data(), out.size()};
    Status sent = p.connection->send(&part, 1);
    if (!sent.ok()) {
      error = sent;
      return false;
    }
    out.clear();
  }
  while (p.handshake.wanted() > 0) {
    auto message = p.connection->receive();
    if (!message.ok()) {
      error = message.status();
      return false;
    }
    if (!message.value()) break;
    const std::vector<std::byte>& bytes = *message.value();
    // One message is one step: anything longer is not this handshake.
    if (bytes.size() > p.handshake.wanted()) {
      error = {HCOMM_ERR_TRANSPORT, "it sent a message that is no job-key handshake"};
      return false;
    }
    p.handshake.feed(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  if (p.handshake.failed()) {
    error = {HCOMM_ERR_TRANSPORT, p.handshake.failure()};
    return false;
  }
  return true;
}

}  // namespace

Status authenticate_connections(const std::string& protocol, int my_rank,
                                const std::shared_ptr<const core::JobKey>& key,
                                std::map<int, std::unique_ptr<Connection>>& connections,
                                std::chrono::steady_clock::time_point deadline) {
  using Role = core::AuthHandshake::Role;
  std::vector<PeerHandshake> pending;
  for (auto& [peer, connection] : connections)
    pending.push_back(
        {peer, connection.get(),
         core::AuthHandshake(key, peer < my_rank ? Role::connector : Role::acceptor)});
  while (!pending.empty()) {
    std::vector<pollfd> fds;
    for (size_t i = 0; i < pending.size();) {
      PeerHandshake& p = pending[i];
      Status error;
      if (!step(p, error)) {
        const std::string who = protocol + " rank " + std::to_string(p.peer);
        core::log_refused_connection(protocol.c_str(), who, error.message());
        return {HCOMM_ERR_TRANSPORT, protocol + ": rank " + std::to_string(p.peer) +
                                         " failed the job-key handshake: " + error.message() +
                                         ": every rank must run with the same HCOMM_JOB_KEY"};
      }
      // Done once it proved itself and this side's last bytes are sent.
      if (p.handshake.done() && p.handshake.output().empty()) {
        pending.erase(pending.begin() + static_cast<long>(i));
        continue;
      }
      if (p.connection->event_fd() >= 0) fds.push_back({p.connection->event_fd(), POLLIN, 0});
      ++i;
    }
    if (pending.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string ranks;
      for (const PeerHandshake& p : pending)
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(p.peer);
      return {HCOMM_ERR_TIMEOUT,
              protocol + ": rank(s) " + ranks + " did not complete the job-key handshake in time"};
    }
    // Wait for a message where the connections tell when one comes, else poll every 200 us.
    if (fds.size() == pending.size())
      ::poll(fds.data(), fds.size(), 10);
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {};
}

}  // namespace hcomm::transport
