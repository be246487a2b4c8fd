// The lossless codecs on the payloads they are meant for, between two ranks (hcomm-run -n 2):
// rank 0 sends ITERS versions of a float32 buffer of BYTES to rank 1, which checks each version
// bit for bit against the same version computed on its own. Then both print what their frames
// carried (Communicator::compression_stats) as "wire W payload P ratio R", and rank 1 "VERIFIED".
//
//   codec_streams MODE CODEC BYTES ITERS [MAX_RATIO]
//     MODE   delta10    each version changes 10% of the elements (new random values)
//            unchanged  every version is the same
//            sparse90   a gradient with 90% zeros, new every version
//            random     random floats, new every version
//     CODEC  none, delta, zstd, auto, ... (Communicator::set_compression on both ranks)
//     MAX_RATIO  fail unless rank 0's wire/payload ratio is at most this
//
// The bench script bench/compression_netns.sh runs it between namespace hosts and reads the veth
// counters; the tests run it over loopback TCP with MAX_RATIO.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <hcomm/hcomm.hpp>

using hcomm::Compression;
using hcomm::DataType;

namespace {

/// Version `v` of the buffer, computed from scratch by each rank (version v-1 and the changes).
class Versions {
 public:
  Versions(const std::string& mode, size_t count) : mode_(mode), data_(count), gen_(42) { fresh(); }
  const std::vector<float>& next() {
    if (first_) {
      first_ = false;
      return data_;
    }
    if (mode_ == "delta10") {
      std::uniform_int_distribution<size_t> at(0, data_.size() - 1);
      for (size_t k = 0; k < data_.size() / 10; ++k) data_[at(gen_)] = value_(gen_);
    } else if (mode_ != "unchanged") {
      fresh();
    }
    return data_;
  }

 private:
  void fresh() {
    std::uniform_real_distribution<double> u(0, 1);
    for (auto& x : data_) {
      if (mode_ == "sparse90")
        x = u(gen_) < 0.9 ? 0.0f : value_(gen_);
      else
        x = value_(gen_);
    }
  }
  std::string mode_;
  std::vector<float> data_;
  std::mt19937_64 gen_;
  std::normal_distribution<float> value_{0.0f, 1e-2f};
  bool first_ = true;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: codec_streams MODE CODEC BYTES ITERS [MAX_RATIO]\n");
    return 2;
  }
  const std::string mode = argv[1];
  Compression codec;
  if (!hcomm::parse_compression(argv[2], &codec)) {
    std::fprintf(stderr, "unknown codec '%s'\n", argv[2]);
    return 2;
  }
  const size_t count = std::strtoull(argv[3], nullptr, 10) / sizeof(float);
  const int iters = std::atoi(argv[4]);
  const double max_ratio = argc > 5 ? std::atof(argv[5]) : 0;
  if (mode != "delta10" && mode != "unchanged" && mode != "sparse90" && mode != "random") {
    std::fprintf(stderr, "unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  auto created = hcomm::Communicator::create_from_env();
  if (!created) {
    std::fprintf(stderr, "%s\n", created.status().to_string().c_str());
    return 2;
  }
  auto& comm = **created;
  if (comm.size() != 2) {
    std::fprintf(stderr, "codec_streams runs on 2 ranks\n");
    return 2;
  }
  comm.set_compression(codec);
  Versions versions(mode, count);
  std::vector<float> got(count);
  int wrong = 0;
  const auto before = comm.compression_stats();
  for (int v = 0; v < iters; ++v) {
    const std::vector<float>& want = versions.next();
    hcomm::Status st;
    if (comm.rank() == 0) {
      st = comm.send(want.data(), count, DataType::float32, 1, 3);
    } else {
      std::memset(got.data(), 0xff, count * sizeof(float));
      st = comm.recv(got.data(), count, DataType::float32, 0, 3);
      if (st.ok() && std::memcmp(got.data(), want.data(), count * sizeof(float)) != 0) ++wrong;
    }
    if (!st.ok()) {
      std::fprintf(stderr, "rank %d: version %d: %s\n", comm.rank(), v, st.to_string().c_str());
      return 1;
    }
  }
  hcomm::Status st = comm.barrier();
  const auto after = comm.compression_stats();
  const uint64_t wire = after.wire_bytes - before.wire_bytes;
  const uint64_t payload = after.payload_bytes - before.payload_bytes;
  const double ratio = payload == 0 ? 0 : static_cast<double>(wire) / static_cast<double>(payload);
  if (comm.rank() == 0)
    std::printf("%s %s: wire %llu payload %llu ratio %.4f\n", mode.c_str(), argv[2],
                static_cast<unsigned long long>(wire), static_cast<unsigned long long>(payload),
                ratio);
  if (comm.rank() == 1) std::printf("%s\n", wrong == 0 ? "VERIFIED" : "WRONG");
  if (!st.ok() || wrong != 0) return 1;
  if (comm.rank() == 0 && max_ratio > 0 && ratio > max_ratio) {
    std::fprintf(stderr, "ratio %.4f is above %.4f\n", ratio, max_ratio);
    return 1;
  }
  return 0;
}
