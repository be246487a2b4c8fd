// observe/: the flight recorder's ring, the stall report's line, the settings' file names, the
// progress record's encoding, the stats segment as hcomm-perf-mon sees it, the trace files, a
// communicator's trace outliving its rendezvous store.
#include <doctest/doctest.h>

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store_server.hpp"
#include "observe/comm_trace.hpp"
#include "observe/flight_recorder.hpp"
#include "observe/settings.hpp"
#include "observe/stall_report.hpp"
#include "observe/stats_segment.hpp"
#include "observe/trace_files.hpp"

using namespace hcomm;
using namespace hcomm::observe;
using collectives::OpKind;

namespace {

collectives::Operation allreduce(uint64_t seq, size_t count = 256) {
  collectives::Operation op;
  op.kind = OpKind::allreduce;
  op.dtype = DataType::float32;
  op.count = count;
  op.seq = seq;
  return op;
}

Progress at(uint64_t seq, OpState state, int64_t entered_ns) {
  Progress p;
  p.seq = seq;
  p.kind = OpKind::allreduce;
  p.state = state;
  p.entered_ns = entered_ns;
  p.pid = 42;
  p.host = "h";
  return p;
}

}  // namespace

TEST_CASE("FlightRecorder: keeps the last N, oldest first, and finalizes what completed") {
  FlightRecorder rec(3);
  std::vector<collectives::Operation> ops;
  for (uint64_t s = 1; s <= 5; ++s) ops.push_back(allreduce(s));
  for (auto& op : ops) rec.record(make_record(op));
  ops[2].completion->complete({});                                      // #3 done
  ops[3].completion->complete({HCOMM_ERR_TIMEOUT, "deadline passed"});  // #4 failed
  auto all = rec.snapshot();
  REQUIRE(all.size() == 3);
  CHECK(all[0].seq == 3);
  CHECK(all[0].state == OpState::completed);
  CHECK(all[0].completed_ns > 0);
  CHECK(all[1].state == OpState::failed);
  CHECK(all[1].failure.find("deadline passed") != std::string::npos);
  CHECK(all[2].state == OpState::started);
  CHECK(all[2].completion.get() == nullptr);  // copies hold nothing of the operation
  CHECK(rec.recorded() == 5);
  auto scan = rec.scan();
  CHECK(scan.in_flight == 1);
  REQUIRE(scan.oldest);
  CHECK(scan.oldest->seq == 5);
  CHECK(scan.failures == 1);
  REQUIRE(scan.first_failure);
  CHECK(scan.first_failure->seq == 4);
  REQUIRE(scan.newest_collective);
  CHECK(scan.newest_collective->seq == 5);
}

TEST_CASE(
    "FlightRecorder: an aborted operation is not a failure to dump for, capacity 0 keeps none") {
  FlightRecorder rec(4);
  auto op = allreduce(1);
  rec.record(make_record(op));
  op.completion->complete({HCOMM_ERR_ABORTED, "destroyed"});
  CHECK(rec.scan().failures == 0);
  FlightRecorder none(0);
  none.record(make_record(op));
  CHECK(none.snapshot().empty());
  CHECK(none.scan().in_flight == 0);
}

TEST_CASE("stall_line: names the rank that has not entered, with where it is and its link") {
  auto op = allreduce(1042, 1 << 20);
  OpRecord r = make_record(op);
  StallFacts f;
  f.rank = 0;
  f.now_ns = 10'000'000'000;
  f.progress = {at(1042, OpState::started, 1), at(1042, OpState::started, 2),
                at(1041, OpState::completed, -400'000'000), at(1042, OpState::started, 3)};
  f.transport_to = {"self", "shm", "shm", "tcp"};
  CHECK(stalled_on(r, f) == std::vector<int>{2});
  const std::string line = stall_line(r, f);
  CHECK(line.rfind("allreduce #1042 (4 MiB float32) waiting 10.0 s for rank 2 (", 0) == 0);
  CHECK(line.find("last heard 10.4 s ago on shm") != std::string::npos);
  CHECK(line.find("allreduce #1041, completed") != std::string::npos);

  f.progress[2] = at(1042, OpState::started, 5);
  CHECK(stalled_on(r, f).empty());
  CHECK(stall_line(r, f).find("every rank has entered it") != std::string::npos);

  f.progress[3].reset();  // never published: counted as behind
  CHECK(stalled_on(r, f) == std::vector<int>{3});

  f.progress.clear();
  f.progress_error = "no board";
  CHECK(stall_line(r, f).find("unknown: no board") != std::string::npos);
}

TEST_CASE("stall_line: a receive waits for its peer") {
  collectives::Operation op;
  op.kind = OpKind::recv;
  op.peer = 3;
  op.tag = 7;
  op.count = 16;
  OpRecord r = make_record(op);
  StallFacts f;
  f.now_ns = 2'000'000'000;
  CHECK(stalled_on(r, f) == std::vector<int>{3});
  CHECK(stall_line(r, f).rfind("recv from rank 3 (tag 7)", 0) == 0);
}

