#include "observe/trace_files.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "core/errno_text.hpp"
#include "core/json_writer.hpp"

namespace hcomm::observe {

namespace {

using core::JsonWriter;

double aligned_us(int64_t ns, int64_t offset_ns) {
  return static_cast<double>(ns + offset_ns) / 1000.0;
}

/// A system_clock event time on this process's steady clock.
int64_t steady_of(std::chrono::system_clock::time_point when) {
  const auto now_sys = std::chrono::system_clock::now();
  return steady_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(now_sys - when).count();
}

const char* status_text(const OpRecord& r) {
  return r.state == OpState::failed ? r.failure.c_str() : r.finished() ? "ok" : "";
}

/// The call's fields, hcomm's and PyTorch profiler's.
void op_args(JsonWriter& j, const OpRecord& r, const CommTraceData& c) {
  const uint64_t n = static_cast<uint64_t>(c.size);
  uint64_t in = r.count, out = r.count;
  switch (r.kind) {
    case collectives::OpKind::allgather:
    case collectives::OpKind::gather:
      out = r.count * n;
      break;
    case collectives::OpKind::reduce_scatter:
    case collectives::OpKind::scatter:
      in = r.count * n;
      break;
    case collectives::OpKind::alltoall:
      in = out = r.count * n;
      break;
    default:
      break;
  }
  j.key("args").begin_object();
  j.field("op", collectives::op_kind_name(r.kind)).field("seq", r.seq);
  j.field("communicator", c.id).field("comm_rank", c.rank);
  j.field("bytes", r.bytes).field("count", r.count).field("datatype", dtype_name(r.dtype));
  j.field("redop", reduce_op_name(r.redop)).field("algorithm", collectives::algorithm_name(r.algo));
  j.field("root", r.root).field("peer", r.peer).field("tag", r.tag);
  j.field("compression", to_string(r.compression)).field("status", status_text(r));
  j.field("enqueued_us", aligned_us(r.enqueued_ns, c.offset_ns));
  j.field("started_us", aligned_us(r.started_ns, c.offset_ns));
  j.field("Collective name", collectives::op_kind_name(r.kind));
  j.field("In msg nelems", in).field("Out msg nelems", out);
  j.field("dtype", torch_dtype_name(r.dtype)).field("Group size", c.size);
  j.field("Process Group Name", c.id);
  j.end_object();
}

void op_events(JsonWriter& j, int pid, const CommTraceData& c, int64_t* lane_end) {
  for (const OpRecord& r : c.records) {
    if (!r.finished()) continue;
    const char* cat = collectives::is_collective(r.kind) ? "collective" : "p2p";
    const char* name = collectives::op_kind_name(r.kind);
    const double ts = aligned_us(r.enqueued_ns, c.offset_ns);
    const double dur = static_cast<double>(r.completed_ns - r.enqueued_ns) / 1000.0;
    if (r.enqueued_ns >= *lane_end) {  // alone on the lane: a complete event
      *lane_end = r.completed_ns;
      j.begin_object().field("ph", "X").field("cat", cat).field("name", name);
      j.field("pid", pid).field("tid", 0).field("ts", ts).field("dur", dur);
      op_args(j, r, c);
      j.end_object();
      continue;
    }
    *lane_end = std::max(*lane_end, r.completed_ns);
    const std::string id = c.id + ":" + std::to_string(r.seq);
    j.begin_object().field("ph", "b").field("cat", cat).field("name", name).field("id", id);
    j.field("pid", pid).field("tid", 0).field("ts", ts);
    op_args(j, r, c);
    j.end_object();
    j.begin_object().field("ph", "e").field("cat", cat).field("name", name).field("id", id);
    j.field("pid", pid).field("tid", 0).field("ts", aligned_us(r.completed_ns, c.offset_ns));
    j.end_object();
  }
}

void link_events(JsonWriter& j, int pid, const CommTraceData& c) {
  for (const LinkEvent& e : c.link_events) {
    j.begin_object().field("ph", "i").field("s", "p").field("cat", "link");
    j.field("name", link_event_name(e.kind)).field("pid", pid).field("tid", 0);
    j.field("ts", aligned_us(steady_of(e.when), c.offset_ns));
    j.key("args").begin_object().field("peer", e.peer).field("from", e.from).field("to", e.to);
    j.field("reason", e.reason).field("detection_ms", e.detection_ms).field("communicator", c.id);
    j.end_object().end_object();
  }
}

void counter_events(JsonWriter& j, int pid, const CommTraceData& c) {
  for (const CounterSample& s : c.counters) {
    const double ts = aligned_us(s.at_ns, c.offset_ns);
    j.begin_object().field("ph", "C").field("name", "bytes sent").field("pid", pid);
    j.field("ts", ts).key("args").begin_object();
    for (const auto& [transport, bytes] : s.bytes_sent) j.field(transport, bytes);
    j.end_object().end_object();
    j.begin_object().field("ph", "C").field("name", "operations in flight").field("pid", pid);
    j.field("ts", ts).key("args").begin_object().field("in flight", s.in_flight);
    j.end_object().end_object();
  }
}

void transfer_events(JsonWriter& j, int pid, const CommTraceData& c) {
  for (const TransferRecord& t : c.transfers) {
    const int src = t.send ? c.rank : t.peer;
    const int dst = t.send ? t.peer : c.rank;
    j.begin_object().field("ph", "X").field("cat", "transfer");
    j.field("name", t.send ? "send" : "recv").field("pid", pid).field("tid", 1);
    j.field("ts", aligned_us(t.start_ns, c.offset_ns));
    j.field("dur", static_cast<double>(t.end_ns - t.start_ns) / 1000.0);
    j.key("args").begin_object().field("op", collectives::op_kind_name(t.kind));
    j.field("seq", t.seq).field("peer", t.peer).field("bytes", t.bytes).end_object();
    j.end_object();
    // The arrow: from the start of the send on its rank to the end of the receive on the other.
    const std::string id = c.id + ":" + std::to_string(t.seq) + ":" + std::to_string(src) + ":" +
                           std::to_string(dst) + ":" + std::to_string(t.step) + "." +
                           std::to_string(t.chunk);
    j.begin_object().field("ph", t.send ? "s" : "f").field("cat", "flow");
    if (!t.send) j.field("bp", "e");
    j.field("name", "transfer").field("id", id).field("pid", pid).field("tid", 1);
    j.field("ts", aligned_us(t.send ? t.start_ns : t.end_ns, c.offset_ns)).end_object();
  }
}

void process_fields(JsonWriter& j, const ProcessFacts& f) {
  j.field("rank", f.rank).field("world_size", f.world_size).field("host", f.host);
  j.field("pid", f.pid).field("clock_offset_us", static_cast<double>(f.offset_ns) / 1000.0);
}

}  // namespace

const char* torch_dtype_name(DataType t) {
  switch (t) {
    case DataType::int8:
      return "Char";
    case DataType::uint8:
      return "Byte";
    case DataType::int32:
      return "Int";
    case DataType::int64:
      return "Long";
    case DataType::float16:
      return "Half";
    case DataType::bfloat16:
      return "BFloat16";
    case DataType::float32:
      return "Float";
    case DataType::float64:
      return "Double";
  }
  return "Undefined";
}

std::string profile_json(const ProcessFacts& facts, int level,
                         const std::vector<CommTraceData>& comms) {
  JsonWriter j;
  const int pid = facts.rank;
  j.begin_object().key("traceEvents").begin_array();
  j.begin_object().field("ph", "M").field("name", "process_name").field("pid", pid);
  j.field("tid", 0).key("args").begin_object();
  j.field("name", "rank " + std::to_string(facts.rank) + " (" + facts.host + ")");
  j.end_object().end_object();
  const char* lanes[] = {"operations", "transfers"};
  for (int tid = 0; tid < (level >= 2 ? 2 : 1); ++tid) {
    j.begin_object().field("ph", "M").field("name", "thread_name").field("pid", pid);
    j.field("tid", tid).key("args").begin_object().field("name", lanes[tid]);
    j.end_object().end_object();
  }
  uint64_t recorded = 0, kept = 0, dropped = 0;
  for (const CommTraceData& c : comms) {
    int64_t lane_end = INT64_MIN;
    op_events(j, pid, c, &lane_end);
    link_events(j, pid, c);
    counter_events(j, pid, c);
    if (level >= 2) transfer_events(j, pid, c);
    recorded += c.recorded;
    kept += c.records.size();
    dropped += c.transfers_dropped;
  }
  dropped += recorded - std::min(recorded, kept);
  j.end_array().field("displayTimeUnit", "ms").key("otherData").begin_object();
  j.field("format", "hcomm-profile").field("version", 1).field("level", level);
  process_fields(j, facts);
  j.field("events_recorded", recorded).field("events_dropped", dropped);
  j.key("communicators").begin_array();
  for (const CommTraceData& c : comms)
    j.begin_object().field("id", c.id).field("rank", c.rank).field("size", c.size).end_object();
  j.end_array().end_object().end_object();
  return j.str();
}

std::string dump_json(const ProcessFacts& facts, const std::string& reason,
                      const std::string& detail, const std::vector<CommTraceData>& comms) {
  JsonWriter j;
  j.begin_object().field("format", "hcomm-flight-recorder").field("version", 1);
  process_fields(j, facts);
  j.field("reason", reason).field("reason_detail", detail);
  j.field("dumped_at_us", aligned_us(steady_ns(), facts.offset_ns));
  j.key("communicators").begin_array();
  for (const CommTraceData& c : comms) {
    j.begin_object().field("id", c.id).field("rank", c.rank).field("size", c.size);
    j.field("buffer_size", static_cast<uint64_t>(c.buffer_size)).field("recorded", c.recorded);
    j.key("entries").begin_array();
    const size_t first = c.records.size() > c.buffer_size ? c.records.size() - c.buffer_size : 0;
    for (size_t i = first; i < c.records.size(); ++i) {
      const OpRecord& r = c.records[i];
      j.begin_object().field("seq", r.seq).field("kind", collectives::op_kind_name(r.kind));
      j.field("collective", collectives::is_collective(r.kind));
      j.field("count", r.count).field("bytes", r.bytes).field("datatype", dtype_name(r.dtype));
      j.field("redop", reduce_op_name(r.redop)).field("root", r.root).field("peer", r.peer);
      j.field("tag", r.tag).field("algorithm", collectives::algorithm_name(r.algo));
      j.field("state", op_state_name(r.state));
      j.field("enqueued_us", aligned_us(r.enqueued_ns, c.offset_ns));
      j.field("started_us", aligned_us(r.started_ns, c.offset_ns));
      if (r.finished())
        j.field("completed_us", aligned_us(r.completed_ns, c.offset_ns))
            .field("status", status_text(r));
      else
        j.key("completed_us").null().key("status").null();
      j.end_object();
    }
    j.end_array().end_object();
  }
  j.end_array().end_object();
  return j.str();
}

Status write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr)
    return Status(HCOMM_ERR_INVALID_ARG, core::errno_text("cannot write " + tmp, errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int e = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return Status(HCOMM_ERR_INVALID_ARG, core::errno_text("cannot write " + tmp, e));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int re = errno;
    std::remove(tmp.c_str());
    return Status(HCOMM_ERR_INVALID_ARG,
                  core::errno_text("cannot rename " + tmp + " to " + path, re));
  }
  return {};
}

}  // namespace hcomm::observe
