// The stack's conventions a plan follows, as the reports list them (docs/formulas.md#frameworks).
#include <string>
#include <vector>

#include "state.hpp"
#include "trainledger/model.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

std::vector<Convention> conventions(const PlanInput& in) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  const Framework f = t.framework;
  const bool torch = f == Framework::pytorch || f == Framework::hf;
  const bool mixed = t.precision != DType::fp32 && t.master_weights;
  std::vector<Convention> out;
  auto derived = [&](const char* key) {
    const Source s = in.provenance.of(key);
    return s == Source::derived || s == Source::default_value;
  };
  auto add = [&](std::string effect, const char* key = "") {
    if (key[0] != '\0' && !derived(key)) return;
    out.push_back({std::move(effect), key});
  };
  if (mixed && t.grad_dtype == DType::fp32)
    add(f == Framework::megatron    ? "fp32 gradients (main_grad), 4 B/param"
        : f == Framework::deepspeed ? "fp32 gradients (BF16_Optimizer), beside 16-bit param.grad"
                                    : "fp32 gradients (the fp32 parameters' .grad), 4 B/param",
        "training.grad_dtype");
  if (mixed && t.grad_dtype != DType::fp32 && f != Framework::generic)
    add("16-bit gradients (ZeRO-2/3 partitions)", "training.grad_dtype");
  if (fp32_shard_is_master(in))
    add("no 16-bit weight copy: the fp32 FSDP shard is the master (16 B/param with AdamW)");
  if (torch && p.zero >= 3 && p.pp > 1 && p.grad_sync == GradSync::last_micro_batch)
    add("FSDP under pipelining: gradients stay unsharded until the last micro-batch",
        "parallel.grad_sync");
  if (torch && p.zero >= 3 && p.pp > 1 && !p.reshard_after_forward)
    add(p.grad_sync == GradSync::last_micro_batch
            ? "FSDP under pipelining: every unit stays gathered from its first forward to the "
              "last backward (one all-gather per step)"
            : "FSDP under pipelining: every unit stays gathered from forward to backward",
        "parallel.reshard_after_forward");
  if (torch && p.pp > 1 && p.schedule != Schedule::gpipe && p.keep_stage_outputs)
    add("pipelining keeps every micro-batch's output to the end of the step: the last stage "
        "holds the logits of all of them",
        "parallel.keep_stage_outputs");
  if (t.eager_norm) add("eager norms save an fp32 copy of their input", "training.norm_impl");
  if (f == Framework::hf && p.tp > 1)
    add("under TP the LM head's output is gathered to every rank");
  if (f == Framework::hf && t.attention == Attention::eager && t.precision != DType::fp32)
    add("autocast: eager attention's softmax runs and is saved in fp32");
  if (t.loss != Loss::fused)
    add(t.loss_dtype == DType::fp32 ? "the loss upcasts the logits to fp32"
                                    : "the loss runs on the 16-bit logits (no upcast)",
        "training.loss_dtype");
  if (f == Framework::megatron) {
    if (t.fused_swiglu && is_gated(in.model.ffn_act))
      add("fused SwiGLU saves the gate and up outputs only");
    if (t.fused_elementwise) add("fused element-wise kernels (Transformer Engine)");
    if (t.loss == Loss::standard)
      add("vocab-parallel cross-entropy in place: 6 B per logit at the peak");
    if (p.gradient_as_bucket_view)
      add("buckets are views of one contiguous gradient buffer",
          "parallel.gradient_as_bucket_view");
    if (p.offload == Offload::optimizer)
      add("--optimizer-cpu-offload: optimizer state and master to the host, main_grad stays");
  }
  if (f == Framework::deepspeed) {
    add("buckets of 5e8 elements (reduce_bucket_size, allgather_bucket_size)",
        "parallel.bucket_size");
    if (p.zero >= 3) add("ZeRO-3 keeps up to 1e9 gathered parameters for reuse");
  }
  if (torch && p.offload == Offload::optimizer_params)
    add("FSDP CPUOffload: parameters (quantized ones too), gradients and optimizer on the host");
  if (f == Framework::generic)
    add("textbook state: gradients in the weights' dtype, 14 B/param checkpoints");
  return out;
}

}  // namespace trainledger
