// Element-wise reduction kernels: the one place hcomm combines two buffers of elements.
//
// Each call picks its loop once from (dtype, op); the loops themselves never branch on either.
// The loops are plain code the compiler vectorises (this file is built with -O3), compiled twice:
// for baseline x86-64 (SSE2) and for AVX2 + F16C, which is used when the CPU has both (checked
// once, at the first call). float16 converts with F16C instructions in the AVX2 build and with
// scalar code in the baseline one; bfloat16 widens with integer shifts and rounds back with
// integer arithmetic. Both builds give the same bits.
//
// Results, per element:
//  - Integers: sum and prod wrap around (two's complement in the element type); min/max exact.
//  - float16 and bfloat16 are widened to float, combined, and rounded back to nearest even. float
//    carries at least 2p + 2 bits for both formats, so this is the correctly rounded result.
//  - min/max on floating types: if either operand is NaN, the result is NaN (which NaN payload is
//    unspecified). Between operands that compare equal (-0 and +0) the second one is returned.
//  - avg reduces as sum; finalize_average() divides once all ranks are in (see ReduceOp::avg).
//  - band, bor, bxor: integer types only; for a floating type nothing is written.
//
// Buffers must be aligned to their element size (no vector alignment is needed) and must not
// partially overlap; an output may be exactly the same pointer as an input. Any thread may call.
// @pre reduces(op, dtype); otherwise nothing is written.
#pragma once

#include <cstddef>

#include "hcomm/types.hpp"

namespace hcomm::collectives {

/// dst[i] = dst[i] (op) src[i] for i < count. avg reduces as sum (see finalize_average).
void reduce_into(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op);

/// out[i] = a[i] (op) b[i] for i < count; out may alias a or b (or both).
void reduce(void* out, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op);

/// After an avg reduced as sum over `nranks` ranks: buf[i] = buf[i] / nranks. Integers truncate
/// toward zero (exact for every nranks). Floating types divide by nranks as a float (float64: as a
/// double) and round to nearest even: the correctly rounded quotient for nranks <= 2^24.
/// @pre nranks >= 1 (nothing is done for nranks <= 1).
void finalize_average(void* buf, size_t count, DataType dtype, int nranks);

namespace internal {

/// True when this CPU runs the AVX2 + F16C kernels that the public functions prefer.
bool has_avx2_f16c();
/// reduce() and finalize_average() built for baseline x86-64 only (SSE2 loops, scalar float16
/// conversions), whatever the CPU has. For tests: both builds must give the same bits.
void reduce_portable(void* out, const void* a, const void* b, size_t count, DataType dtype,
                     ReduceOp op);
void finalize_average_portable(void* buf, size_t count, DataType dtype, int nranks);

}  // namespace internal
}  // namespace hcomm::collectives
