// hcomm-info --config: the HCOMM_* variables (core/config_vars.hpp) as a report of what is in
// force, or as the Markdown table the README's "Configuration" section holds.
#pragma once

#include <cstdio>

namespace hcomm::tools {

/// Every variable with its value in force (from the environment, else the default; the launcher's
/// for a rank or size some other launcher gave), where that came from, its default and meaning.
/// Every set variable that does not parse, and a disagreement between variables
/// (Config::from_env()), is written to `err`; returns false when there was any.
bool print_config(std::FILE* out, std::FILE* err);

/// "| `HCOMM_X` | `default` | meaning |" per variable under a header, in the table's order; a
/// default that is "" shows as "unset". Reads nothing from the environment.
void print_config_markdown(std::FILE* out);

}  // namespace hcomm::tools
