// A minimal JSON text builder for reports (the tools, the trace files): objects, arrays, strings
// (escaped), numbers (non-finite ones as null), booleans. Commas and nesting are tracked so callers
// cannot get them wrong. quote() is the one string escaper of the tools (hcomm-bench writes its
// JSON by format).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hcomm::core {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  /// The next value is this member's.
  JsonWriter& key(const std::string& name);
  JsonWriter& value(const std::string& s);
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(float f) { return value(static_cast<double>(f)); }
  JsonWriter& value(int v) { return number(std::to_string(v)); }
  JsonWriter& value(int64_t v) { return number(std::to_string(v)); }
  JsonWriter& value(uint64_t v) { return number(std::to_string(v)); }
  JsonWriter& value(bool b) { return number(b ? "true" : "false"); }
  JsonWriter& null() { return number("null"); }
  /// A member: key(name) and its value.
  template <class T>
  JsonWriter& field(const std::string& name, const T& v) {
    key(name);
    return value(v);
  }
  /// Inserts already valid JSON text as a value.
  JsonWriter& raw(const std::string& json) { return number(json); }

  const std::string& str() const { return out_; }

  /// `s` as a JSON string literal, quotes included.
  static std::string quote(const std::string& s);

 private:
  JsonWriter& number(const std::string& text);
  void separate();

  std::string out_;
  std::vector<bool> first_;  ///< per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace hcomm::core
