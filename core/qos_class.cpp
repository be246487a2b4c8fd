#include "hcomm/qos.hpp"

#include <cctype>
#include <cstdlib>

namespace hcomm {

std::string QosClass::to_string() const {
  return "min=" + std::to_string(min_rate) + " max=" + std::to_string(max_rate) +
         " priority=" + std::to_string(priority);
}

Status QosClass::validate() const {
  auto bad = [&](const std::string& why) {
    return Status{HCOMM_ERR_INVALID_ARG, "QoS class " + to_string() + ": " + why};
  };
  if (min_rate < 0 || min_rate > 100) return bad("min must be a percentage, 0..100");
  if (max_rate < 1 || max_rate > 100) return bad("max must be a percentage, 1..100");
  if (min_rate > max_rate) return bad("min must not exceed max");
  if (priority < 0 || priority > 7) return bad("priority must be 0..7 (7 most urgent)");
  return {};
}

Expected<QosClass> QosClass::parse(const std::string& spec) {
  QosClass q;
  auto bad = [&](const std::string& why) {
    return Status{HCOMM_ERR_INVALID_ARG,
                  "QoS class '" + spec + "': " + why +
                      " (expected keys min, max, priority, e.g. \"min=30,max=70,priority=2\")"};
  };
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return bad("'" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    char* stop = nullptr;
    const long v = std::strtol(text.c_str(), &stop, 10);
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || *stop != '\0')
      return bad("'" + text + "' is not a whole number");
    if (v < -1000 || v > 1000) return bad("'" + text + "' is out of range");
    if (key == "min")
      q.min_rate = static_cast<int>(v);
    else if (key == "max")
      q.max_rate = static_cast<int>(v);
    else if (key == "priority" || key == "prio")
      q.priority = static_cast<int>(v);
    else
      return bad("unknown key '" + key + "'");
  }
  Status st = q.validate();
  if (!st.ok()) return st;
  return q;
}

}  // namespace hcomm
