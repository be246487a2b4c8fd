#include "hcomm/types.hpp"

#include <cstring>

namespace hcomm {
namespace {

struct Alias {
  const char* name;
  DataType type;
};

/// Every spelling parse_dtype accepts; the first one of each type is its dtype_name.
constexpr Alias kDtypeAliases[] = {
    {"int8", DataType::int8},         {"uint8", DataType::uint8},    {"int32", DataType::int32},
    {"int", DataType::int32},         {"int64", DataType::int64},    {"float16", DataType::float16},
    {"half", DataType::float16},      {"fp16", DataType::float16},   {"f16", DataType::float16},
    {"bfloat16", DataType::bfloat16}, {"bf16", DataType::bfloat16},  {"float32", DataType::float32},
    {"float", DataType::float32},     {"fp32", DataType::float32},   {"f32", DataType::float32},
    {"float64", DataType::float64},   {"double", DataType::float64}, {"fp64", DataType::float64},
    {"f64", DataType::float64},
};

}  // namespace

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::int8:
    case DataType::uint8:
      return 1;
    case DataType::float16:
    case DataType::bfloat16:
      return 2;
    case DataType::int32:
    case DataType::float32:
      return 4;
    case DataType::int64:
    case DataType::float64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DataType t) {
  switch (t) {
    case DataType::int8:
      return "int8";
    case DataType::uint8:
      return "uint8";
    case DataType::int32:
      return "int32";
    case DataType::int64:
      return "int64";
    case DataType::float16:
      return "float16";
    case DataType::bfloat16:
      return "bfloat16";
    case DataType::float32:
      return "float32";
    case DataType::float64:
      return "float64";
  }
  return "invalid";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::prod:
      return "prod";
    case ReduceOp::min:
      return "min";
    case ReduceOp::max:
      return "max";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::band:
      return "band";
    case ReduceOp::bor:
      return "bor";
    case ReduceOp::bxor:
      return "bxor";
  }
  return "invalid";
}

bool is_valid(DataType t) {
  return static_cast<int>(t) < kNumDataTypes;
}

bool is_valid(ReduceOp op) {
  return static_cast<int>(op) < kNumReduceOps;
}

bool is_integer(DataType t) {
  return t == DataType::int8 || t == DataType::uint8 || t == DataType::int32 ||
         t == DataType::int64;
}

bool is_bitwise(ReduceOp op) {
  return op == ReduceOp::band || op == ReduceOp::bor || op == ReduceOp::bxor;
}

bool reduces(ReduceOp op, DataType t) {
  return is_valid(op) && is_valid(t) && (!is_bitwise(op) || is_integer(t));
}

// Names are matched exactly (lower case), as written in the tables above.
bool parse_dtype(const char* name, DataType* out) {
  if (name == nullptr || out == nullptr) return false;
  for (const Alias& a : kDtypeAliases) {
    if (std::strcmp(name, a.name) == 0) {
      *out = a.type;
      return true;
    }
  }
  return false;
}

bool parse_reduce_op(const char* name, ReduceOp* out) {
  if (name == nullptr || out == nullptr) return false;
  for (int i = 0; i < kNumReduceOps; ++i) {
    const ReduceOp op = static_cast<ReduceOp>(i);
    if (std::strcmp(name, reduce_op_name(op)) == 0) {
      *out = op;
      return true;
    }
  }
  return false;
}

}  // namespace hcomm
