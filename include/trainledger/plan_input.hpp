// Typed, validated inputs of a plan: the five sections of a plan file.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trainledger/model.hpp"
#include "trainledger/units.hpp"

namespace trainledger {

enum class Optimizer { adamw, adamw_8bit, sgd, sgd_momentum, lion, adafactor };
enum class Recompute { none, selective, op, full };
enum class Attention { flash, eager };
enum class Finetune { full, lora, qlora };
// dualpipev: DeepSeek's DualPipe cut in half (a V of 2 chunks per device; PyTorch's
// torch.distributed.pipelining ScheduleDualPipeV).
enum class Schedule { one_f_one_b, gpipe, interleaved, zb_h1, dualpipev };
enum class GradSync { every_micro_batch, last_micro_batch };
enum class Offload { none, optimizer, optimizer_params };
// How the loss is computed: PyTorch cross-entropy on an fp32 copy of the full logits, or a
// chunked/fused linear + cross-entropy that never materializes them (Liger, torchtune).
enum class Loss { standard, chunked, fused };
// How the optimizer's step visits the parameter tensors (torch/optim/adamw.py): one Python
// loop over the tensors with a few kernels each (foreach = False), multi-tensor foreach ops
// (PyTorch's default on CUDA), or one fused multi-tensor kernel (fused = True, apex's and
// Transformer Engine's FusedAdam, DeepSpeed's FusedAdam).
enum class OptimizerImpl { foreach, for_loop, fused };
enum class CheckpointFormat { sharded, gathered };
// How a MoE layer's tokens reach their experts across the expert-parallel group
// (parallel.ep_dispatch): NCCL's all-to-all (Megatron-Core's alltoall dispatcher, the default),
// DeepEP's internode kernels (one copy per remote node, forwarded over NVLink), or Megatron-Core's
// allgather dispatcher (the group's tokens gathered whole, the outputs reduce-scattered).
enum class EpDispatch { nccl, deepep, allgather };
// What selective recompute runs again (Megatron-LM --recompute-modules,
// transformer_config.py recompute_modules): bits of TrainingSpec::recompute_modules.
enum class RecomputeModule : std::uint8_t {
  core_attn = 1,       // the attention core (the planner's selective recompute)
  layernorm = 2,       // a norm run as its own module (a MoE layer's pre-MLP norm)
  mlp = 4,             // a dense layer's MLP
  moe = 8,             // a MoE layer whole: router, dispatch, experts, combine, shared experts
  moe_act = 16,        // the routed experts' activation function
  shared_experts = 32  // the shared experts
};
constexpr bool recomputes(std::uint8_t modules, RecomputeModule m) {
  return (modules & static_cast<std::uint8_t>(m)) != 0;
}
// NCCL's algorithm for the plan's collectives (parallel.allreduce): its tuner's pick per call
// (ring or tree for an all-reduce across nodes, ring or PAT for an all-gather or reduce-scatter
// over one rank per node), rings only (NCCL_ALGO=ring), or the data-parallel all-reduce as a tree.
enum class NcclAlgo { tuner, ring, tree };
// How low-precision GEMM operands are scaled (training.recipe; docs/formulas.md#recipes): FP8
// with one scale per tensor from an amax history (delayed) or from the tensor itself
// (tensorwise: current scaling), one per row (rowwise, torchao), per 1 x 128 and 128 x 128
// blocks (blockwise, DeepSeek-V3), per 32 elements with E8M0 scales (mxfp8), or 4-bit
// values per 16 elements with E4M3 scales and a per-tensor scale (nvfp4,
// training.precision = "fp4"). none: the GEMMs run in the training precision.
enum class Recipe { none, delayed, tensorwise, rowwise, blockwise, mxfp8, nvfp4 };
// The training stack whose conventions a plan follows (docs/formulas.md#frameworks): generic
// (the source documents' conventions), PyTorch (AMP, DDP, FSDP, torchtitan), Hugging Face
// Trainer (PyTorch plus the transformers modeling code), Megatron-LM, or DeepSpeed.
enum class Framework { generic, pytorch, hf, megatron, deepspeed };

// LoRA target matrices, by their Hugging Face Llama names.
enum class LoraTarget { q, k, v, o, gate, up, down };

struct TrainingSpec {
  Framework framework = Framework::generic;
  // Why training.framework = "auto" chose `framework` ("" when the plan named it).
  std::string framework_basis;
  std::int64_t seq_len = 2048;
  std::int64_t document_length = 0;  // packed documents' mean length; 0: one per sequence
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 0;  // sequences per optimizer step
  std::int64_t grad_accum = 0;    // as given (0: from global_batch); derived.grad_accum is used
  // The GEMMs' precision: fp8 also for the 4-bit recipe (recipe nvfp4, written "fp4").
  DType precision = DType::bf16;
  Recipe recipe = Recipe::none;
  bool master_weights = true;
  DType grad_dtype = DType::bf16;
  // The dtype gradients are reduced in across data-parallel ranks (FSDP2's
  // MixedPrecisionPolicy.reduce_dtype, DeepSpeed's communication_data_type).
  DType reduce_dtype = DType::bf16;
  Optimizer optimizer = Optimizer::adamw;
  OptimizerImpl optimizer_impl = OptimizerImpl::foreach;
  DType optimizer_dtype = DType::fp32;
  Recompute recompute = Recompute::none;
  double recompute_layers = 1.0;
  // Selective recompute's modules (training.recompute_modules, Megatron-LM
  // --recompute-modules): bits of RecomputeModule; the attention core alone by default.
  std::uint8_t recompute_modules = 1;
  Attention attention = Attention::flash;
  double dropout = 0.0;
  // MoE routing: a capacity factor (> 0: an expert takes at most c × its mean share of the
  // routed tokens, the rest are dropped) or, dropless, the busiest rank's routed tokens over
  // the mean (docs/formulas.md#moe-load).
  double moe_capacity_factor = 0;
  double moe_imbalance = 1.25;
  Finetune finetune = Finetune::full;
  int lora_rank = 8;
  std::vector<LoraTarget> lora_targets;
  bool double_quant = true;
  double trainable_params = 0;  // 0: every parameter trains (full fine-tune / pre-training)
  double tokens = 0;            // total training tokens, 0 when not given
  Loss loss = Loss::standard;
  // The dtype of the standard/chunked loss's log-softmax and gradients (fp32: upcast logits).
  DType loss_dtype = DType::fp32;
  bool eager_norm = false;  // norm_impl = "eager": fp32 upcast inside the norm
  // A fused SwiGLU saves its input only (Megatron-LM's bias_swiglu_impl), not the activation's
  // output as well (PyTorch eager).
  bool fused_swiglu = false;
  // torch.compile: Inductor fuses element-wise chains into one kernel each and its min-cut
  // partitioner recomputes cheap pointwise results in backward instead of saving them.
  bool compile = false;
  // The layers' forward and backward are captured as CUDA graphs and replayed (Megatron-LM
  // --enable-cuda-graph / --external-cuda-graph, torch.compile mode="reduce-overhead"): one
  // launch per captured layer instead of one host dispatch per kernel.
  bool cuda_graphs = false;
  // PYTORCH_ALLOC_CONF=expandable_segments:True: the caching allocator grows segments in
  // place instead of allocating one per size it cannot fit (less reserved over allocated).
  bool expandable_segments = false;
  // Hugging Face's config.use_cache in training (its gradient checkpointing off): the forward
  // returns every layer's keys and values.
  bool use_cache = false;
  // The loop holds the model's output object through backward (its logits, and the cache).
  bool keep_outputs = false;
  // recompute = op: the save list keeps the attention kernel's output and log-sum-exp (false:
  // the kernel is not on the list and runs again in backward; torchtitan on Blackwell between
  // 3b85aa31f and b39377f9f, whose list named the flash and efficient kernels, not cuDNN's).
  bool op_saves_attention = true;
  // Element-wise chains run as fused kernels that read their inputs and write their outputs
  // once: torch.compile, or Megatron-LM with Transformer Engine (norms fused into the next
  // GEMM's input, fused bias-activation, RoPE and softmax kernels).
  bool fused_elementwise = false;
  double lora_dropout = 0;
  // Megatron-Core's activation offloading (--cpu-offloading-num-layers): the saved activations
  // of the first k layers go to pinned host memory in forward and come back in backward
  // (Transformer Engine's cpu_offload.py; docs/formulas.md#activation-offload).
  int activation_offload_layers = 0;
  int data_workers = 0;           // data-loader worker processes per GPU rank
  double data_worker_memory = 0;  // host bytes per worker
};

struct ParallelSpec {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
  int ep = 1;
  // Expert tensor-parallel size (Megatron-Core --expert-tensor-parallel-size, torchtitan etp):
  // each routed expert is split over etp ranks; 0 means tp, Megatron-Core's default.
  int etp = 0;
  bool sequence_parallel = false;
  int zero = 0;
  int zero_shard_size = 0;  // 0: the whole dp × cp group (no HSDP)
  GradSync grad_sync = GradSync::every_micro_batch;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;
  std::vector<int> stage_layers;  // empty: layers / pp each
  Offload offload = Offload::none;
  double bucket_size = 25.0 * 1024 * 1024;  // DDP / ZeRO-1/2 gradient bucket, bytes
  bool gradient_as_bucket_view = false;     // PyTorch DDP: grads live in the buckets
  // DeepSpeed's ZeRO knobs, in elements (deepspeed/runtime/zero/config.py defaults):
  // allgather_bucket_size (ZeRO-1/2 parameter all-gather), stage3_max_live_parameters and
  // stage3_prefetch_bucket_size (ZeRO-3 gathered parameters kept and fetched ahead).
  double allgather_bucket = 5e8;
  double zero3_live_params = 1e9;
  double zero3_prefetch = 5e7;
  // FSDP2 fully_shard(reshard_after_forward): false keeps every unit gathered from its forward
  // to its backward (no second all-gather; torchtitan's default under pipeline parallelism).
  bool reshard_after_forward = true;
  // FSDP2's units at the model's ends: "split" (torchtitan since 83e694105, 2025-07-28,
  // apply_fsdp): the token embedding is a unit resharded after its forward and the final norm
  // with the LM head a unit that stays gathered through its backward; "model": all three sit in
  // the root unit, gathered from the first forward to the end of backward.
  bool fsdp_split_root = false;
  // PyTorch FSDP's implementation (parallel.fsdp_version): 2 = fully_shard (FSDP2), 1 =
  // FullyShardedDataParallel's flat parameters (FSDP1); it decides the copies around the
  // collectives (docs/formulas.md#fsdp-copies).
  int fsdp_version = 2;
  // PyTorch's pipelining: the schedule keeps every micro-batch's stage output to the end of the
  // step to return them (step(return_outputs=True), its default); false: only the one in use.
  bool keep_stage_outputs = true;
  // FSDP1 limit_all_gathers: false lets the CPU thread issue the all-gathers of units ahead of
  // the GPU (PyTorch 2.0's default), so up to every unit of the stage is gathered at once.
  bool limit_all_gathers = true;
  // ZeRO-3/FSDP with FP8: the GEMM weights are cast to FP8 on their shard and all-gathered in
  // FP8 (torchtitan enable_fsdp_float8_all_gather, torchao float8).
  bool fp8_all_gather = false;
  // Megatron-LM --fp8-param-gather: the GEMM weights are kept in FP8 only (no bf16 copy) and
  // the distributed optimizer gathers them in FP8.
  bool fp8_param_gather = false;
  // Rank order, innermost first: a group whose ranks span more than a node uses the
  // inter-node link.
  std::vector<std::string> placement = {"tp", "cp", "dp", "pp"};
  bool overlap_dp = true;   // DP/ZeRO traffic overlapped with compute (but the last bucket)
  bool overlap_tp = false;  // TP collectives overlapped with compute
  bool overlap_cp = true;   // ring-attention exchange overlapped with attention
  bool overlap_param_gather = false;  // ZeRO-1/2 parameter all-gather behind the next forward
  EpDispatch ep_dispatch = EpDispatch::nccl;  // parallel.ep_dispatch
  NcclAlgo nccl_algo = NcclAlgo::tuner;       // parallel.allreduce
};

// Peak dense FLOP/s per compute dtype; 0 where the GPU has no such mode.
struct PeakFlops {
  double fp32 = 0, tf32 = 0, bf16 = 0, fp16 = 0, fp8 = 0;
  // The 6- and 4-bit block-scaled formats' peaks (MXFP6, MXFP4, NVFP4): listed by the presets
  // and `trainledger gpus`; training.precision = "fp4" (recipe nvfp4) runs its GEMMs at fp4's.
  double fp6 = 0, fp4 = 0;
  bool any() const { return fp32 > 0 || tf32 > 0 || bf16 > 0 || fp16 > 0 || fp8 > 0; }
  // Every dtype with its peak, in the order plan files and reports list them.
  std::array<std::pair<const char*, double>, 7> entries() const {
    return {{{"fp32", fp32},
             {"tf32", tf32},
             {"bf16", bf16},
             {"fp16", fp16},
             {"fp8", fp8},
             {"fp6", fp6},
             {"fp4", fp4}}};
  }
};
// The dense peak for GEMMs in `t` (0: the GPU has no such mode; int8 has none here).
double peak_of(const PeakFlops& f, DType t);

struct GpuSpec {
  std::string name;
  std::int64_t memory_bytes = 0;  // as the device reports it (nvidia-smi total)
  PeakFlops peak_flops;
  double memory_bandwidth = 0;  // bytes/s
  // Streaming multiprocessors (AMD: compute units); 0: not known. An NCCL kernel takes one per
  // channel from the compute kernels it overlaps (docs/formulas.md#nccl-contention).
  int sms = 0;
};

struct ClusterSpec {
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  // GPUs joined by one NVLink fabric: a node (0) or several nodes' trays behind NVLink switches
  // (GB200 NVL72: 18 trays of 4). Collectives inside it run at the intra-node rates.
  int nvlink_domain = 0;
  // The fabric above the nodes: leaves of `leaf_nodes` nodes (0: one tier, non-blocking) whose
  // uplinks to the spine carry 1/oversubscription of their NICs' rate.
  int leaf_nodes = 0;
  double oversubscription = 1;
  double intra_node_bandwidth = 0;  // bytes/s, achievable busbw per GPU
  // busbw of all-gather, reduce-scatter and all-to-all inside a node where it differs from
  // all-reduce's (NVLink SHARP accelerates all-reduce on Hopper); 0: intra_node_bandwidth.
  double intra_node_gather_bandwidth = 0;
  double intra_node_latency = 0;  // s
  double inter_node_bandwidth = 0;
  double inter_node_latency = 0;
  // Per-step latencies of NCCL's Simple protocol where they exceed the ones above (0: the
  // same, one protocol): collectives take the faster of LL and Simple
  // (docs/formulas.md#collectives).
  double intra_node_simple_latency = 0;
  double inter_node_simple_latency = 0;
  // The busbw share the low-latency protocol reaches then (NCCL's LL: 0.5).
  double intra_node_ll_share = 0.5;
  double inter_node_ll_share = 0.5;
  // Fixed overheads per GPU (kind "assumed" until calibration measures them).
  double cuda_context = 0;         // bytes: driver context and loaded kernels
  int nccl_channels = 16;          // channels per communicator
  double nccl_buffer = 0;          // bytes per connection per channel (all protocols)
  double cublas_workspace = 0;     // bytes
  double fragmentation = 0.1;      // allocator reserve as a share of the dynamic memory
  double matmul_efficiency = 0.7;  // achieved share of the dense peak FLOP/s in GEMMs (assumed)
  double activation_factor = 1;    // measured per-layer activations over the ledger's (replica)
  double fp8_matmul_ratio = 1;     // fp8 GEMMs' share of their peak over bf16's (probe-measured)
  double fused_attention_efficiency = 0;  // Transformer Engine's fused attention (megatron)
  double attention_efficiency = 0;        // the same in flash attention (executed FLOPs); 0: GEMMs'
  double memory_efficiency = 0.72;        // achieved share of HBM bandwidth, element-wise (fitted)
  // Host time per kernel (docs/formulas.md#host): an eager PyTorch op dispatched from Python
  // (Python, autograd recording, the ATen dispatcher, cudaLaunchKernel), and a kernel launched
  // without Python op dispatch (the autograd engine's backward nodes, compiled graphs).
  double op_overhead = 20e-6;
  double launch_overhead = 5e-6;
  double host_memory = 0;     // bytes per node; 0: not given
  double pcie_bandwidth = 0;  // bytes/s between a GPU and host memory, each direction
  // bytes/s of a copy between a GPU and pageable host memory (tensor.to("cpu") and back)
  double pageable_bandwidth = 1.9e9;
  double host_memory_bandwidth = 0;  // bytes/s of a node's DRAM, achievable
  double host_process_memory = 0;    // bytes of host memory per rank for the runtime
  int world_size() const { return nodes * gpus_per_node; }
  // The job's NVLink domain in GPUs: the node, or with nvlink_domain the job's share of a
  // domain: a job larger than one is placed in equal segments of whole nodes, the largest
  // that divides its nodes and fits a domain (Megatron-Bridge's GB200 launcher,
  // scripts/performance/utils/executors.py: sbatch --segment; 64 nodes of 4 GPUs in an NVL72
  // rack of 18 trays: segments of 16, 64 GPUs).
  int domain() const {
    if (nvlink_domain <= gpus_per_node || gpus_per_node < 1 || nodes < 1) return gpus_per_node;
    const int trays = nvlink_domain / gpus_per_node;
    if (nodes <= trays) return nodes * gpus_per_node;  // the whole job in one domain
    // The largest divisor of the nodes that fits a domain: the divisor pairs up to √nodes.
    int best = 1;
    for (int i = 1; static_cast<long long>(i) * i <= nodes; ++i) {
      if (nodes % i != 0) continue;
      if (i <= trays) best = std::max(best, i);
      if (nodes / i <= trays) best = std::max(best, nodes / i);
    }
    return best * gpus_per_node;
  }
};

struct CheckpointSpec {
  double storage_bandwidth = 0;  // bytes/s, aggregate
  double restart_time = 0;       // s
  double gpu_failure_rate = 0;   // failures per GPU-hour
  double node_failure_rate = 0;  // failures per node-hour (host, network, storage), if apart
  CheckpointFormat format = CheckpointFormat::sharded;
  double interval = 0;  // s between checkpoints as planned; 0: not given
};

// RL post-training (docs/rl.md): the actor trains with the plan's own layout; a rollout engine
// generates the samples, and the other roles (reference, critic, reward model) run forward
// passes of the actor's architecture.
enum class RlAlgorithm { grpo, ppo, dapo, rloo, dpo };
enum class RlPlacement { colocated, split };
enum class RlEngine { vllm, sglang };
enum class RlSleep { offload, discard, none };
// How the trainer's offloaded state is copied: all through pageable memory (tensor.to("cpu")),
// the weights through pinned buffers and the optimizer state through pageable memory, or all
// through pinned buffers.
enum class RlOffloadCopy { pageable, pinned_weights, pinned };
// Where the frozen models' weights (reference, reward model) live between their passes.
enum class RlFrozen { resident, offload, swap };

struct RlSpec {
  bool enabled = false;  // the plan has an [rl] section
  RlAlgorithm algorithm = RlAlgorithm::grpo;
  std::int64_t prompts = 0;
  std::int64_t samples = 1;  // responses per prompt
  std::int64_t prompt_length = 1024;
  std::int64_t response_length = 2048;
  double mean_prompt_length = 0;
  double mean_response_length = 0;
  std::int64_t mini_batch_prompts = 0;
  int epochs = 1;
  RlPlacement placement = RlPlacement::colocated;
  int rollout_gpus = 0;  // split: GPUs that generate, beside the cluster's
  bool off_policy = false;
  RlEngine engine = RlEngine::vllm;
  int rollout_tp = 1;
  double memory_fraction = 0.5;
  std::int64_t max_num_seqs = 256;
  std::int64_t max_batched_tokens = 8192;
  DType kv_dtype = DType::bf16;
  bool cuda_graphs = true;
  RlSleep sleep = RlSleep::discard;
  double sync_bucket = 2048.0 * 1024 * 1024;  // bytes: the weight sync's bucket
  double decode_efficiency = 0.73;            // share of the HBM rate a decode step reaches
  bool async_scheduling = true;               // the engine's host work overlaps its steps
  double step_overhead = 0.004;  // s of host time per engine step the GPUs wait for (not async)
  double generation_rounds = 1;  // generation batches per step (DAPO's dynamic sampling)
  bool offload_params = false;
  bool offload_optimizer = false;
  RlOffloadCopy offload_copy = RlOffloadCopy::pageable;
  bool old_log_probs = true;  // the actor's old log-prob pass runs (else the engine's stand in)
  bool reference = true;
  bool reward_model = false;
  RlFrozen frozen_weights = RlFrozen::resident;
  std::int64_t log_prob_micro_batch = 1;
  bool log_prob_entropy = true;       // the actor's old log-prob pass also takes the entropy
  bool response_logits_only = false;  // the log-prob passes keep the response's logits only

