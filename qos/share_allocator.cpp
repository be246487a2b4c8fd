#include "qos/share_allocator.hpp"

#include <algorithm>

namespace hcomm::qos {

std::vector<double> allocate_shares(double capacity, const std::vector<ClassDemand>& classes) {
  const size_t n = classes.size();
  std::vector<double> rate(n, 0.0);
  std::vector<double> cap(n, 0.0);
  double left = capacity;
  for (size_t i = 0; i < n; ++i) {
    rate[i] = capacity * classes[i].min_rate / 100.0;
    cap[i] = std::max(rate[i], std::min(capacity * classes[i].max_rate / 100.0, classes[i].demand));
    if (classes[i].active) left -= rate[i];
  }
  left = std::max(left, 0.0);
  for (int level = 7; level >= 0 && left > capacity * 1e-9; --level) {
    std::vector<size_t> open;
    for (size_t i = 0; i < n; ++i)
      if (classes[i].active && classes[i].priority == level && rate[i] < cap[i]) open.push_back(i);
    // Water-filling: share what is left by weight; a class that reaches its cap drops out and
    // the rest is shared again among the others.
    while (!open.empty() && left > capacity * 1e-9) {
      double weights = 0;
      for (size_t i : open) weights += std::max(classes[i].min_rate, 1);
      double given = 0;
      std::vector<size_t> still;
      for (size_t i : open) {
        const double want = left * std::max(classes[i].min_rate, 1) / weights;
        const double take = std::min(want, cap[i] - rate[i]);
        rate[i] += take;
        given += take;
        if (rate[i] < cap[i] - capacity * 1e-9) still.push_back(i);
      }
      left -= given;
      if (still.size() == open.size()) break;  // nobody capped: everything was given
      open.swap(still);
    }
  }
  return rate;
}

}  // namespace hcomm::qos
