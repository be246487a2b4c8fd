#include "config_report.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "api/config_env.hpp"
#include "core/config_vars.hpp"
#include "hcomm/config.hpp"

namespace hcomm::tools {
namespace {

struct Row {
  std::string name;
  std::string value;
  std::string from;
  std::string fallback;  ///< the default
  std::string meaning;
};

std::string shown(const std::string& value, bool set) {
  if (!value.empty()) return value;
  return set ? "\"\"" : "(unset)";
}

}  // namespace

bool print_config(std::FILE* out, std::FILE* err) {
  std::vector<std::string> errors;
  std::vector<std::optional<std::string>> texts;
  Config applied;  // every set variable applied alone, in the table's order
  for (const core::ConfigVar& v : core::config_vars()) {
    texts.push_back(core::env_text(v.id));
    if (!texts.back()) continue;
    Status st = api::apply_variable(v.id, *texts.back(), &applied);
    if (!st.ok()) errors.push_back(st.message());
  }
  // The other launchers' variables and the checks across variables.
  auto full = Config::from_env();
  if (!full.ok() && errors.empty()) errors.push_back(full.status().message());

  std::vector<Row> rows;
  for (const core::ConfigVar& v : core::config_vars()) {
    const auto& text = texts[static_cast<size_t>(v.id)];
    const Config& source = full.ok() ? *full : applied;
    const auto in_field = api::field_text(source, v.id);
    Row r{v.name, "", "default", shown(v.default_text, false), v.meaning};
    if (text) {
      r.from = "environment";
      Config alone;
      const bool parses = api::apply_variable(v.id, *text, &alone).ok();
      r.value = parses ? shown(in_field.value_or(*text), true) : "'" + *text + "': does not parse";
      if (v.flags & core::kSecret) r.value = "(set, not shown)";
    } else {
      r.value = shown(in_field.value_or(v.default_text), false);
      if (in_field && *in_field != v.default_text) r.from = "launcher";
    }
    rows.push_back(std::move(r));
  }
  Row header{"variable", "value in force", "from", "default", "meaning"};
  size_t w_name = header.name.size(), w_value = header.value.size(), w_from = header.from.size(),
         w_default = header.fallback.size();
  for (const Row& r : rows) {
    w_name = std::max(w_name, r.name.size());
    w_value = std::max(w_value, r.value.size());
    w_from = std::max(w_from, r.from.size());
    w_default = std::max(w_default, r.fallback.size());
  }
  auto print = [&](const Row& r) {
    std::fprintf(out, "%-*s  %-*s  %-*s  %-*s  %s\n", static_cast<int>(w_name), r.name.c_str(),
                 static_cast<int>(w_value), r.value.c_str(), static_cast<int>(w_from),
                 r.from.c_str(), static_cast<int>(w_default), r.fallback.c_str(),
                 r.meaning.c_str());
  };
  print(header);
  for (const Row& r : rows) print(r);
  for (const std::string& e : errors) std::fprintf(err, "hcomm-info: %s\n", e.c_str());
  return errors.empty();
}

void print_config_markdown(std::FILE* out) {
  std::fprintf(out, "| variable | default | meaning |\n|---|---|---|\n");
  for (const core::ConfigVar& v : core::config_vars()) {
    std::string meaning;
    for (const char* c = v.meaning; *c != '\0'; ++c) {
      if (*c == '|') meaning += '\\';
      meaning += *c;
    }
    const std::string fallback =
        *v.default_text == '\0' ? std::string("unset") : "`" + std::string(v.default_text) + "`";
    std::fprintf(out, "| `%s` | %s | %s |\n", v.name, fallback.c_str(), meaning.c_str());
  }
}

}  // namespace hcomm::tools