  bool rollout() const { return enabled && algorithm != RlAlgorithm::dpo; }
  bool critic() const { return enabled && algorithm == RlAlgorithm::ppo; }
  std::int64_t sequences() const { return prompts * samples; }
};

// The source of every resolved key ("cluster.cuda_context" → preset), sorted by key. Keys
// without an entry count as defaults.
class Provenance {
 public:
  Source of(std::string_view key) const;
  void set(std::string_view key, Source s);
  std::size_t size() const { return m_keys.size(); }

 private:
  std::vector<std::pair<std::string, Source>> m_keys;
};

struct PlanInput {
  ModelSpec model;
  TrainingSpec training;
  ParallelSpec parallel;
  ClusterSpec cluster;
  CheckpointSpec checkpoint;
  RlSpec rl;
  Provenance provenance;
};

}  // namespace trainledger

namespace trainledger {

// The names plan files use for each choice (one table, read by the parser and the reports).
std::string_view to_string(Optimizer o);
std::string_view to_string(Recompute r);
std::string_view to_string(Attention a);
std::string_view to_string(Finetune f);
std::string_view to_string(Schedule s);
std::string_view to_string(GradSync g);
std::string_view to_string(Offload o);
std::string_view to_string(LoraTarget t);
std::string_view to_string(FfnAct a);
std::string_view to_string(NormKind n);
std::string_view to_string(BiasKind b);
std::string_view to_string(QkNorm q);
std::string_view to_string(Loss l);
std::string_view to_string(OptimizerImpl o);
std::string_view to_string(CheckpointFormat f);
std::string_view to_string(EpDispatch d);
std::string_view to_string(NcclAlgo a);
std::string_view to_string(Recipe r);
// training.precision as a plan writes it: "fp4" for the 4-bit recipe, else the dtype.
std::string_view precision_name(const TrainingSpec& t);
std::string_view to_string(Framework f);
std::string_view to_string(RlAlgorithm a);
std::string_view to_string(RlPlacement p);
std::string_view to_string(RlEngine e);
std::string_view to_string(RlSleep s);
std::string_view to_string(RlOffloadCopy c);
std::string_view to_string(RlFrozen f);

// Every value of each enum, for reverse lookups (overloads picked by a dummy argument).
constexpr std::array<Optimizer, 6> all_values(Optimizer) {
  return {Optimizer::adamw,        Optimizer::adamw_8bit, Optimizer::sgd,
          Optimizer::sgd_momentum, Optimizer::lion,       Optimizer::adafactor};
}
constexpr std::array<Recompute, 4> all_values(Recompute) {
  return {Recompute::none, Recompute::selective, Recompute::op, Recompute::full};
}
constexpr std::array<Attention, 2> all_values(Attention) {
  return {Attention::flash, Attention::eager};
}
constexpr std::array<Finetune, 3> all_values(Finetune) {
  return {Finetune::full, Finetune::lora, Finetune::qlora};
}
constexpr std::array<Schedule, 5> all_values(Schedule) {
  return {Schedule::one_f_one_b, Schedule::gpipe, Schedule::interleaved, Schedule::zb_h1,
          Schedule::dualpipev};
}
constexpr std::array<GradSync, 2> all_values(GradSync) {
  return {GradSync::every_micro_batch, GradSync::last_micro_batch};
}
constexpr std::array<Offload, 3> all_values(Offload) {
  return {Offload::none, Offload::optimizer, Offload::optimizer_params};
}
constexpr std::array<LoraTarget, 7> all_values(LoraTarget) {
  return {LoraTarget::q,    LoraTarget::k,  LoraTarget::v,   LoraTarget::o,
          LoraTarget::gate, LoraTarget::up, LoraTarget::down};
}
constexpr std::array<FfnAct, 4> all_values(FfnAct) {
  return {FfnAct::swiglu, FfnAct::geglu, FfnAct::gelu, FfnAct::relu};
}
constexpr std::array<NormKind, 3> all_values(NormKind) {
  return {NormKind::rmsnorm, NormKind::layernorm, NormKind::none};
}
constexpr std::array<BiasKind, 4> all_values(BiasKind) {
  return {BiasKind::none, BiasKind::qkv, BiasKind::mlp, BiasKind::all};
}
constexpr std::array<QkNorm, 3> all_values(QkNorm) {
  return {QkNorm::none, QkNorm::head, QkNorm::full};
}
constexpr std::array<OptimizerImpl, 3> all_values(OptimizerImpl) {
  return {OptimizerImpl::foreach, OptimizerImpl::for_loop, OptimizerImpl::fused};
}
constexpr std::array<Loss, 3> all_values(Loss) {
  return {Loss::standard, Loss::chunked, Loss::fused};
}
constexpr std::array<CheckpointFormat, 2> all_values(CheckpointFormat) {
  return {CheckpointFormat::sharded, CheckpointFormat::gathered};
}
constexpr std::array<Recipe, 7> all_values(Recipe) {
  return {Recipe::none,      Recipe::delayed, Recipe::tensorwise, Recipe::rowwise,
          Recipe::blockwise, Recipe::mxfp8,   Recipe::nvfp4};
}
constexpr std::array<Framework, 5> all_values(Framework) {
  return {Framework::generic, Framework::pytorch, Framework::hf, Framework::megatron,
          Framework::deepspeed};
}
constexpr std::array<RlAlgorithm, 5> all_values(RlAlgorithm) {
  return {RlAlgorithm::grpo, RlAlgorithm::ppo, RlAlgorithm::dapo, RlAlgorithm::rloo,
          RlAlgorithm::dpo};
}
constexpr std::array<RlPlacement, 2> all_values(RlPlacement) {
  return {RlPlacement::colocated, RlPlacement::split};
}
constexpr std::array<RlEngine, 2> all_values(RlEngine) {
  return {RlEngine::vllm, RlEngine::sglang};
}
constexpr std::array<RlSleep, 3> all_values(RlSleep) {
  return {RlSleep::offload, RlSleep::discard, RlSleep::none};
}
constexpr std::array<RlOffloadCopy, 3> all_values(RlOffloadCopy) {
  return {RlOffloadCopy::pageable, RlOffloadCopy::pinned_weights, RlOffloadCopy::pinned};
}
constexpr std::array<RlFrozen, 3> all_values(RlFrozen) {
  return {RlFrozen::resident, RlFrozen::offload, RlFrozen::swap};
}
constexpr std::array<DType, 5> all_values(DType) {
  return {DType::fp32, DType::bf16, DType::fp16, DType::fp8, DType::int8};
}

// Defaults that follow from the stack and the layout (the loader, what-if changes and the
// layout search derive them alike when the plan does not give them): gradients are reduced
// once per step at ZeRO 0-1 and every micro-batch at ZeRO 2-3, except for FSDP under
// PyTorch's pipelining, which reduces at the last micro-batch
// (torch/distributed/pipelining/stage.py backward_maybe_with_nosync) and, as torchtitan,
// keeps every unit gathered from forward to backward (reshard_after_forward = not pp).
GradSync default_grad_sync(Framework f, int zero, int pp);
bool default_reshard_after_forward(Framework f, int zero, int pp);
// FSDP2 with the model's ends as units of their own (parallel.fsdp_root = "split", torchtitan's
// apply_fsdp): the embedding's unit leaves the peaks only when it is not tied to the head and
// units are resharded after forward. The ledger and the replica script both follow it.
bool fsdp_splits_ends(const PlanInput& in);
// The expert tensor-parallel size in effect: parallel.etp, or tp when it is 0.
int expert_tp(const ParallelSpec& p);
// The expert-data-parallel size: the ranks of a stage (tp × cp × dp) over etp × ep.
int expert_dp(const ParallelSpec& p);
// The allocator's reserve over allocated memory as a share of the dynamic memory
// (docs/formulas.md#overheads): PyTorch's caching allocator as it comes, or with
// expandable segments.
double default_fragmentation(bool expandable_segments);

// The stack's conventions in effect for a plan (docs/formulas.md#frameworks): what each does
// to the numbers, and the key it set ("" for a convention that has no key). A key the plan,
// an import or --set gave is the plan's choice, not a convention, and is left out.
struct Convention {
  std::string effect;
  std::string key;
};
std::vector<Convention> conventions(const PlanInput& in);

// The enum value named `name`, or `fallback` (callers validate names against the key table).
template <typename E>
E from_string(std::string_view name, E fallback) {
  for (E e : all_values(E{}))
    if (to_string(e) == name) return e;
  return fallback;
}

}  // namespace trainledger
