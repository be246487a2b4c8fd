// Elements of every DataType, read and written independently of hcomm's converters and kernels:
// the arithmetic the tools and tests check hcomm's results against (hcomm_reference, with
// reduction.hpp). Pure functions of their arguments; any thread.
#pragma once

#include <hcomm/types.hpp>

#include <cstddef>
#include <cstdint>

namespace hcomm::tools::reference {

bool is_float(DataType t);    ///< float16, bfloat16, float32, float64
bool is_integer(DataType t);  ///< int8, uint8, int32, int64

/// `x` rounded to the nearest value of floating type `t`, ties to even: what the kernels produce
/// from an exact result. Beyond the largest finite value: +-inf; NaN and +-inf stay as they are;
/// float64 (and any non-float type): `x` itself.
double round_to(DataType t, double x);

/// The low bits of `v` as integer type `t`, sign-extended for the signed ones: two's-complement
/// wrap-around, as hcomm's integer reductions do. int64 (and any non-integer type): `v`.
int64_t wrap(DataType t, int64_t v);

/// binary16 and bfloat16 bits of `x` (rounded with round_to; NaN: the quiet NaN 0x7e00 / 0x7fc0)
/// and the exact value of any such bits (subnormals, infinities and NaNs included).
uint16_t half_bits(double x);
double half_value(uint16_t bits);
uint16_t bfloat16_bits(double x);
double bfloat16_value(uint16_t bits);

/// Element `i` of `buf` (any alignment) as a double: exact for every float, and for integers of
/// magnitude up to 2^53.
double load(DataType t, const void* buf, size_t i);
/// Writes `v` as element `i`: floats rounded with round_to; integers truncated toward zero, then
/// wrapped (`v` must be finite and below 2^63 in magnitude).
void store(DataType t, void* buf, size_t i, double v);

/// Integer elements exactly: load_int sign-extends the signed types; store_int writes the low
/// bytes of `v`.
int64_t load_int(DataType t, const void* buf, size_t i);
void store_int(DataType t, void* buf, size_t i, int64_t v);

}  // namespace hcomm::tools::reference
