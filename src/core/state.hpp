// The persistent training state of one GPU: weights, gradients, optimizer state, master copy.
#pragma once

#include <vector>

#include "formula.hpp"
#include "stage_params.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

// Line items `params`, `grads`, `optimizer.*`, `master` (and the QLoRA/FP8 extras) for one
// GPU of a stage holding `sp`.
template <typename V>
Items<V> state_items(const PlanInput& in, const Derived& derived, const StageParams& sp);

// Bytes per parameter of the weights a recipe keeps on the GPU.
int param_bytes(const TrainingSpec& t);
// Bytes per parameter that ZeRO-3/FSDP gathers (and holds gathered): the 16-bit weights, or
// with fp8_all_gather the GEMM weights (a share `matrix_share` of the parameters) in 1 byte.
double gathered_bytes(const PlanInput& in, double matrix_share);
// The ranks the loss's vocabulary is split over: tp for a vocab-parallel cross-entropy
// (Megatron-LM, torchtitan's loss_parallel, Megatron-DeepSpeed), 1 where the LM head's output
// is gathered to every TP rank (Hugging Face's tp_plan: lm_head "colwise_rep").
int loss_vocab_split(const PlanInput& in);
// Bytes of the fp32 master copy per trainable parameter (0 when there is none).
int master_bytes(const TrainingSpec& t);
// PyTorch FSDP (framework pytorch or hf, ZeRO-3) in mixed precision: the sharded fp32
// parameter is the master, no 16-bit copy of the trained weights persists.
bool fp32_shard_is_master(const PlanInput& in);
// Bytes of optimizer state per trainable parameter as saved in a checkpoint.
double optimizer_bytes_per_param(const TrainingSpec& t);
// A full training checkpoint: weights, master copy and optimizer state, not gradients
// (docs/formulas.md#errata 3).
template <typename V>
V checkpoint_size(const PlanInput& in, const Derived& d);

}  // namespace trainledger
