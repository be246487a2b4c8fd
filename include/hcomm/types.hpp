// hcomm public API: element types and reduction operators.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hcomm/export.h"

namespace hcomm {

enum class DataType : uint8_t {
  int8 = 0,
  uint8 = 1,
  int32 = 2,
  int64 = 3,
  float16 = 4,   ///< IEEE 754 binary16
  bfloat16 = 5,  ///< bfloat16 (upper half of a binary32)
  float32 = 6,
  float64 = 7,
};
inline constexpr int kNumDataTypes = 8;

enum class ReduceOp : uint8_t {
  sum = 0,
  prod = 1,
  min = 2,
  max = 3,
  /// sum divided by the number of ranks. Integer types sum with two's-complement wrap-around in
  /// the element type (as NCCL does) and then divide truncating toward zero; floating types
  /// divide the reduced value.
  avg = 4,
  /// Bitwise and, or, exclusive or (MPI_BAND, MPI_BOR, MPI_BXOR): integer types only (int8,
  /// uint8, int32, int64); a floating type gets HCOMM_ERR_INVALID_ARG.
  band = 5,
  bor = 6,
  bxor = 7,
};
inline constexpr int kNumReduceOps = 8;

/// Bytes per element; 0 for a value outside the enum.
HCOMM_API size_t dtype_size(DataType t);
/// "float32", ...; "invalid" for a value outside the enum.
HCOMM_API const char* dtype_name(DataType t);
HCOMM_API const char* reduce_op_name(ReduceOp op);
HCOMM_API bool is_valid(DataType t);
HCOMM_API bool is_valid(ReduceOp op);
/// int8, uint8, int32, int64.
HCOMM_API bool is_integer(DataType t);
/// band, bor, bxor.
HCOMM_API bool is_bitwise(ReduceOp op);
/// True when `op` reduces elements of type `t` (the bitwise ops need an integer type).
HCOMM_API bool reduces(ReduceOp op, DataType t);
/// Parses "float32"/"float"/"f32", "bf16", ...; returns false when unknown.
HCOMM_API bool parse_dtype(const char* name, DataType* out);
HCOMM_API bool parse_reduce_op(const char* name, ReduceOp* out);

}  // namespace hcomm
