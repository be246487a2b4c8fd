// The computation of examples/tile_pipeline.cpp, apart from how it is scheduled: a G x G grid of
// B x B float tiles advanced through S stages. Tile (s, i, j) for s >= 1 is a pure function of
// the five tiles (s - 1, i, j) and its up to four neighbours at stage s - 1 (a Jacobi smoothing
// of K sweeps whose border comes from the neighbours' edges), so any order that respects those
// dependencies gives bit-identical results. Tile columns are dealt to ranks in blocks (host
// affinity); the digest of a rank is FNV-1a over its final tiles in (i, j) order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tile_grid {

struct Shape {
  int tiles = 8;     ///< G: tiles per side
  int tile = 128;    ///< B: floats per tile side
  int stages = 300;  ///< S
  int sweeps = 8;    ///< K: smoothing sweeps per tile and stage
  int ranks = 1;

  size_t tile_floats() const { return static_cast<size_t>(tile) * tile; }
  /// The rank that computes tile column j (blocks of columns, as even as they go).
  int owner(int j) const { return static_cast<int>(static_cast<long>(j) * ranks / tiles); }
  int index(int i, int j) const { return i * tiles + j; }
};

/// Stage 0: a deterministic pattern of the global coordinates.
inline void initial_tile(const Shape& g, int i, int j, float* out) {
  for (int y = 0; y < g.tile; ++y)
    for (int x = 0; x < g.tile; ++x) {
      const uint32_t gy = static_cast<uint32_t>(i * g.tile + y);
      const uint32_t gx = static_cast<uint32_t>(j * g.tile + x);
      uint32_t h = gy * 2654435761u ^ gx * 2246822519u;
      h ^= h >> 15;
      out[y * g.tile + x] = static_cast<float>(h % 1000) * 0.001f;
    }
}

/// The inputs of one tile: its own previous stage and its neighbours' (nullptr at the grid's
/// edge, where the border is 0).
struct Inputs {
  const float* self = nullptr;
  const float* up = nullptr;
  const float* down = nullptr;
  const float* left = nullptr;
  const float* right = nullptr;
};

/// Tile (s, i, j) from its inputs. `scratch` holds 2 * (B + 2)^2 floats.
inline void compute_tile(const Shape& g, const Inputs& in, float* out, float* scratch) {
  const int b = g.tile, w = b + 2;
  float* cur = scratch;
  float* next = scratch + static_cast<size_t>(w) * w;
  std::memset(cur, 0, sizeof(float) * w * w);
  for (int y = 0; y < b; ++y)
    std::memcpy(cur + (y + 1) * w + 1, in.self + y * b, sizeof(float) * b);
  for (int x = 0; x < b; ++x) {
    if (in.up) cur[x + 1] = in.up[(b - 1) * b + x];
    if (in.down) cur[(b + 1) * w + x + 1] = in.down[x];
  }
  for (int y = 0; y < b; ++y) {
    if (in.left) cur[(y + 1) * w] = in.left[y * b + b - 1];
    if (in.right) cur[(y + 1) * w + b + 1] = in.right[y * b];
  }
  std::memcpy(next, cur, sizeof(float) * w * w);  // the border stays as the neighbours gave it
  for (int k = 0; k < g.sweeps; ++k) {
    for (int y = 1; y <= b; ++y)
      for (int x = 1; x <= b; ++x)
        next[y * w + x] = 0.2f * (cur[y * w + x] + cur[(y - 1) * w + x] + cur[(y + 1) * w + x] +
                                  cur[y * w + x - 1] + cur[y * w + x + 1]) +
                          0.001f;
    std::swap(cur, next);
  }
  for (int y = 0; y < b; ++y) std::memcpy(out + y * b, cur + (y + 1) * w + 1, sizeof(float) * b);
}

inline uint64_t fnv1a(uint64_t h, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t k = 0; k < bytes; ++k) h = (h ^ p[k]) * 1099511628211ull;
  return h;
}
constexpr uint64_t kFnvBasis = 14695981039346656037ull;

/// The combined digest of the ranks' digests, in rank order.
inline uint64_t combine(const std::vector<uint64_t>& per_rank) {
  return fnv1a(kFnvBasis, per_rank.data(), per_rank.size() * sizeof(uint64_t));
}

/// The whole computation in one thread, no communication: each rank's digest.
inline std::vector<uint64_t> reference(const Shape& g) {
  const size_t n = g.tile_floats(), tiles = static_cast<size_t>(g.tiles) * g.tiles;
  std::vector<float> prev(tiles * n), cur(tiles * n), scratch(2 * (g.tile + 2) * (g.tile + 2));
  for (int i = 0; i < g.tiles; ++i)
    for (int j = 0; j < g.tiles; ++j) initial_tile(g, i, j, &prev[g.index(i, j) * n]);
  for (int s = 1; s <= g.stages; ++s) {
    for (int i = 0; i < g.tiles; ++i)
      for (int j = 0; j < g.tiles; ++j) {
        auto at = [&](int y, int x) -> const float* {
          return y < 0 || x < 0 || y >= g.tiles || x >= g.tiles ? nullptr
                                                                : &prev[g.index(y, x) * n];
        };
        compute_tile(g, {at(i, j), at(i - 1, j), at(i + 1, j), at(i, j - 1), at(i, j + 1)},
                     &cur[g.index(i, j) * n], scratch.data());
      }
    std::swap(prev, cur);
  }
  std::vector<uint64_t> digests(g.ranks, kFnvBasis);
  for (int i = 0; i < g.tiles; ++i)
    for (int j = 0; j < g.tiles; ++j) {
      auto& d = digests[g.owner(j)];
      d = fnv1a(d, &prev[g.index(i, j) * n], n * sizeof(float));
    }
  return digests;
}

}  // namespace tile_grid
