// Where the ranks of one communicator tell each other how far they got, for the stall report and
// hcomm-diagnose: keys in the rendezvous store (rank 0's StoreServer, alive as long as rank 0's
// communicators), written and read by each rank's observer thread:
//   trace/<id>/progress/<rank>  "<seq> <kind> <state> <entered_ns> <pid> <host>" — the rank's last
//                               collective (entered_ns on rank 0's clock)
//   trace/<id>/dump             a counter: a rank that saw a stall adds 1; every rank dumps its
//                               flight recorder when it sees the counter grow
// Also measures this rank's clock offset to rank 0's (the store's) clock.
//
// Threads: the observer thread alone (StoreClient is single-threaded). Every call blocks for at
// most the store client's deadline; the first failure leaves the board unusable (calls return
// it at once): a stall report then says what this rank alone knows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store_client.hpp"
#include "observe/op_record.hpp"

namespace hcomm::observe {

/// A rank's last collective, as it published it.
struct Progress {
  uint64_t seq = 0;  ///< 0: it entered none yet
  collectives::OpKind kind = collectives::OpKind::barrier;
  OpState state = OpState::enqueued;
  int64_t entered_ns = 0;  ///< on rank 0's clock
  int pid = 0;
  std::string host;

  std::string encode() const;
  static std::optional<Progress> decode(const std::string& text);
};

class ProgressBoard {
 public:
  /// Connects to the store at `root_addr` ("host:port") for communicator `id`.
  static Expected<std::unique_ptr<ProgressBoard>> connect(const std::string& root_addr,
                                                          const std::string& id, int size);
  /// Server clock minus local clock (ns), quickest of a few round trips.
  Expected<int64_t> clock_offset_ns(int64_t* uncertainty_ns);
  Status publish(int rank, const Progress& mine);
  /// Every rank's last publication, by rank (nothing where a rank published none).
  Expected<std::vector<std::optional<Progress>>> read_all();
  /// The dump counter; request_dump() adds one to it.
  Expected<int64_t> dump_requests();
  Status request_dump();
  /// The text at `key` (the launch error); HCOMM_ERR_TIMEOUT when there is none.
  Expected<std::string> read(const std::string& key);

 private:
  ProgressBoard(std::unique_ptr<bootstrap::StoreClient> store, std::string id, int size)
      : store_(std::move(store)), prefix_("trace/" + std::move(id) + "/"), size_(size) {}
  std::unique_ptr<bootstrap::StoreClient> store_;
  std::string prefix_;
  int size_;
};

}  // namespace hcomm::observe
