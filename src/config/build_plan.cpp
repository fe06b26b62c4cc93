// [training], [parallel], [cluster], [checkpoint] → typed specs; derived defaults.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "build.hpp"
#include "reader.hpp"
#include "trainledger/units.hpp"
#include "validate.hpp"

namespace trainledger::config {

namespace {

std::vector<LoraTarget> to_targets(const std::vector<std::string>& names) {
  std::vector<LoraTarget> out;
  auto add = [&](LoraTarget t) {
    for (LoraTarget have : out)
      if (have == t) return;
    out.push_back(t);
  };
  for (const std::string& n : names) {
    if (n == "all-linear") {
      for (LoraTarget t : all_values(LoraTarget{})) add(t);
    } else if (n == "q_proj")
      add(LoraTarget::q);
    else if (n == "k_proj")
      add(LoraTarget::k);
    else if (n == "v_proj")
      add(LoraTarget::v);
    else if (n == "o_proj")
      add(LoraTarget::o);
    else if (n == "gate_proj")
      add(LoraTarget::gate);
    else if (n == "up_proj")
      add(LoraTarget::up);
    else if (n == "down_proj")
      add(LoraTarget::down);
  }
  return out;
}

// Records a value the loader derived, so that reports show it with origin "derived".
void record(Resolution& r, const std::string& key, Setting::Variant value, std::string display) {
  Setting s;
  s.spec = find_key(key.substr(0, key.find('.')), key.substr(key.find('.') + 1));
  s.value = std::move(value);
  s.display = std::move(display);
  s.origin = Origin{"", 0, 0, "derived"};
  r.settings[key] = s;
}

void record(Resolution& r, const std::string& key, std::int64_t value) {
  record(r, key, value, std::to_string(value));
}

void record_text(Resolution& r, const std::string& key, const std::string& value) {
  record(r, key, value, "\"" + value + "\"");
}

// Whether the plan (or --set, or a preset) gave `key`, rather than its default.
bool given(const Resolution& r, const std::string& key) {
  const auto it = r.settings.find(key);
  return it != r.settings.end() && it->second.origin.what != "default";
}

// The stack a plan names, with the other names people use for it.
std::string framework_name(const Reader& in) {
  const std::string f = in.text("training.framework");
  if (f == "auto") return "pytorch";  // infer_framework replaces "auto" before anything reads it
  if (f == "torchtitan" || f == "fsdp") return "pytorch";
  if (f == "hf-trainer") return "hf";
  if (f == "nemo" || f == "megatron-core") return "megatron";
  return f;
}

// training.framework = "auto" (the default): the stack whose vocabulary the plan speaks, with
// the reason (docs/formulas.md#frameworks). ZeRO written as a stage number is DeepSpeed's or
// Megatron-LM's word: with tensor, pipeline or expert parallelism, stage 1 is Megatron-LM's
// distributed optimizer (the 3D-parallel stack), otherwise stages 1 and 2 are DeepSpeed's engine
// (stage 3 is FSDP's, the same as zero = "fsdp"); DeepSpeed's own bucket keys name DeepSpeed;
// tensor or pipeline parallelism without sharding is Megatron-LM (torchtitan shards with FSDP);
// LoRA and QLoRA fine-tunes run on Hugging Face transformers + PEFT (Trainer, TRL, Accelerate,
// llama-recipes); everything else on PyTorch (FSDP/DDP, torchtitan).
std::pair<std::string, std::string> infer_framework(const Resolution& r, const Reader& in) {
  for (const char* key : {"parallel.allgather_bucket_size", "parallel.zero3_max_live_parameters",
                          "parallel.zero3_prefetch_bucket_size"})
    if (given(r, key)) return {"deepspeed", fmt::format("{} is a DeepSpeed setting", key)};
  const auto zero = r.settings.find("parallel.zero");
  const bool stage_number = given(r, "parallel.zero") && zero->second.display != "\"fsdp\"";
  const std::int64_t stage = in.integer("parallel.zero");
  if (stage_number && (stage == 1 || stage == 2)) {
    const bool model_parallel = in.integer("parallel.tp", 1) > 1 ||
                                in.integer("parallel.pp", 1) > 1 ||
                                in.integer("parallel.ep", 1) > 1;
    if (stage == 1 && model_parallel)
      return {"megatron",
              "parallel.zero = 1 with model parallelism: Megatron-LM's distributed optimizer"};
    return {"deepspeed", fmt::format("parallel.zero = {}{}: DeepSpeed's ZeRO", stage,
                                     model_parallel ? "" : " without model parallelism")};
  }
  if (in.integer("parallel.zero") == 0 &&
      (in.integer("parallel.tp", 1) > 1 || in.integer("parallel.pp", 1) > 1))
    return {"megatron",
            "tensor or pipeline parallelism over plain data parallelism: Megatron-LM (PyTorch's "
            "own 2D/3D stack, torchtitan, shards with FSDP)"};
  const std::string finetune = in.text("training.finetune");
  if (finetune == "lora" || finetune == "qlora")
    return {"hf",
            fmt::format("training.finetune = \"{}\": Hugging Face transformers + PEFT", finetune)};
  return {"pytorch", "the default stack: PyTorch (FSDP, DDP, torchtitan)"};
}

TrainingSpec build_training(Resolution& r, const Reader& in) {
  TrainingSpec t;
  t.seq_len = in.integer("training.seq_len");
  t.document_length = in.integer("training.document_length", 0);
  t.micro_batch = in.integer("training.micro_batch");
  t.global_batch = in.integer("training.global_batch", 0);
  // "fp4" is the 4-bit recipe's precision: its GEMMs are timed at the fp4 peak, and everything
  // else that follows from low-precision GEMMs (bf16 weights, attention, LM head) is fp8's.
  const std::string precision = in.text("training.precision");
  t.precision = precision == "fp4" ? DType::fp8 : from_string(precision, DType::bf16);
  if (t.precision == DType::fp8) t.recipe = precision == "fp4" ? Recipe::nvfp4 : Recipe::tensorwise;
  if (in.has("training.recipe")) {
    const std::string recipe = in.text("training.recipe");
    if (t.precision != DType::fp8)
      in.error("training.recipe",
               fmt::format("training.recipe = \"{}\" scales fp8 or fp4 GEMMs, but "
                           "training.precision is \"{}\"",
                           recipe, precision));
    else if ((recipe == "nvfp4") != (precision == "fp4"))
      in.error("training.recipe",
               recipe == "nvfp4"
                   ? std::string("training.recipe = \"nvfp4\" is a 4-bit recipe: it needs "
                                 "training.precision = \"fp4\"")
                   : fmt::format("training.precision = \"fp4\" has one recipe, nvfp4; "
                                 "\"{}\" is an fp8 recipe (training.precision = \"fp8\")",
                                 recipe));
    else
      t.recipe = from_string(recipe, Recipe::tensorwise);
  }
  t.master_weights = in.boolean("training.master_weights");
  t.activation_offload_layers = static_cast<int>(in.integer("training.activation_offload_layers"));
  t.framework = from_string(framework_name(in), Framework::pytorch);
  if (in.has("training.grad_dtype")) {
    t.grad_dtype = from_string(in.text("training.grad_dtype"), DType::bf16);
  } else {
    t.grad_dtype = t.precision == DType::fp8 ? DType::bf16 : t.precision;
    // Every big stack keeps fp32 gradients when it trains in 16 bits with fp32 master weights:
    // PyTorch AMP and FSDP (fp32 parameters, so param.grad is fp32; torchtitan reduces in
    // fp32, mixed_precision_reduce = "float32"), Megatron-LM's main_grad
    // (arguments.py: accumulate_allreduce_grads_in_fp32 for bf16), DeepSpeed's BF16_Optimizer
    // at ZeRO 0-1 (bf16_optimizer.py: fp32_groups_gradients). DeepSpeed's ZeRO-2/3 reduce in
    // the 16-bit dtype; generic keeps the source documents' 16 B/param.
    const bool sixteen = t.precision != DType::fp32 && t.master_weights;
    const bool fp32_grads =
        t.framework == Framework::pytorch || t.framework == Framework::hf ||
        t.framework == Framework::megatron ||
        (t.framework == Framework::deepspeed && in.integer("parallel.zero") <= 1);
    if (sixteen && fp32_grads) t.grad_dtype = DType::fp32;
    record_text(r, "training.grad_dtype", std::string(to_string(t.grad_dtype)));
  }
  if (in.has("training.reduce_dtype")) {
    t.reduce_dtype = from_string(in.text("training.reduce_dtype"), DType::bf16);
  } else {
    t.reduce_dtype = t.grad_dtype;
    record_text(r, "training.reduce_dtype", std::string(to_string(t.reduce_dtype)));
  }
  // Megatron-LM fuses SwiGLU (--bias-swiglu-fusion, on by default) and torch.compile's
  // partitioner recomputes the product: both save the gate and up projections' outputs, not
  // the activation's output too.
  t.compile = in.boolean("training.compile");
  t.cuda_graphs = in.boolean("training.cuda_graphs");
  t.expandable_segments = in.boolean("training.expandable_segments");
  t.use_cache = in.boolean("training.use_cache");
  t.keep_outputs = in.boolean("training.keep_outputs");
  t.op_saves_attention = in.boolean("training.op_saves_attention");
  t.fused_swiglu = t.framework == Framework::megatron || t.compile;
  // Megatron-LM with Transformer Engine: te.LayerNormLinear applies the norm inside the GEMM's
  // input cast, bias_swiglu_impl / bias_gelu_impl, fused_apply_rotary_pos_emb and the fused
  // softmax run each chain as one kernel, like Inductor's fusions.
  t.fused_elementwise = t.framework == Framework::megatron || t.compile;
  t.optimizer = from_string(in.text("training.optimizer"), Optimizer::adamw);
  t.optimizer_dtype = from_string(in.text("training.optimizer_dtype"), DType::fp32);
  if (given(r, "training.optimizer_impl")) {
    t.optimizer_impl = from_string(in.text("training.optimizer_impl"), OptimizerImpl::foreach);
  } else {
    // Megatron-Core steps with Transformer Engine's or apex's FusedAdam
    // (megatron/core/optimizer/__init__.py), DeepSpeed with its FusedAdam (ops/adam/fused_adam.py);
    // torch.optim picks foreach on CUDA when neither is asked (optimizer.py,
    // _default_to_fused_or_foreach).
    const bool fused = t.framework == Framework::megatron || t.framework == Framework::deepspeed;
    t.optimizer_impl = fused ? OptimizerImpl::fused : OptimizerImpl::foreach;
    record_text(r, "training.optimizer_impl", std::string(to_string(t.optimizer_impl)));
  }
  t.recompute = from_string(in.text("training.recompute"), Recompute::none);
  t.recompute_modules = 0;
  for (const std::string& n : in.get<std::vector<std::string>>("training.recompute_modules")) {
    const RecomputeModule m = n == "layernorm"        ? RecomputeModule::layernorm
                              : n == "mlp"            ? RecomputeModule::mlp
                              : n == "moe"            ? RecomputeModule::moe
                              : n == "moe_act"        ? RecomputeModule::moe_act
                              : n == "shared_experts" ? RecomputeModule::shared_experts
                                                      : RecomputeModule::core_attn;
    t.recompute_modules |= static_cast<std::uint8_t>(m);
  }
  t.recompute_layers = in.number("training.recompute_layers");
  t.attention = from_string(in.text("training.attention"), Attention::flash);
  t.dropout = in.number("training.dropout");
  t.moe_capacity_factor = in.number("training.moe_capacity_factor");
  t.moe_imbalance = in.number("training.moe_imbalance");
  t.finetune = from_string(in.text("training.finetune"), Finetune::full);
  t.lora_rank = static_cast<int>(in.integer("training.lora_rank"));
  t.lora_targets = to_targets(in.get<std::vector<std::string>>("training.lora_targets"));
  t.double_quant = in.boolean("training.double_quant");
  t.trainable_params = in.number("training.trainable_params", 0);
  t.tokens = in.number("training.tokens", 0);
  t.loss = from_string(in.text("training.loss"), Loss::standard);
  if (!given(r, "training.loss") && t.framework == Framework::pytorch && t.compile) {
    // torchtitan compiles its loss with the model (components/loss.py, BaseLoss._maybe_compile:
    // compile.enable with "loss" in compile.components, ["model", "loss"] by default; since
    // bbb1b616e of 2025-04-02). Inductor fuses the fp32 upcast and the log-softmax into the
    // reductions: it saves the 16-bit logits and a per-token log-sum-exp and writes a 16-bit
    // gradient, as a fused cross-entropy kernel does.
    t.loss = Loss::fused;
    record_text(r, "training.loss", "fused");
  }
  if (in.has("training.loss_dtype")) {
    t.loss_dtype = from_string(in.text("training.loss_dtype"), DType::fp32);
  } else {
    // A model cast to 16 bits and run without autocast computes its loss on 16-bit logits:
    // pure 16-bit recipes, and DeepSpeed's fp16 engine (runtime/engine.py casts the module
    // with half(); autocast only with "torch_autocast"). Hugging Face's modeling code upcasts
    // the logits itself (modeling_llama.py: logits.float(); from 4.45 loss_utils.py
    // ForCausalLMLoss), so framework hf keeps fp32.
    const bool sixteen = t.precision == DType::bf16 || t.precision == DType::fp16;
    const bool cast_module =
        !t.master_weights || (t.framework == Framework::deepspeed && t.precision == DType::fp16);
    t.loss_dtype =
        sixteen && cast_module && t.framework != Framework::hf ? t.precision : DType::fp32;
    record_text(r, "training.loss_dtype", std::string(to_string(t.loss_dtype)));
  }
  if (given(r, "training.norm_impl")) {
    t.eager_norm = in.text("training.norm_impl") == "eager";
  } else {
    // Hugging Face's LlamaRMSNorm (and its copies in other model files) upcasts to fp32 in
    // eager PyTorch (transformers/models/llama/modeling_llama.py).
    t.eager_norm = t.framework == Framework::hf && !in.boolean("training.compile");
    if (t.eager_norm) record_text(r, "training.norm_impl", "eager");
  }
  t.lora_dropout = in.number("training.lora_dropout");
  t.data_workers = static_cast<int>(in.integer("training.data_workers"));
  t.data_worker_memory = in.number("training.data_worker_memory");
  return t;
}

ParallelSpec build_parallel(Resolution& r, const Reader& in) {
  ParallelSpec p;
  p.tp = static_cast<int>(in.integer("parallel.tp"));
  p.pp = static_cast<int>(in.integer("parallel.pp"));
  p.cp = static_cast<int>(in.integer("parallel.cp"));
  p.ep = static_cast<int>(in.integer("parallel.ep"));
  p.etp = static_cast<int>(in.integer("parallel.etp"));
  p.dp = static_cast<int>(in.integer("parallel.dp", 0));
  p.sequence_parallel = in.boolean("parallel.sequence_parallel");
  p.zero = static_cast<int>(in.integer("parallel.zero"));
  p.zero_shard_size = static_cast<int>(in.integer("parallel.zero_shard_size", 0));
  // Accumulation syncs once per step unless gradients must stay sharded (ZeRO-2/3, FSDP).
  // PyTorch's pipelining runs FSDP2 stages with set_requires_gradient_sync(False) and
  // set_reshard_after_backward(False) on every micro-batch but the last
  // (torch/distributed/pipelining/stage.py backward_maybe_with_nosync): the gradients stay
  // unsharded and are reduced once per step; torchtitan also keeps the units gathered after
  // forward under pipeline parallelism (parallelize.py: reshard_after_forward = not pp).
  const Framework framework = from_string(framework_name(in), Framework::pytorch);
  if (in.has("parallel.grad_sync")) {
    p.grad_sync = from_string(in.text("parallel.grad_sync"), GradSync::every_micro_batch);
  } else {
    p.grad_sync = default_grad_sync(framework, p.zero, p.pp);
    record_text(r, "parallel.grad_sync", std::string(to_string(p.grad_sync)));
  }
  p.schedule = from_string(in.text("parallel.schedule"), Schedule::one_f_one_b);
  p.virtual_stages = static_cast<int>(in.integer("parallel.virtual_stages"));
  for (std::int64_t n : in.get<std::vector<std::int64_t>>("parallel.stage_layers"))
    p.stage_layers.push_back(static_cast<int>(n));
  p.offload = from_string(in.text("parallel.offload"), Offload::none);
  p.bucket_size = in.number("parallel.bucket_size");
  if (!given(r, "parallel.bucket_size") && framework_name(in) == "deepspeed") {
    // DeepSpeed's reduce_bucket_size and allgather_bucket_size default to 5e8 elements
    // (deepspeed/runtime/zero/config.py), in the gradients' dtype.
    const std::string grad = in.has("training.grad_dtype") ? in.text("training.grad_dtype") : "";
    const double element = grad == "fp32" || in.text("training.precision") == "fp32" ? 4 : 2;
    p.bucket_size = 5e8 * element;
    record(r, "parallel.bucket_size", p.bucket_size,
           fmt::format("\"{:.0f} MB\"", p.bucket_size / 1e6));
  }
  p.gradient_as_bucket_view = in.boolean("parallel.gradient_as_bucket_view");
  if (framework_name(in) == "megatron") {
    // Megatron-Core's DDP keeps every gradient in one contiguous buffer that its buckets are
    // views of (param_and_grad_buffer.py), buckets of max(4e7, 1e6 × data-parallel size)
    // elements (distributed_data_parallel.py); the buffer holds the reduction's dtype.
    if (!given(r, "parallel.gradient_as_bucket_view")) {
      p.gradient_as_bucket_view = true;
      record(r, "parallel.gradient_as_bucket_view", true, "true");
    }
  }
  p.reshard_after_forward = in.boolean("parallel.reshard_after_forward");
  if (!given(r, "parallel.reshard_after_forward") &&
      !default_reshard_after_forward(framework, p.zero, p.pp)) {
    p.reshard_after_forward = false;
    record(r, "parallel.reshard_after_forward", false, "false");
  }
  // torchtitan shards the embedding and the final norm with the head as units of their own
  // (apply_fsdp since 83e694105); FSDP1 and DeepSpeed keep them in the root.
  if (in.has("parallel.fsdp_root")) {
    p.fsdp_split_root = in.text("parallel.fsdp_root") == "split";
  } else {
    p.fsdp_split_root = framework == Framework::pytorch;
    record_text(r, "parallel.fsdp_root", p.fsdp_split_root ? "split" : "model");
  }
  // FSDP1 is Hugging Face Accelerate's default (fsdp_version 1); torchtitan runs FSDP2.
  if (in.has("parallel.fsdp_version")) {
    p.fsdp_version = static_cast<int>(in.integer("parallel.fsdp_version"));
  } else {
    p.fsdp_version = framework == Framework::hf ? 1 : 2;
    record(r, "parallel.fsdp_version", std::int64_t{p.fsdp_version});
  }
  p.keep_stage_outputs = in.boolean("parallel.keep_stage_outputs");
  p.fp8_all_gather = in.boolean("parallel.fp8_all_gather");
  p.fp8_param_gather = in.boolean("parallel.fp8_param_gather");
  p.limit_all_gathers = in.boolean("parallel.limit_all_gathers");
  p.allgather_bucket = in.number("parallel.allgather_bucket_size");
  p.zero3_live_params = in.number("parallel.zero3_max_live_parameters");
  p.zero3_prefetch = in.number("parallel.zero3_prefetch_bucket_size");
  p.placement = in.get<std::vector<std::string>>("parallel.placement");
  p.overlap_dp = in.boolean("parallel.overlap_dp");
  p.overlap_tp = in.boolean("parallel.overlap_tp");
  p.overlap_cp = in.boolean("parallel.overlap_cp");
  p.overlap_param_gather = in.boolean("parallel.overlap_param_gather");
  const std::string dispatch = in.text("parallel.ep_dispatch");
  p.ep_dispatch = dispatch == "deepep"      ? EpDispatch::deepep
                  : dispatch == "allgather" ? EpDispatch::allgather
                                            : EpDispatch::nccl;
  const std::string algo = in.text("parallel.allreduce");
  p.nccl_algo = algo == "ring" ? NcclAlgo::ring : algo == "tree" ? NcclAlgo::tree : NcclAlgo::tuner;
  return p;
}

// World size and data parallelism: dp and nodes are derived from each other when one is missing.
void derive_world(Resolution& r, const Reader& in, PlanInput& out) {
  ParallelSpec& p = out.parallel;
  ClusterSpec& c = out.cluster;
  c.gpus_per_node = static_cast<int>(in.integer("cluster.gpus_per_node"));
  const double model_par = static_cast<double>(p.tp) * p.pp * p.cp;
  if (p.dp > 0) {
    const double needed = model_par * p.dp;
    if (in.has("cluster.nodes")) {
      c.nodes = static_cast<int>(in.integer("cluster.nodes"));
    } else if (needed <= c.gpus_per_node) {
      // Fewer GPUs than one node holds: one node, using only the GPUs the layout needs.
      c.nodes = 1;
      // A default or a GPU preset's tray (gb200: 4) shrinks to the GPUs the layout needs.
      const std::string& gpn_from = r.settings.at("cluster.gpus_per_node").origin.what;
      const bool default_gpn = gpn_from == "default" || gpn_from == "preset";
      if (needed < c.gpus_per_node && default_gpn) {
        c.gpus_per_node = static_cast<int>(needed);
        record(r, "cluster.gpus_per_node", c.gpus_per_node);
      }
      record(r, "cluster.nodes", 1);
    } else if (std::fmod(needed, c.gpus_per_node) == 0 && needed / c.gpus_per_node <= 1e6) {
      c.nodes = static_cast<int>(needed / c.gpus_per_node);
      record(r, "cluster.nodes", c.nodes);
    } else {
      in.error("parallel.dp",
               fmt::format("parallel: tp × pp × cp × dp = {} GPUs does not fill whole nodes of "
                           "cluster.gpus_per_node ({}); give cluster.nodes",
                           needed, c.gpus_per_node));
      c.nodes = 1;
    }
  } else {
    c.nodes = static_cast<int>(in.integer("cluster.nodes", 1));
    if (!in.has("cluster.nodes")) record(r, "cluster.nodes", 1);
    const double world = static_cast<double>(c.nodes) * c.gpus_per_node;
    if (std::fmod(world, model_par) != 0) {
      in.error(in.first_explicit({"parallel.tp", "parallel.pp", "parallel.cp"}),
               fmt::format("parallel: tp × pp × cp = {} × {} × {} = {} does not divide the world "
                           "size {} (cluster.nodes {} × cluster.gpus_per_node {})",
                           p.tp, p.pp, p.cp, model_par, world, c.nodes, c.gpus_per_node));
      p.dp = 1;
    } else {
      p.dp = static_cast<int>(world / model_par);
      record(r, "parallel.dp", p.dp);
    }
  }
  // An NVLink domain of whole nodes (GB200 NVL72: 18 trays of 4 GPUs).
  if (in.has("cluster.nvlink_domain")) {
    c.nvlink_domain = static_cast<int>(in.integer("cluster.nvlink_domain"));
    if (c.nvlink_domain % c.gpus_per_node != 0)
      in.error("cluster.nvlink_domain",
               fmt::format("cluster.nvlink_domain = {} is not a whole number of nodes of "
                           "cluster.gpus_per_node ({}): give the GPUs per node (a tray) that "
                           "make up the domain",
                           c.nvlink_domain, c.gpus_per_node));
  }
}

ClusterSpec build_cluster(const Reader& in, ClusterSpec c) {
  c.intra_node_bandwidth = in.number("cluster.intra_node_bandwidth", 0);
  c.leaf_nodes = static_cast<int>(in.integer("cluster.leaf_nodes", 0));
  c.oversubscription = in.number("cluster.oversubscription");
  c.intra_node_gather_bandwidth = in.number("cluster.intra_node_gather_bandwidth", 0);
  c.intra_node_latency = in.number("cluster.intra_node_latency");
  c.inter_node_bandwidth = in.number("cluster.inter_node_bandwidth", 0);
  c.inter_node_latency = in.number("cluster.inter_node_latency");
  c.intra_node_simple_latency = in.number("cluster.intra_node_simple_latency", 0);
  c.inter_node_simple_latency = in.number("cluster.inter_node_simple_latency", 0);
  c.intra_node_ll_share = in.number("cluster.intra_node_ll_share");
  c.inter_node_ll_share = in.number("cluster.inter_node_ll_share");
  c.cuda_context = in.number("cluster.cuda_context");
  c.nccl_channels = static_cast<int>(in.integer("cluster.nccl_channels"));
  c.nccl_buffer = in.number("cluster.nccl_buffer");
  c.cublas_workspace = in.number("cluster.cublas_workspace");
  c.fragmentation = in.number("cluster.fragmentation");
  c.matmul_efficiency = in.number("cluster.matmul_efficiency");
  c.fp8_matmul_ratio = in.number("cluster.fp8_matmul_ratio");
  c.activation_factor = in.number("cluster.activation_factor");
  c.attention_efficiency = in.number("cluster.attention_efficiency", 0);
  c.fused_attention_efficiency = in.number("cluster.fused_attention_efficiency", 0);
  c.memory_efficiency = in.number("cluster.memory_efficiency");
  c.op_overhead = in.number("cluster.op_overhead");
  c.launch_overhead = in.number("cluster.launch_overhead");
  c.host_memory = in.number("cluster.host_memory", 0);
  c.pcie_bandwidth = in.number("cluster.pcie_bandwidth");
  c.pageable_bandwidth = in.number("cluster.pageable_bandwidth");
  c.host_memory_bandwidth = in.number("cluster.host_memory_bandwidth");
  c.host_process_memory = in.number("cluster.host_process_memory");
  return c;
}

CheckpointSpec build_checkpoint(const Reader& in) {
  CheckpointSpec c;
  c.storage_bandwidth = in.number("checkpoint.storage_bandwidth");
  c.restart_time = in.number("checkpoint.restart_time");
  c.gpu_failure_rate = in.number("checkpoint.gpu_failure_rate");
  c.node_failure_rate = in.number("checkpoint.node_failure_rate");
  c.format = from_string(in.text("checkpoint.format"), CheckpointFormat::sharded);
  c.interval = in.number("checkpoint.interval", 0);
  return c;
}

// Whether the plan has an [rl] section: any rl key given.
bool rl_given(const Resolution& r) {
  for (const auto& [key, setting] : r.settings)
    if (key.rfind("rl.", 0) == 0 && setting.origin.what != "default") return true;
  return false;
}

std::int64_t default_samples(RlAlgorithm a) {
  switch (a) {
    case RlAlgorithm::ppo:
      return 1;
    case RlAlgorithm::dpo:
      return 2;
    default:
      return 8;
  }
}

// An RL plan trains on each step's samples: sequences of the longest prompt and response, and
// one optimizer step per mini-batch (docs/rl.md#layout). The derived training keys are recorded
// before the [training] section is built; a plan may still give them itself.
void prepare_rl(Resolution& r, const Reader& in) {
  if (!rl_given(r)) return;
  const RlAlgorithm a = from_string(in.text("rl.algorithm"), RlAlgorithm::grpo);
  // The actor's loss works on the 16-bit logits: verl computes its log-probs with flash-attn's
  // Triton cross-entropy, in place (verl/utils/torch_functional.py logprobs_from_logits).
  // Megatron-Core stacks keep their vocab-parallel cross-entropy.
  if (!given(r, "training.loss") && framework_name(in) != "megatron")
    record_text(r, "training.loss", "fused");
  if (!given(r, "rl.samples_per_prompt")) record(r, "rl.samples_per_prompt", default_samples(a));
  if (!given(r, "training.seq_len"))
    record(r, "training.seq_len",
           in.integer("rl.prompt_length") + in.integer("rl.response_length"));
  if (in.has("rl.prompts")) {
    const std::int64_t mini = in.has("rl.mini_batch_prompts") ? in.integer("rl.mini_batch_prompts")
                                                              : in.integer("rl.prompts");
    if (!given(r, "training.global_batch") && !given(r, "training.grad_accum"))
      record(r, "training.global_batch", mini * in.integer("rl.samples_per_prompt"));
  }
}

RlSpec build_rl(const Resolution& r, const Reader& in) {
  RlSpec s;
  s.enabled = rl_given(r);
  if (!s.enabled) return s;
  s.algorithm = from_string(in.text("rl.algorithm"), RlAlgorithm::grpo);
  s.prompts = in.integer("rl.prompts", 0);
  s.samples = in.integer("rl.samples_per_prompt", default_samples(s.algorithm));
  s.prompt_length = in.integer("rl.prompt_length");
  s.response_length = in.integer("rl.response_length");
  s.mean_prompt_length = in.number("rl.mean_prompt_length", static_cast<double>(s.prompt_length));
  s.mean_response_length =
      in.number("rl.mean_response_length", static_cast<double>(s.response_length) / 2);
  s.mini_batch_prompts = in.integer("rl.mini_batch_prompts", s.prompts);
  s.epochs = static_cast<int>(in.integer("rl.epochs"));
  s.placement = from_string(in.text("rl.placement"), RlPlacement::colocated);
  s.rollout_gpus = static_cast<int>(in.integer("rl.rollout_gpus"));
  s.off_policy = in.boolean("rl.off_policy");
  s.engine = from_string(in.text("rl.engine"), RlEngine::vllm);
  s.rollout_tp = static_cast<int>(in.integer("rl.rollout_tp"));
  s.memory_fraction = in.number("rl.memory_fraction");
  s.max_num_seqs = in.integer("rl.max_num_seqs");
  s.max_batched_tokens = in.integer("rl.max_batched_tokens");
  s.kv_dtype = from_string(in.text("rl.kv_dtype"), DType::bf16);
  s.cuda_graphs = in.boolean("rl.cuda_graphs");
  s.sleep = from_string(in.text("rl.sleep"), RlSleep::discard);
  s.sync_bucket = in.number("rl.sync_bucket");
  s.async_scheduling = in.boolean("rl.async_scheduling");
  s.step_overhead = in.number("rl.step_overhead");
  s.generation_rounds = in.number("rl.generation_rounds");
  s.decode_efficiency = in.number("rl.decode_efficiency", in.number("cluster.memory_efficiency"));
  s.offload_params = in.boolean("rl.offload_params");
  s.offload_optimizer = in.boolean("rl.offload_optimizer");
  s.offload_copy = from_string(in.text("rl.offload_copy"), RlOffloadCopy::pageable);
  s.old_log_probs = in.boolean("rl.old_log_probs");
  s.reference =
      given(r, "rl.reference") ? in.boolean("rl.reference") : s.algorithm != RlAlgorithm::dapo;
  s.reward_model = in.boolean("rl.reward_model");
  s.frozen_weights = from_string(in.text("rl.frozen_weights"), RlFrozen::resident);
  s.log_prob_micro_batch =
      in.integer("rl.log_prob_micro_batch", in.integer("training.micro_batch", 1));
  s.log_prob_entropy = in.boolean("rl.log_prob_entropy", true);
  s.response_logits_only = in.boolean("rl.response_logits_only", false);
  return s;
}

}  // namespace

void free_layout(Resolution& r, std::vector<Diagnostic>& errors) {
  Reader in(r, errors);
  if (in.text("training.framework") == "auto") {
    auto [name, why] = infer_framework(r, in);
    record_text(r, "training.framework", name);
    r.framework_basis = why;
  }
  // The world stays the plan's: a plan that sized it by its layout (no cluster.nodes) keeps
  // that many GPUs.
  if (!in.has("cluster.nodes") && in.has("parallel.dp")) {
    const std::int64_t needed = in.integer("parallel.tp", 1) * in.integer("parallel.pp", 1) *
                                in.integer("parallel.cp", 1) * in.integer("parallel.dp", 1);
    const std::int64_t gpn = in.integer("cluster.gpus_per_node");
    const std::string& gpn_from = r.settings.at("cluster.gpus_per_node").origin.what;
    if (needed > 0 && needed < gpn && (gpn_from == "default" || gpn_from == "preset")) {
      record(r, "cluster.gpus_per_node", needed);
      record(r, "cluster.nodes", 1);
    } else if (gpn > 0 && needed % gpn == 0 && needed / gpn <= 1000000) {
      record(r, "cluster.nodes", std::max<std::int64_t>(1, needed / gpn));
    }
  }
  for (const char* key :
       {"parallel.tp", "parallel.pp", "parallel.dp", "parallel.cp", "parallel.ep", "parallel.etp",
        "parallel.stage_layers", "parallel.virtual_stages", "parallel.sequence_parallel",
        "parallel.zero_shard_size", "parallel.placement", "training.grad_accum"}) {
    // Back to the built-in default, or to no value where the key has none (dp: the world).
    const std::string k = key;
    r.settings.erase(k);
    const KeySpec* spec = find_key(k.substr(0, k.find('.')), k.substr(k.find('.') + 1));
    if (spec)
      if (auto d = default_setting(*spec)) r.settings[k] = *d;
  }
}

void build_input(Resolution& r, PlanInput& out, std::vector<Diagnostic>& errors) {
  Reader in(r, errors);
  out.model = build_model(r, errors);
  out.cluster.gpu = build_gpu(r, errors);
  const bool sections_ok = errors.empty();
  std::string framework_basis = r.framework_basis;
  if (in.text("training.framework") == "auto") {
    auto [name, why] = infer_framework(r, in);
    record_text(r, "training.framework", name);
    framework_basis = why;
  }
  prepare_rl(r, in);
  out.training = build_training(r, in);
  out.training.framework_basis = framework_basis;
  out.parallel = build_parallel(r, in);
  derive_world(r, in, out);
  const bool world_ok = errors.empty();
  if (out.training.framework == Framework::megatron && !given(r, "parallel.bucket_size") &&
      out.parallel.dp > 0) {
    // Megatron-Core DDP: buckets of max(4e7, 1e6 × data-parallel size) elements in the
    // reduction's dtype (distributed_data_parallel.py; the group is dp × cp).
    const double ranks = static_cast<double>(out.parallel.dp) * out.parallel.cp;
    out.parallel.bucket_size = std::max(4e7, 1e6 * ranks) * dtype_bytes(out.training.reduce_dtype);
    record(r, "parallel.bucket_size", out.parallel.bucket_size,
           fmt::format("\"{:.0f} MB\"", out.parallel.bucket_size / 1e6));
  }
  out.cluster = build_cluster(in, out.cluster);
  if (out.training.framework == Framework::megatron &&
      in.has("cluster.fused_attention_efficiency")) {
    // Megatron-LM's attention is Transformer Engine's cuDNN fused kernel, not PyTorch's SDPA:
    // the GPU preset's fused rate replaces its flash-attention rate unless the plan, --set or a
    // calibration gave attention_efficiency itself.
    const auto it = r.settings.find("cluster.attention_efficiency");
    const bool from_preset = it == r.settings.end() || it->second.origin.what == "preset" ||
                             it->second.origin.what == "default";
    if (from_preset) {
      out.cluster.attention_efficiency = in.number("cluster.fused_attention_efficiency");
      record(r, "cluster.attention_efficiency", out.cluster.attention_efficiency,
             fmt::format("{}", out.cluster.attention_efficiency));
    }
  }
  if (!given(r, "cluster.fragmentation")) {
    // Reserved over allocated as a share of the dynamic memory: 0.3 for PyTorch's caching
    // allocator as it comes, 0.1 with expandable segments (docs/formulas.md#overheads: the
    // first fit on the dev sources that ran without them, the second on torchtitan's).
    out.cluster.fragmentation = default_fragmentation(out.training.expandable_segments);
    record(r, "cluster.fragmentation", out.cluster.fragmentation,
           fmt::format("{}", out.cluster.fragmentation));
  }
  out.checkpoint = build_checkpoint(in);
  out.rl = build_rl(r, in);
  if (!out.rl.enabled) {
    // A plan without an [rl] section has no RL inputs: its report lists none of their defaults.
    for (auto it = r.settings.begin(); it != r.settings.end();)
      it = it->first.rfind("rl.", 0) == 0 ? r.settings.erase(it) : std::next(it);
  }
  // Cross-field rules need a complete model; the world-size rules need a consistent world.
  if (sections_ok) validate(r, out, world_ok, errors);
  const std::int64_t accum = in.integer("training.grad_accum", 0);
  out.training.grad_accum = accum;
  if (errors.empty() && accum > 0) {
    const std::int64_t from_accum = out.training.micro_batch * out.parallel.dp * accum;
    if (out.training.global_batch == 0) {
      out.training.global_batch = from_accum;
      record(r, "training.global_batch", out.training.global_batch);
    } else if (out.training.global_batch != from_accum) {
      in.error("training.grad_accum",
               fmt::format("training.grad_accum ({}) × micro_batch ({}) × dp ({}) = {}, but "
                           "training.global_batch is {}",
                           accum, out.training.micro_batch, out.parallel.dp, from_accum,
                           out.training.global_batch));
    }
  }
  if (errors.empty() && out.training.global_batch == 0) {
    out.training.global_batch = out.training.micro_batch * out.parallel.dp;
    record(r, "training.global_batch", out.training.global_batch);
  }
}

}  // namespace trainledger::config