TEST_CASE("Progress: encodes and decodes, garbage decodes to nothing") {
  auto p = at(77, OpState::completed, -5);
  auto back = Progress::decode(p.encode());
  REQUIRE(back);
  CHECK(back->seq == 77);
  CHECK(back->state == OpState::completed);
  CHECK(back->entered_ns == -5);
  CHECK(back->host == "h");
  CHECK_FALSE(Progress::decode("1 99 0 0 1 h"));
  CHECK_FALSE(Progress::decode("not a record"));
  CHECK_FALSE(Progress::decode(""));
}

TEST_CASE("Settings: profile file names per rank") {
  Settings s;
  CHECK(s.profile_path(0, 1) == "hcomm_profile.json");
  CHECK(s.profile_path(3, 4) == "hcomm_profile.3.json");
  s.profile_file = "/tmp/p_%r.json";
  CHECK(s.profile_path(2, 4) == "/tmp/p_2.json");
  s.profile_file = "/tmp/run.d/prof.json";
  CHECK(s.profile_path(1, 2) == "/tmp/run.d/prof.1.json");
  s.profile_file = "/tmp/run.d/prof";
  CHECK(s.profile_path(1, 2) == "/tmp/run.d/prof.1");
}

TEST_CASE("StatsPublisher: a claimed slot is seen live by a reader, counters and all") {
  auto pub = StatsPublisher::create("unit-host");
  REQUIRE(pub.ok());
  StatsComm* slot = pub.value()->claim("00ff00ff00ff00ff", 1, 4);
  REQUIRE(slot != nullptr);
  slot->ops.fetch_add(5);
  bool found = false;
  for (const auto& view : StatsView::attach_all()) {
    if (view->pid() != static_cast<int>(::getpid())) continue;
    CHECK(std::string(view->segment().host) == "unit-host");
    for (const StatsComm& c : view->segment().comms)
      if (std::string(c.id) == "00ff00ff00ff00ff")
        found =
            c.state.load() == StatsComm::kLive && c.ops.load() == 5 && c.rank == 1 && c.size == 4;
  }
  CHECK(found);
  pub.value()->release(slot);
  CHECK(slot->state.load() == StatsComm::kClosed);
}

TEST_CASE("profile_json and dump_json: the fields the tools read") {
  auto op = allreduce(9);
  CommTraceData c;
  c.id = "0123456789abcdef";
  c.size = 2;
  c.buffer_size = 10;
  OpRecord r = make_record(op);
  op.completion->complete({});
  r.finalize();
  c.records = {r};
  c.recorded = 1;
  ProcessFacts f;
  f.host = "h";
  const std::string profile = profile_json(f, 1, {c});
  for (const char* key : {"\"traceEvents\":[", "\"ph\":\"X\"", "\"Collective name\":\"allreduce\"",
                          "\"In msg nelems\":256", "\"dtype\":\"Float\"", "\"Group size\":2",
                          "\"format\":\"hcomm-profile\"", "\"events_dropped\":0"})
    CHECK_MESSAGE(profile.find(key) != std::string::npos, key);
  const std::string dump = dump_json(f, "signal", "SIGUSR1", {c});
  for (const char* key : {"\"format\":\"hcomm-flight-recorder\"", "\"reason\":\"signal\"",
                          "\"seq\":9", "\"state\":\"completed\"", "\"status\":\"ok\""})
    CHECK_MESSAGE(dump.find(key) != std::string::npos, key);
}

TEST_CASE("CommTrace: the store going away turns the progress board off, ticks go on") {
  // Rank 0 hosts the store; when it exits first, the other ranks' observer threads go on ticking
  // their communicators (until those are destroyed) and find the store gone.
  auto server = bootstrap::StoreServer::start("127.0.0.1", 0);
  REQUIRE_MESSAGE(server.ok(), server.status().message());
  CommIdentity id;
  id.id = "0123456789abcdef";
  id.rank = 1;
  id.size = 2;
  id.root_addr = "127.0.0.1:" + std::to_string(server.value()->port());
  id.launch_error_key = "launch/error";
  Settings settings;
  settings.stall_warn_ms = 10000;
  CommTrace trace(id, settings, nullptr, nullptr);
  const int64_t t0 = steady_ns();
  CHECK(trace.tick(t0).launch_error.empty());
  server.value().reset();
  const int64_t second = 1000 * 1000 * 1000;
  for (int i = 1; i <= 3; ++i) CHECK(trace.tick(t0 + i * 2 * second).launch_error.empty());
  trace.request_dumps();  // no board: nothing to ask
}
