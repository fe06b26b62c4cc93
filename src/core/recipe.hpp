// Low-precision training recipes (training.recipe): what each keeps in memory and what its
// quantization costs (docs/formulas.md#recipes).
#pragma once

#include "trainledger/plan_input.hpp"

namespace trainledger {

// The GPU multiplies block-scaled formats natively (MXFP8, NVFP4: compute capability 10.x,
// B200/GB200/B300/GB300; CDNA4, MI355X): a preset that lists an fp6 or fp4 peak. Transformer
// Engine also reads non-TN FP8 layouts there (transformer_engine/pytorch/utils.py,
// is_non_tn_fp8_gemm_supported: one FP8 copy serves both GEMM directions).
bool block_scaled_gpu(const GpuSpec& gpu);

// Bytes per GEMM weight element of the quantized copies a step keeps (both usages:
// row-wise for the forward GEMM, column-wise for dgrad; scale factors included).
double quantized_weight_bytes(const PlanInput& in);

// Bytes per element of a GEMM input Transformer Engine saves for the weight gradient (its
// column-wise copy, scales included).
double saved_input_bytes(const PlanInput& in);

// Bytes read and written per element each time an operand is quantized (amax passes, the
// casts, the transposed or column-wise copy, scales).
double cast_bytes(const PlanInput& in);

// Bytes per GEMM weight element a low-precision parameter all-gather moves
// (parallel.fp8_all_gather, parallel.fp8_param_gather).
double gathered_weight_bytes(const PlanInput& in);

}  // namespace trainledger
