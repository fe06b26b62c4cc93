// Cross-field rules of a plan (docs/config.md#rules), each reported at the key that breaks it.
// The config layer reports them at the key's file:line:col; the core's what-if questions use
// them to drop changes that make an invalid plan.
#include "trainledger/rules.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "recipe.hpp"

namespace trainledger {

namespace {

struct Violations {
  std::vector<RuleViolation>& out;
  void error(const char* key, std::string message) const {
    out.push_back(RuleViolation{key, std::move(message)});
  }
};

void check_tp(Violations& in, const PlanInput& p) {
  const ModelSpec& m = p.model;
  const int tp = p.parallel.tp;
  if (m.count_only || tp == 1) return;
  if (m.heads % tp != 0)
    in.error("parallel.tp",
             fmt::format("parallel.tp ({}) must divide model.heads ({})", tp, m.heads));
  if (m.kv_heads % tp != 0 && tp % m.kv_heads != 0)
    in.error("parallel.tp",
             fmt::format("parallel.tp ({}) must divide model.kv_heads ({}), or be a multiple of "
                         "it (kv heads replicated)",
                         tp, m.kv_heads));
  const int ffn = is_moe(m) ? m.expert_ffn : m.ffn;
  // Experts split over their own etp are checked with it (check_experts).
  const bool experts_own_split = is_moe(m) && expert_tp(p.parallel) != tp;
  if (ffn % tp != 0 && !experts_own_split)
    in.error("parallel.tp",
             fmt::format("parallel.tp ({}) must divide the MLP width ({})", tp, ffn));
  if (is_moe(m) && dense_mlp_layers(m) > 0 && m.ffn % tp != 0)
    in.error("parallel.tp", fmt::format("parallel.tp ({}) must divide the dense layers' MLP "
                                        "width model.ffn ({})",
                                        tp, m.ffn));
  if (is_moe(m) && m.shared_experts > 0 && shared_ffn(m) % tp != 0)
    in.error("parallel.tp",
             fmt::format("parallel.tp ({}) must divide the shared experts' width ({})", tp,
                         shared_ffn(m)));
}

void check_pp(Violations& in, const PlanInput& p) {
  const ParallelSpec& par = p.parallel;
  const ModelSpec& m = p.model;
  if (!par.stage_layers.empty()) {
    if (static_cast<int>(par.stage_layers.size()) != par.pp) {
      in.error("parallel.stage_layers",
               fmt::format("parallel.stage_layers has {} entries but parallel.pp is {}",
                           par.stage_layers.size(), par.pp));
      return;
    }
    if (m.count_only) {
      in.error("parallel.stage_layers",
               "parallel.stage_layers needs a model architecture (model.layers)");
      return;
    }
    const long sum = std::accumulate(par.stage_layers.begin(), par.stage_layers.end(), 0L);
    if (sum != m.layers)
      in.error(
          "parallel.stage_layers",
          fmt::format("parallel.stage_layers sums to {} but model.layers is {}", sum, m.layers));
  } else if (!m.count_only && m.layers % par.pp != 0) {
    in.error("parallel.pp", fmt::format("parallel.pp ({}) must divide model.layers ({}), or give "
                                        "parallel.stage_layers for an uneven split",
                                        par.pp, m.layers));
  }
  if (par.pp > 1 && !m.count_only && par.pp > m.layers)
    in.error("parallel.pp",
             fmt::format("parallel.pp ({}) exceeds model.layers ({})", par.pp, m.layers));
  if (is_moe(m) && m.dense_layers > 0 && par.pp > 1) {
    // The dense first layers are counted on the first stage (its first virtual stage).
    const int first_stage = par.stage_layers.empty() ? m.layers / par.pp : par.stage_layers[0];
    const int first_chunk = par.schedule == Schedule::interleaved
                                ? first_stage / std::max(1, par.virtual_stages)
                                : first_stage;
    if (m.dense_layers > first_chunk)
      in.error("model.dense_layers",
               fmt::format("model.dense_layers ({}) must lie on the first pipeline stage, which "
                           "holds {} layer{} first: give parallel.stage_layers a larger first "
                           "stage",
                           m.dense_layers, first_chunk, first_chunk == 1 ? "" : "s"));
  }
  if (is_moe(m) && m.moe_every > 1 && par.pp > 1) {
    // Every stage (every virtual stage) starts on a multiple of moe_every, so that each holds
    // the same pattern of MoE and dense layers (Megatron-Core's moe_layer_freq layouts).
    const int vs = par.schedule == Schedule::interleaved ? std::max(1, par.virtual_stages) : 1;
    const int n = par.stage_layers.empty() ? par.pp : static_cast<int>(par.stage_layers.size());
    for (int s = 0; s < n; ++s) {
      const int stage = par.stage_layers.empty() ? m.layers / par.pp
                                                 : par.stage_layers[static_cast<std::size_t>(s)];
      const int chunk = stage % vs == 0 ? stage / vs : stage;
      if (chunk % m.moe_every == 0) continue;
      in.error("model.moe_every",
               fmt::format("model.moe_every ({}): {} {} holds {} layers, not a multiple of it; "
                           "every stage must hold whole groups of one MoE and {} dense layer{}",
                           m.moe_every, vs > 1 ? "a virtual stage of stage" : "stage", s, chunk,
                           m.moe_every - 1, m.moe_every == 2 ? "" : "s"));
      break;
    }
  }
  if (par.schedule == Schedule::interleaved) {
    if (par.virtual_stages < 2)
      in.error("parallel.virtual_stages",
               "parallel.schedule = \"interleaved\" needs parallel.virtual_stages >= 2");
    else if (!m.count_only && par.stage_layers.empty() &&
             (m.layers / par.pp) % par.virtual_stages != 0)
      in.error("parallel.virtual_stages",
               fmt::format("parallel.virtual_stages ({}) must divide the layers per stage ({})",
                           par.virtual_stages, m.layers / par.pp));
    else if (!m.count_only) {
      // Uneven stages: each stage's layers split evenly over its virtual stages (Megatron-LM
      // rejects the layout otherwise). The first and last stage may count the embedding and
      // the loss as a layer (Megatron-Core's account_for_embedding_in_pipeline_split and
      // account_for_loss_in_pipeline_split).
      const int n = static_cast<int>(par.stage_layers.size());
      for (int s = 0; s < n; ++s) {
        const int layers = par.stage_layers[static_cast<std::size_t>(s)];
        const bool edge = s == 0 || s == n - 1;
        if (layers % par.virtual_stages == 0 || (edge && (layers + 1) % par.virtual_stages == 0))
          continue;
        in.error("parallel.stage_layers",
                 fmt::format("parallel.stage_layers: stage {} has {} layers, which do not split "
                             "over parallel.virtual_stages ({}){}",
                             s, layers, par.virtual_stages,
                             edge ? " (even counting the embedding or the loss as a layer)" : ""));
        break;
      }
    }
  } else if (par.virtual_stages > 1) {
    in.error("parallel.virtual_stages",
             fmt::format("parallel.virtual_stages ({}) needs parallel.schedule = \"interleaved\"",
                         par.virtual_stages));
  }
}

void check_world(Violations& in, const PlanInput& p) {
  const ParallelSpec& par = p.parallel;
  const double product = static_cast<double>(par.tp) * par.pp * par.cp * par.dp;
  const double world = static_cast<double>(p.cluster.nodes) * p.cluster.gpus_per_node;
  if (product != world)
    in.error("parallel.dp",
             fmt::format("parallel: tp × pp × cp × dp = {} × {} × {} × {} = {} must equal the "
                         "world size {} (cluster.nodes {} × cluster.gpus_per_node {})",
                         par.tp, par.pp, par.cp, par.dp, product, world, p.cluster.nodes,
                         p.cluster.gpus_per_node));
}

void check_fabric(Violations& in, const PlanInput& p) {
  const ClusterSpec& c = p.cluster;
  if (c.oversubscription > 1 && c.leaf_nodes <= 0)
    in.error("cluster.oversubscription",
             fmt::format("cluster.oversubscription = {:g} is the leaves' down:up ratio: give "
                         "cluster.leaf_nodes, the nodes under one leaf, for it to apply",
                         c.oversubscription));
  // An overlapped collective holds one SM per NCCL channel (docs/formulas.md#nccl-contention):
  // a GPU with no more SMs than channels left to the compute is a mistyped count.
  if (c.gpu.sms > 0 && c.gpu.sms <= c.nccl_channels)
    in.error("cluster.gpu_sms",
             fmt::format("cluster.gpu_sms = {} leaves no SM beside cluster.nccl_channels = {}: "
                         "give the GPU's streaming multiprocessors (H100 SXM: 132), or 0 to leave "
                         "the overlap's SMs out",
                         c.gpu.sms, c.nccl_channels));
}

void check_batch(Violations& in, const PlanInput& p) {
  const TrainingSpec& t = p.training;
  const double per_pass = static_cast<double>(t.micro_batch) * p.parallel.dp;
  if (t.global_batch > 0 && std::fmod(static_cast<double>(t.global_batch), per_pass) != 0)
    in.error("training.global_batch",
             fmt::format("training.global_batch ({}) must be divisible by micro_batch × dp = {} "
                         "× {} = {}",
                         t.global_batch, t.micro_batch, p.parallel.dp, per_pass));
  // The interleaved schedule runs micro-batches in groups of at least pp per virtual stage:
  // Megatron-Core refuses fewer micro-batches per step than stages
  // (pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving:
  // microbatch_group_size_per_vp_stage must lie in [pp, num_microbatches]).
  const ParallelSpec& par = p.parallel;
  if (par.schedule == Schedule::interleaved && par.pp > 1 && t.global_batch > 0 &&
      std::fmod(static_cast<double>(t.global_batch), per_pass) == 0) {
    const double m = static_cast<double>(t.global_batch) / per_pass;
    if (m < par.pp)
      in.error("parallel.schedule",
               fmt::format("parallel.schedule = \"interleaved\" needs at least pp ({}) "
                           "micro-batches per step, this plan has {} (global_batch {} / "
                           "(micro_batch {} × dp {})): Megatron-Core refuses fewer; use 1f1b or "
                           "a larger global_batch",
                           par.pp, m, t.global_batch, t.micro_batch, par.dp));
  }
  // PyTorch's ScheduleDualPipeV: two chunks per device, at least as many micro-batches as
  // chunks (2p), no torch.compile'd stage modules (_check_torch_compile_compatibility).
  if (par.schedule == Schedule::dualpipev && par.pp > 1) {
    if (t.framework == Framework::megatron || t.framework == Framework::deepspeed ||
        t.framework == Framework::hf)
      in.error("parallel.schedule",
               fmt::format("parallel.schedule = \"dualpipev\" is PyTorch's ScheduleDualPipeV "
                           "(torchtitan: framework pytorch); {} has no such schedule",
                           to_string(t.framework)));
    else if (t.compile)
      in.error("parallel.schedule",
               "parallel.schedule = \"dualpipev\": PyTorch refuses "
               "torch.compile'd stages with it (training.compile)");
    else if (!p.model.count_only && p.model.layers < 2 * par.pp)
      in.error("parallel.schedule",
               fmt::format("parallel.schedule = \"dualpipev\" splits each stage into two "
                           "chunks: the model's {} layers are fewer than 2 × pp ({})",
                           p.model.layers, 2 * par.pp));
    else if (t.global_batch > 0 && std::fmod(static_cast<double>(t.global_batch), per_pass) == 0 &&
             static_cast<double>(t.global_batch) / per_pass < 2.0 * par.pp)
      in.error("parallel.schedule",
               fmt::format("parallel.schedule = \"dualpipev\" needs at least 2 × pp ({}) "
                           "micro-batches per step (one per chunk), this plan has {:g}",
                           2 * par.pp, static_cast<double>(t.global_batch) / per_pass));
  }
  if (p.parallel.cp > 1 && t.seq_len % p.parallel.cp != 0)
    in.error("parallel.cp", fmt::format("parallel.cp ({}) must divide training.seq_len ({})",
                                        p.parallel.cp, t.seq_len));
}

void check_zero(Violations& in, const PlanInput& p) {
  const ParallelSpec& par = p.parallel;
  const int group = par.dp * par.cp;
  if (par.zero_shard_size > 0) {
    if (par.zero == 0)
      in.error("parallel.zero_shard_size",
               "parallel.zero_shard_size (HSDP) needs parallel.zero >= 1");
    else if (group % par.zero_shard_size != 0)
      in.error("parallel.zero_shard_size",
               fmt::format("parallel.zero_shard_size ({}) must divide dp × cp = {}",
                           par.zero_shard_size, group));
  }
  if (par.offload == Offload::optimizer && par.zero == 0)
    in.error("parallel.offload", "parallel.offload = \"optimizer\" needs parallel.zero >= 1");
  if (par.offload == Offload::optimizer_params && par.zero != 3)
    in.error("parallel.offload", "parallel.offload = \"optimizer+params\" needs parallel.zero = 3");
}

void check_placement(Violations& in, const PlanInput& p) {
  const std::vector<std::string>& order = p.parallel.placement;
  for (const char* dim : {"tp", "cp", "dp", "pp"}) {
    int count = 0;
    for (const std::string& d : order) count += d == dim ? 1 : 0;
    if (count != 1) {
      in.error("parallel.placement",
               fmt::format("parallel.placement must name tp, cp, dp and pp once each (\"{}\" "
                           "appears {} times)",
                           dim, count));
      return;
    }
  }
}

void check_experts(Violations& in, const PlanInput& p) {
  const ParallelSpec& par = p.parallel;
  const ModelSpec& m = p.model;
  const int etp = expert_tp(par);
  if (par.etp > 0 && par.etp != par.tp && !is_moe(m)) {
    in.error("parallel.etp",
             fmt::format("parallel.etp ({}) splits routed experts: it needs a MoE model "
                         "(model.experts > 0), or leave it 0 (= tp)",
                         par.etp));
    return;
  }
  if (par.ep == 1 && etp == par.tp) return;
  if (!is_moe(m)) {
    in.error("parallel.ep",
             fmt::format("parallel.ep ({}) needs a MoE model (model.experts > 0)", par.ep));
    return;
  }
  if (m.experts % par.ep != 0)
    in.error("parallel.ep",
             fmt::format("parallel.ep ({}) must divide model.experts ({})", par.ep, m.experts));
  // Megatron-Core (core/parallel_state.py initialize_model_parallel): the expert layout
  // etp × ep × expert-dp must fill a stage's ranks (tp × cp × dp); with etp = tp that is
  // ep | cp × dp.
  const long long stage = static_cast<long long>(par.tp) * par.cp * par.dp;
  if (stage % (static_cast<long long>(etp) * par.ep) != 0) {
    if (etp == par.tp)
      in.error("parallel.ep", fmt::format("parallel.ep ({}) must divide dp × cp = {} (or set "
                                          "parallel.etp = 1 to spread experts over tp too)",
                                          par.ep, par.dp * par.cp));
    else
      in.error("parallel.etp",
               fmt::format("parallel.etp × parallel.ep ({} × {}) must divide tp × cp × dp = {}",
                           etp, par.ep, stage));
  }
  if (etp != par.tp && m.expert_ffn % etp != 0)
    in.error("parallel.etp",
             fmt::format("parallel.etp ({}) must divide model.expert_ffn ({})", etp, m.expert_ffn));
}

void check_sharding(Violations& in, const PlanInput& p) {
  if (p.parallel.fp8_all_gather && (p.parallel.zero < 3 || p.training.precision != DType::fp8))
    in.error("parallel.fp8_all_gather",
             fmt::format("parallel.fp8_all_gather gathers FP8 weights: it needs parallel.zero = 3 "
                         "(FSDP) and training.precision = \"fp8\" (zero is {}, precision {})",
                         p.parallel.zero, precision_name(p.training)));
  else if (p.parallel.fp8_all_gather && p.training.framework != Framework::megatron &&
           p.training.recipe != Recipe::tensorwise)
    // torchao/float8/config.py Float8LinearConfig.__post_init__: "enable_fsdp_float8_all_gather
    // only supports tensorwise scaling granularity".
    in.error("parallel.fp8_all_gather",
             fmt::format("parallel.fp8_all_gather is torchao's FSDP float8 all-gather, which "
                         "supports tensorwise scaling only (training.recipe is {}); the other "
                         "recipes gather bf16",
                         to_string(p.training.recipe)));
  else if (p.parallel.fp8_all_gather && p.training.recipe == Recipe::mxfp8)
    // Megatron-FSDP's fp8_param_gather: MXFP8 parameters cannot be gathered natively; they go
    // in 16 bits and are quantized after (docs/api-guide/core/generalized_tensor_parallel.md).
    in.error("parallel.fp8_all_gather",
             "parallel.fp8_all_gather: Megatron-FSDP gathers MXFP8 parameters in 16 bits and "
             "quantizes them after; leave it false with training.recipe = \"mxfp8\"");
  if (p.parallel.fp8_param_gather &&
      (p.training.framework != Framework::megatron || p.training.precision != DType::fp8 ||
       p.parallel.zero < 1 || p.parallel.zero > 2 || p.training.finetune != Finetune::full))
    in.error(
        "parallel.fp8_param_gather",
        fmt::format("parallel.fp8_param_gather is Megatron-LM's --fp8-param-gather (with "
                    "fp4: --fp4-param-gather): it needs training.framework = \"megatron\", "
                    "training.precision = \"fp8\" or \"fp4\", the distributed optimizer "
                    "(parallel.zero = 1 or 2) and full training (framework {}, precision {}, "
                    "zero {})",
                    to_string(p.training.framework), precision_name(p.training), p.parallel.zero));
  if (!p.parallel.limit_all_gathers &&
      (p.parallel.zero < 3 || p.training.framework == Framework::deepspeed))
    in.error("parallel.limit_all_gathers",
             fmt::format("parallel.limit_all_gathers = false is a PyTorch FSDP option: it needs "
                         "parallel.zero = 3 and a PyTorch stack (zero is {}, framework {})",
                         p.parallel.zero, to_string(p.training.framework)));
  if (!p.parallel.reshard_after_forward && p.parallel.zero < 3)
    in.error("parallel.reshard_after_forward",
             fmt::format("parallel.reshard_after_forward = false applies to ZeRO-3/FSDP; "
                         "parallel.zero is {}",
                         p.parallel.zero));
  else if (!p.parallel.reshard_after_forward && p.training.framework == Framework::deepspeed)
    in.error("parallel.reshard_after_forward",
             "parallel.reshard_after_forward is an FSDP2 option; DeepSpeed ZeRO-3 keeps "
             "parameters by stage3_max_reuse_distance (framework deepspeed models that)");
}

// The low-precision recipes the stacks and GPUs have (docs/formulas.md#recipes).
void check_recipe(Violations& in, const PlanInput& p) {
  const TrainingSpec& t = p.training;
  const PeakFlops& peaks = p.cluster.gpu.peak_flops;
  const bool block_scaled = t.recipe == Recipe::mxfp8 || t.recipe == Recipe::nvfp4;
  // Transformer Engine asserts compute capability 10.0 for MXFP8BlockScaling and
  // NVFP4BlockScaling (transformer_engine/pytorch/quantization.py check_mxfp8_support,
  // check_nvfp4_support); torchtitan refuses them on Hopper.
  if (block_scaled && peaks.any() && !block_scaled_gpu(p.cluster.gpu))
    in.error("training.recipe",
             fmt::format("training.recipe = \"{}\" needs block-scaled tensor cores (B200, "
                         "GB200, B300, GB300: compute capability 10.x; Transformer Engine "
                         "refuses it below); {} has none (no fp6/fp4 peak in cluster.peak_flops)",
                         to_string(t.recipe),
                         p.cluster.gpu.name.empty() ? "this GPU" : p.cluster.gpu.name));
  else if (t.recipe == Recipe::nvfp4 && peaks.any() && peaks.fp4 <= 0)
    in.error("training.recipe",
             fmt::format("training.recipe = \"nvfp4\" runs its GEMMs at the fp4 peak, which {} "
                         "does not give (cluster.peak_flops.fp4)",
                         p.cluster.gpu.name.empty() ? "this GPU" : p.cluster.gpu.name));
  // Transformer Engine has no row-wise recipe; torchao has no delayed scaling.
  if (t.recipe == Recipe::rowwise &&
      (t.framework == Framework::megatron || t.framework == Framework::deepspeed))
    in.error("training.recipe",
             fmt::format("training.recipe = \"rowwise\" is torchao's (framework pytorch); "
                         "Transformer Engine under {} scales per tensor or per block (delayed, "
                         "tensorwise, blockwise, mxfp8)",
                         to_string(t.framework)));
  if (t.recipe == Recipe::delayed &&
      (t.framework == Framework::pytorch || t.framework == Framework::hf))
    in.error("training.recipe",
             fmt::format("training.recipe = \"delayed\" is Transformer Engine's "
                         "DelayedScaling (framework megatron or deepspeed); torchao under {} "
                         "scales from the tensor itself (tensorwise, rowwise)",
                         to_string(t.framework)));
}

// Megatron-Core's layer-level activation offloading refuses pipelining, recompute and CUDA
// graphs, and keeps the last layer on the GPU (megatron/core/transformer/transformer_config.py
// __post_init__; megatron/core/transformer/transformer_block.py).
void check_activation_offload(Violations& in, const PlanInput& p) {
  const TrainingSpec& t = p.training;
  const int k = t.activation_offload_layers;
  if (k <= 0) return;
  const char* key = "training.activation_offload_layers";
  if (t.framework != Framework::megatron)
    in.error(key, fmt::format("training.activation_offload_layers is Megatron-Core's activation "
                              "offloading (--cpu-offloading-num-layers): it needs "
                              "training.framework = \"megatron\", not \"{}\"",
                              to_string(t.framework)));
  else if (p.parallel.pp > 1)
    in.error(key, fmt::format("training.activation_offload_layers: Megatron-Core offloads "
                              "activations without pipeline parallelism only (parallel.pp is {})",
                              p.parallel.pp));
  else if (t.recompute != Recompute::none)
    in.error(key, fmt::format("training.activation_offload_layers: Megatron-Core refuses "
                              "activation offloading with recompute (training.recompute is {})",
                              to_string(t.recompute)));
  else if (t.cuda_graphs)
    in.error(key,
             "training.activation_offload_layers: Megatron-Core refuses activation "
             "offloading with CUDA graphs of the layers (training.cuda_graphs)");
  else if (!p.model.count_only && k > p.model.layers - 1)
    in.error(key, fmt::format("training.activation_offload_layers = {}: at most the model's "
                              "layers less one ({}); the last layer's activations are used at "
                              "once",
                              k, p.model.layers - 1));
  else if (p.cluster.gpu.peak_flops.any() && p.cluster.pcie_bandwidth <= 0)
    in.error("cluster.pcie_bandwidth",
             "training.activation_offload_layers copies activations over the host link: give "
             "cluster.pcie_bandwidth (or a GPU preset that has it)");
}

void check_training(Violations& in, const PlanInput& p) {
  const TrainingSpec& t = p.training;
  const ModelSpec& m = p.model;
  // Megatron-LM reads --recompute-modules under --recompute-granularity selective only.
  if (t.recompute != Recompute::selective &&
      t.recompute_modules != static_cast<std::uint8_t>(RecomputeModule::core_attn))
    in.error("training.recompute_modules",
             fmt::format("training.recompute_modules names what selective recompute runs again: "
                         "it needs training.recompute = \"selective\" (it is \"{}\")",
                         to_string(t.recompute)));
  if (t.precision == DType::fp32 && t.grad_dtype != DType::fp32)
    in.error("training.grad_dtype",
             fmt::format("training.grad_dtype ({}) cannot be narrower than fp32 weights",
                         to_string(t.grad_dtype)));
  if (t.finetune != Finetune::full) {
    if (m.count_only)
      in.error("training.finetune", "LoRA and QLoRA need a model architecture, not model.params");
    if (t.trainable_params > 0)
      in.error("training.trainable_params",
               "training.trainable_params is for full fine-tuning; LoRA's count is derived from "
               "lora_rank and lora_targets");
    if (is_moe(m)) {
      for (LoraTarget target : t.lora_targets)
        if (target == LoraTarget::gate || target == LoraTarget::up || target == LoraTarget::down)
          in.error("training.lora_targets",
                   "LoRA on the expert MLPs of a MoE model is not modelled; target attention "
                   "matrices only");
    }
  }
  // A precision the GPU has no peak for is not silently run at another one (no bf16 on V100,
  // no FP8 before Hopper); FP8 also runs attention and the LM head at the bf16 peak.
  const PeakFlops& peaks = p.cluster.gpu.peak_flops;
  if (peaks.any() && peak_of(peaks, t.precision) <= 0) {
    std::string has;
    for (DType d : {DType::bf16, DType::fp16, DType::fp8, DType::fp32})
      if (peak_of(peaks, d) > 0) has += (has.empty() ? "" : ", ") + std::string(to_string(d));
    in.error("training.precision",
             fmt::format("training.precision ({}): {} has no {} peak FLOP/s (cluster.peak_flops); "
                         "it has {}",
                         to_string(t.precision), p.cluster.gpu.name, to_string(t.precision), has));
  } else if (peaks.any() && t.precision == DType::fp8 && peaks.bf16 <= 0)
    in.error("training.precision",
             fmt::format("training.precision (fp8): attention and the LM head run in bf16, but {} "
                         "has no bf16 peak FLOP/s (cluster.peak_flops)",
                         p.cluster.gpu.name));
  check_recipe(in, p);
  check_activation_offload(in, p);
  // With a peak to time the GEMMs, the memory-bound kernels need the HBM bandwidth too: an
  // inline GPU without one would time them (and the optimizer step) at zero.
  if (peaks.any() && !m.count_only && p.cluster.gpu.memory_bandwidth <= 0)
    in.error("cluster.memory_bandwidth",
             fmt::format("cluster.memory_bandwidth is needed to time element-wise kernels and "
                         "the optimizer step on {}: give it (e.g. memory_bandwidth = \"3.35 "
                         "TB/s\") or name a preset with cluster.gpu",
                         p.cluster.gpu.name.empty() ? "this GPU" : p.cluster.gpu.name));
  if (t.finetune == Finetune::qlora && t.precision != DType::bf16 && t.precision != DType::fp16)
    in.error("training.precision",
             fmt::format("QLoRA computes in bf16 or fp16, not {}", to_string(t.precision)));
  // A learned position table has a row per position and no more (GPT-2's wpe, BERT's
  // position_embeddings): a longer sequence indexes past it.
  if (m.position_embeddings > 0 && t.seq_len > m.position_embeddings)
    in.error("training.seq_len",
             fmt::format("training.seq_len ({}) exceeds the model's learned positions "
                         "(model.position_embeddings = {}): the position table has no row past "
                         "it",
                         t.seq_len, m.position_embeddings));
  if (t.optimizer == Optimizer::adafactor && m.count_only)
    in.error("training.optimizer",
             "Adafactor's factored state needs the matrix shapes: give a model architecture");
  if (t.trainable_params > 0 && t.trainable_params > total_params(m))
    in.error("training.trainable_params",
             fmt::format("training.trainable_params ({:.6g}) exceeds the model's parameters "
                         "({:.6g})",
                         t.trainable_params, total_params(m)));
}

}  // namespace

// RL plans (docs/rl.md): the batch splits into whole mini-batches, the means lie within the
// maxima, and the engines tile the GPUs that generate.
void check_rl(Violations& in, const PlanInput& p, bool world_known) {
  const RlSpec& rl = p.rl;
  if (!rl.enabled) return;
  if (rl.prompts <= 0) {
    in.error("rl.prompts", "rl.prompts: give the prompts per step (an [rl] plan needs its batch)");
    return;
  }
  if (p.model.count_only) {
    in.error("rl.algorithm",
             "an [rl] plan needs the model's architecture (the engine's KV cache "
             "and weights): give model.preset, model.hf_config or its shape keys, "
             "not model.params alone");
    return;
  }
  if (rl.mini_batch_prompts <= 0 || rl.prompts % rl.mini_batch_prompts != 0)
    in.error("rl.mini_batch_prompts",
             fmt::format("rl.mini_batch_prompts ({}) must divide rl.prompts ({})",
                         rl.mini_batch_prompts, rl.prompts));
  if (rl.mean_prompt_length > static_cast<double>(rl.prompt_length))
    in.error("rl.mean_prompt_length",
             fmt::format("rl.mean_prompt_length ({}) exceeds rl.prompt_length ({})",
                         rl.mean_prompt_length, rl.prompt_length));
  if (rl.mean_response_length > static_cast<double>(rl.response_length))
    in.error("rl.mean_response_length",
             fmt::format("rl.mean_response_length ({}) exceeds rl.response_length ({})",
                         rl.mean_response_length, rl.response_length));
  if (!rl.rollout()) return;
  const bool split = rl.placement == RlPlacement::split;
  if (split && rl.rollout_gpus <= 0)
    in.error("rl.rollout_gpus",
             "rl.placement = \"split\" needs rl.rollout_gpus, the GPUs that "
             "generate beside the [cluster] GPUs that train");
  if (!split && rl.rollout_gpus > 0)
    in.error("rl.rollout_gpus",
             "rl.rollout_gpus is for rl.placement = \"split\"; colocated engines use every GPU");
  if (!split && rl.off_policy)
    in.error("rl.off_policy",
             "rl.off_policy needs rl.placement = \"split\": colocated phases take turns");
  const int heads = p.model.heads;
  if (heads > 0 && heads % rl.rollout_tp != 0)
    in.error("rl.rollout_tp", fmt::format("rl.rollout_tp ({}) must divide model.heads ({}), as the "
                                          "engines' tensor parallelism does",
                                          rl.rollout_tp, heads));
  const long long pool = split ? rl.rollout_gpus : (world_known ? p.cluster.world_size() : 0);
  if (pool > 0 && pool % rl.rollout_tp != 0)
    in.error("rl.rollout_tp",
             fmt::format("rl.rollout_tp ({}) must divide the {} GPUs that generate", rl.rollout_tp,
                         pool));
}

std::vector<RuleViolation> check_rules(const PlanInput& in, bool world_known) {
  std::vector<RuleViolation> out;
  Violations v{out};
  check_tp(v, in);
  check_pp(v, in);
  if (world_known) {
    check_world(v, in);
    check_batch(v, in);
  }
  check_fabric(v, in);
  check_zero(v, in);
  check_experts(v, in);
  check_placement(v, in);
  check_training(v, in);
  check_sharding(v, in);
  check_rl(v, in, world_known);
  return out;
}

std::vector<RuleViolation> knob_violations(const PlanInput& base, const std::string& knob,
                                           int value, int world) {
  std::vector<RuleViolation> out;
  const bool splits = knob == "tp" || knob == "pp" || knob == "cp";
  if (!splits && knob != "ep") return out;
  const std::string key = "parallel." + knob;
  if (value < 1) {
    out.push_back({key, fmt::format("{} ({}) must be at least 1", key, value)});
    return out;
  }
  if (splits && world > 0 && world % value != 0)
    out.push_back({key, fmt::format("{} ({}) must divide the {} GPUs", key, value, world)});
  PlanInput p = base;
  ParallelSpec& par = p.parallel;
  par.tp = par.pp = par.cp = par.ep = 1;
  par.etp = 0;
  par.virtual_stages = 1;
  par.schedule = Schedule::one_f_one_b;
  par.stage_layers.clear();
  const int gpus = world > 0 ? world : value * p.cluster.gpus_per_node;
  par.dp = std::max(1, splits ? gpus / value : gpus);
  if (knob == "tp") par.tp = value;
  if (knob == "cp") par.cp = value;
  if (knob == "ep") par.ep = value;
  if (knob == "pp") {
    par.pp = value;
    // An uneven split is a layout too (search --allow uneven=true): as even as it can be.
    const ModelSpec& m = p.model;
    if (!m.count_only && value <= m.layers && m.layers % value != 0) {
      par.stage_layers.assign(static_cast<std::size_t>(value), m.layers / value);
      for (int i = 0; i < m.layers % value; ++i) ++par.stage_layers[static_cast<std::size_t>(i)];
    }
  }
  for (RuleViolation& v : check_rules(p, false))
    if (v.key == key) out.push_back(std::move(v));
  // check_batch's rule on the sequence (skipped without a consistent world above).
  if (knob == "cp" && value > 1 && p.training.seq_len % value != 0)
    out.push_back({key, fmt::format("{} ({}) must divide training.seq_len ({})", key, value,
                                    p.training.seq_len)});
  return out;
}

}  // namespace trainledger
