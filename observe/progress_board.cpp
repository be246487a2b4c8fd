#include "observe/progress_board.hpp"

#include <chrono>
#include <sstream>

#include "bootstrap/launch_env.hpp"

namespace hcomm::observe {

std::string Progress::encode() const {
  std::ostringstream out;
  out << seq << ' ' << static_cast<int>(kind) << ' ' << static_cast<int>(state) << ' ' << entered_ns
      << ' ' << pid << ' ' << (host.empty() ? "?" : host);
  return out.str();
}

std::optional<Progress> Progress::decode(const std::string& text) {
  std::istringstream in(text);
  Progress p;
  int kind = 0;
  int state = 0;
  if (!(in >> p.seq >> kind >> state >> p.entered_ns >> p.pid >> p.host)) return std::nullopt;
  if (kind <= 0 || kind >= collectives::kNumOpKinds || state < 0 ||
      state > static_cast<int>(OpState::failed))
    return std::nullopt;
  p.kind = static_cast<collectives::OpKind>(kind);
  p.state = static_cast<OpState>(state);
  return p;
}

Expected<std::unique_ptr<ProgressBoard>> ProgressBoard::connect(const std::string& root_addr,
                                                                const std::string& id, int size) {
  auto root = bootstrap::parse_host_port(root_addr);
  if (!root.ok()) return root.status();
  auto key = core::JobKey::from_environment();
  if (!key.ok()) return key.status();
  auto store =
      bootstrap::StoreClient::connect(root->host, root->port, std::chrono::seconds(5), key.value());
  if (!store.ok()) return store.status();
  return std::unique_ptr<ProgressBoard>(new ProgressBoard(std::move(store.value()), id, size));
}

Expected<int64_t> ProgressBoard::clock_offset_ns(int64_t* uncertainty_ns) {
  return store_->clock_offset_ns(8, uncertainty_ns);
}

Status ProgressBoard::publish(int rank, const Progress& mine) {
  return store_->set(prefix_ + "progress/" + std::to_string(rank), mine.encode());
}

Expected<std::vector<std::optional<Progress>>> ProgressBoard::read_all() {
  std::vector<std::optional<Progress>> out(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    auto text =
        store_->get(prefix_ + "progress/" + std::to_string(r), std::chrono::milliseconds(0));
    if (text.ok()) {
      out[static_cast<size_t>(r)] = Progress::decode(text.value());
    } else if (text.status().code() != HCOMM_ERR_TIMEOUT) {
      return text.status();
    }
  }
  return out;
}

Expected<int64_t> ProgressBoard::dump_requests() {
  return store_->add(prefix_ + "dump", 0);
}

Expected<std::string> ProgressBoard::read(const std::string& key) {
  return store_->get(key, std::chrono::milliseconds(0));
}

Status ProgressBoard::request_dump() {
  auto n = store_->add(prefix_ + "dump", 1);
  return n.ok() ? Status() : n.status();
}

}  // namespace hcomm::observe
