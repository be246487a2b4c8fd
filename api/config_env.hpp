// The HCOMM_* variables (core/config_vars.hpp) mapped onto Config's fields: what
// Config::from_env() does with each, one variable at a time, for hcomm-info --config and tests.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/config_vars.hpp"
#include "hcomm/config.hpp"

namespace hcomm::api {

/// Reads `text` as the value of `var` the way Config::from_env() does and sets the field(s) it
/// stands for in *c; a variable that sets no field (HCOMM_DEBUG, HCOMM_HOST_ID, ...) is only
/// checked. "" leaves *c alone unless "" is the variable's value (core::kEmptyIsValue). Fails
/// with HCOMM_ERR_INVALID_ARG naming the variable, the text and what it accepts.
Status apply_variable(core::Var var, std::string_view text, Config* c);

/// The value of `var`'s field(s) in `c`, as text that apply_variable() reads back to it ("" for an
/// unset rank or size, or an empty QoS class); nothing when `var` sets no field.
std::optional<std::string> field_text(const Config& c, core::Var var);

/// The Config field apply_variable() sets for `var` ("" when none): the table's `field` must
/// name the same.
const char* applied_field(core::Var var);

}  // namespace hcomm::api
