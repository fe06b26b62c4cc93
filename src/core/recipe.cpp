// Low-precision recipes: sources are Transformer Engine (NVIDIA/TransformerEngine @ d0067d0),
// torchao (pytorch/ao @ 36027d8) and Megatron-Core (NVIDIA/Megatron-LM @ d98e8a6).
#include "recipe.hpp"

namespace trainledger {

namespace {

// One block-scaled copy: data plus one scale per block. MXFP8: 1 B and an E8M0 byte per 32
// elements; NVFP4: 4 bits and an E4M3 byte per 16 (transformer_engine/pytorch/tensor/
// mxfp8_tensor.py, nvfp4_tensor.py); FP8 blockwise: 1 B and an fp32 scale per 1 × 128 row
// block (float8_blockwise_tensor.py; weights' 128 × 128 blocks are negligible).
constexpr double k_mxfp8_copy = 1.0 + 1.0 / 32;
constexpr double k_nvfp4_copy = 0.5 + 1.0 / 16;
constexpr double k_blockwise_copy = 1.0 + 4.0 / 128;

}  // namespace

bool block_scaled_gpu(const GpuSpec& gpu) {
  return gpu.peak_flops.fp4 > 0 || gpu.peak_flops.fp6 > 0;
}

double quantized_weight_bytes(const PlanInput& in) {
  // te.Linear quantizes its weight on the first micro-batch and keeps it in _fp8_workspaces
  // for the step (module/base.py get_weight_workspace, is_first_microbatch), in both usages
  // training needs. Per-tensor FP8 (delayed, tensorwise): the data and its transpose on Hopper
  // (2 B), one copy where non-TN GEMMs exist (1 B); block-scaled copies are kept row-wise and
  // column-wise everywhere (the scales run along different axes).
  switch (in.training.recipe) {
    case Recipe::mxfp8:
      return 2 * k_mxfp8_copy;
    case Recipe::nvfp4:
      return 2 * k_nvfp4_copy;
    case Recipe::blockwise:
      return 2.0;
    case Recipe::none:
      return 0;
    default:
      return block_scaled_gpu(in.cluster.gpu) ? 1.0 : 2.0;
  }
}

double saved_input_bytes(const PlanInput& in) {
  // te.Linear and LayerNormLinear keep only the column-wise copy the weight gradient reads
  // (module/linear.py _Linear.forward: inputmat.update_usage(rowwise_usage=False)).
  switch (in.training.recipe) {
    case Recipe::mxfp8:
      return k_mxfp8_copy;
    case Recipe::nvfp4:
      return k_nvfp4_copy;  // after the random Hadamard transform
    case Recipe::blockwise:
      return k_blockwise_copy;
    default:
      return 1.0;
  }
}

double cast_bytes(const PlanInput& in) {
  const bool one_copy = block_scaled_gpu(in.cluster.gpu);
  switch (in.training.recipe) {
    case Recipe::delayed:
      // One fused cast-transpose with the amax reduced in the same kernel
      // (common/transpose/cast_transpose.cu): read 2 B, write 1 B (and 1 B transposed on
      // Hopper).
      return one_copy ? 3.0 : 4.0;
    case Recipe::rowwise:
      // torchao's rowwise scaling casts each operand twice, scaled along each axis (the
      // backward needs the other axis: float8/float8_linear.py matmul_with_hp_or_float8_args):
      // each pass reads 2 B for its amax and 2 B for the cast and writes 1 B.
      return 10.0;
    case Recipe::blockwise:
      // One kernel: local block amax, row-wise and column-wise copies with their scales.
      return 2.0 + 2 * k_blockwise_copy;
    case Recipe::mxfp8:
      // Transformer Engine: one kernel (quantize BIDIMENSIONAL, common/util/cast_kernels.cuh)
      // reads 2 B and writes both copies with their E8M0 scales. torchao casts each operand
      // twice from 16 bits, along dim 0 for one GEMM and dim 1 for the other
      // (prototype/moe_training/mxfp8_linear.py mx_mm: the input and weight dim 0 in forward,
      // dim 1 in backward; the output gradient both ways).
      return in.training.framework == Framework::megatron ||
                     in.training.framework == Framework::deepspeed
                 ? 2.0 + 2 * k_mxfp8_copy
                 : 2 * (2.0 + k_mxfp8_copy);
    case Recipe::nvfp4:
      // An amax pass for the per-tensor second-level scale (read 2 B), then the fused Hadamard
      // transform and cast (read 2 B) writing both 4-bit copies with their E4M3 scales.
      return 4.0 + 2 * k_nvfp4_copy;
    case Recipe::tensorwise:
      // Current scaling: an amax pass (read 2 B), the cast (read 2 B, write 1 B) and the
      // transposed copy the backward GEMMs read (read 1 B, write 1 B) (torchao
      // float8/float8_scaling_utils.py hp_tensor_to_float8_dynamic; Transformer Engine's
      // Float8CurrentScaling: compute_amax, then cast_transpose). Transformer Engine on a GPU
      // with non-TN FP8 GEMMs writes no transposed copy (5 B).
      return one_copy && in.training.framework == Framework::megatron ? 5.0 : 7.0;
    case Recipe::none:
      return 0;
  }
  return 0;
}

double gathered_weight_bytes(const PlanInput& in) {
  switch (in.training.recipe) {
    case Recipe::mxfp8:
      // Megatron-Core gathers MXFP8 parameters in 16 bits into the gradient buffer and
      // quantizes them after (megatron/core/fp8_utils.py, --reuse-grad-buf-for-mxfp8-param-ag).
      return 2.0;
    case Recipe::nvfp4:
      return k_nvfp4_copy;  // --fp4-param-gather: the packed row-wise copy
    default:
      return 1.0;  // the row-wise FP8 data (blockwise: its columnwise copy is rebuilt locally)
  }
}

}  // namespace trainledger
