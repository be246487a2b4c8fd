// The fused receive kernel of the lossy codecs: a piece of fp16/bf16 wire values decoded and
// combined with the local operand in one pass, block by block in L1 (the decoded block never
// reaches memory), in full precision: float32 (float64) arithmetic as reduce_kernels.hpp does it.
#pragma once

#include <cstddef>

#include "compression/codec.hpp"
#include "hcomm/types.hpp"

namespace hcomm::collectives {

/// dst[i] = round(round(a[i]) (op) decode(wire[i])) for i < count, `round` being the rounding
/// to `codec` (the result and the local operand hold what a peer holds of them: the same bits on
/// every rank, whichever of them computed a value). `wire` holds count 16-bit values of `codec`
/// (fp16 or bf16) at any alignment; dst may alias a. avg combines as sum. A block whose values
/// overflow fp16 is rounded to bf16, one that overflows bf16 not at all (see half_codec.hpp).
void decode_reduce(compression::Codec codec, const void* wire, size_t count, DataType dtype,
                   ReduceOp op, void* dst, const void* a);
/// dst[i] = round(round(a[i]) (op) round(b[i])): what a receive that reduces does with a raw
/// frame (one within a host, or below the threshold) under a lossy mode, so that the value it
/// computes is the one any placement of the ranks gives. dst may alias a.
void reduce_rounded(compression::Codec codec, void* dst, const void* a, const void* b, size_t count,
                    DataType dtype, ReduceOp op);
/// buf[i] = round(buf[i]) to `codec` (fp16, bf16; its overflow fallback), in place: what an
/// operation under a lossy codec does to a value it computes locally (an average) so that it
/// equals what a peer gets of it.
void round_to(compression::Codec codec, void* buf, size_t count, DataType dtype);
/// dst[i] = decode(wire[i]): the plain receive of a lossy payload (any alignment of `wire`).
void decode_into(compression::Codec codec, const void* wire, size_t count, DataType dtype,
                 void* dst);

}  // namespace hcomm::collectives
