// `plan --emit megatron|deepspeed|torchtitan`: the settings that realise a plan in that stack,
// the inverse of the importers (docs/config.md#importing-training-configs), so a chosen plan can
// be launched. What the stack cannot express is said in comments (or, for JSON, in a "_comment"
// list), never silently dropped.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "format.hpp"
#include "trainledger/report.hpp"
#include "trainledger/text.hpp"

namespace trainledger::report {

namespace {

std::string megatron(const PlanInput& in, const std::string& title) {
  const ModelSpec& m = in.model;
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  std::vector<std::string> notes;
  std::vector<std::string> args;
  auto arg = [&](const std::string& flag, auto value) {
    args.push_back(fmt::format("{} {}", flag, value));
  };
  auto flag = [&](const std::string& f) { args.push_back(f); };
  if (m.count_only) {
    notes.push_back("a count-only model has no architecture to emit: give the model arguments");
  } else {
    arg("--num-layers", m.layers);
    arg("--hidden-size", m.hidden);
    arg("--num-attention-heads", m.heads);
    if (m.kv_heads != m.heads) {
      flag("--group-query-attention");
      arg("--num-query-groups", m.kv_heads);
    }
    arg("--kv-channels", head_dim(m));
    arg("--ffn-hidden-size", m.ffn);
    arg("--vocab-size", m.vocab);
    if (m.ffn_act == FfnAct::swiglu) flag("--swiglu");
    if (m.ffn_act == FfnAct::geglu || m.ffn_act == FfnAct::relu)
      notes.push_back(
          fmt::format("model.ffn_act = {}: no Megatron-LM argument", to_string(m.ffn_act)));
    arg("--normalization", m.norm == NormKind::rmsnorm ? "RMSNorm" : "LayerNorm");
    if (!m.tied_embeddings) flag("--untie-embeddings-and-output-weights");
    if (m.bias == BiasKind::none) flag("--disable-bias-linear");
    if (m.bias == BiasKind::qkv) {
      flag("--disable-bias-linear");
      flag("--add-qkv-bias");
    }
    if (is_moe(m)) {
      arg("--num-experts", m.experts);
      arg("--moe-router-topk", m.experts_per_token);
      arg("--moe-ffn-hidden-size", m.expert_ffn);
      if (m.shared_experts > 0)
        arg("--moe-shared-expert-intermediate-size", m.shared_experts * shared_ffn(m));
      if (t.moe_capacity_factor > 0) arg("--moe-expert-capacity-factor", t.moe_capacity_factor);
    }
    if (is_mla(m) || m.dense_layers > 0 || m.moe_every > 1 || m.qk_norm != QkNorm::none ||
        m.lm_head_bias || m.norm == NormKind::none || m.attention_chunk > 0)
      notes.push_back(
          "the model's MLA, dense layers among the MoE ones (--moe-layer-freq), chunked "
          "attention, QK-norm or head bias are not emitted: add Megatron-LM's arguments for "
          "them");
  }
  arg("--micro-batch-size", t.micro_batch);
  arg("--global-batch-size", t.global_batch);
  arg("--seq-length", t.seq_len);
  if (t.precision == DType::bf16 || t.precision == DType::fp8) flag("--bf16");
  if (t.precision == DType::fp16) flag("--fp16");
  // Megatron-LM's low-precision flags (megatron/core/enums.py Fp8Recipe, Fp4Recipe;
  // --fp8-recipe defaults to delayed): MXFP8 and NVFP4 use E4M3 throughout.
  if (t.recipe == Recipe::nvfp4) {
    arg("--fp4-format", "e2m1");
    arg("--fp4-recipe", "nvfp4");
  } else if (t.precision == DType::fp8) {
    arg("--fp8-format", t.recipe == Recipe::mxfp8 ? "e4m3" : "hybrid");
    if (t.recipe != Recipe::rowwise) arg("--fp8-recipe", to_string(t.recipe));
  }
  if (t.grad_dtype == DType::bf16 && t.reduce_dtype == DType::bf16) flag("--grad-reduce-in-bf16");
  arg("--tensor-model-parallel-size", p.tp);
  arg("--pipeline-model-parallel-size", p.pp);
  if (p.cp > 1) arg("--context-parallel-size", p.cp);
  if (p.ep > 1) arg("--expert-model-parallel-size", p.ep);
  // Megatron-LM's default expert tensor-parallel size is tp (training/arguments.py).
  if (is_moe(in.model) && expert_tp(p) != p.tp) arg("--expert-tensor-parallel-size", expert_tp(p));
  if (p.ep > 1 && p.ep_dispatch == EpDispatch::deepep) flag("--moe-enable-deepep");
  if (p.ep > 1 && p.ep_dispatch == EpDispatch::allgather)
    arg("--moe-token-dispatcher-type", "allgather");
  if (p.schedule == Schedule::interleaved)
    arg("--virtual-pipeline-model-parallel-size", p.virtual_stages);
  if (p.schedule == Schedule::gpipe || p.schedule == Schedule::zb_h1 ||
      p.schedule == Schedule::dualpipev)
    notes.push_back(fmt::format("parallel.schedule = {}: Megatron-LM runs 1F1B or interleaved",
                                to_string(p.schedule)));
  if (t.activation_offload_layers > 0)
    arg("--cpu-offloading-num-layers", t.activation_offload_layers);
  if (p.sequence_parallel) flag("--sequence-parallel");
  if (p.zero == 1) flag("--use-distributed-optimizer");
  if (p.fp8_param_gather)
    flag(t.recipe == Recipe::nvfp4 ? "--fp4-param-gather" : "--fp8-param-gather");
  if (p.fp8_param_gather && t.recipe == Recipe::mxfp8) flag("--reuse-grad-buf-for-mxfp8-param-ag");
  if (p.zero >= 2)
    notes.push_back(
        fmt::format("parallel.zero = {}: Megatron-LM's distributed optimizer shards "
                    "the optimizer state only (ZeRO-1); use its FSDP for more",
                    p.zero));
  if (p.overlap_dp) flag("--overlap-grad-reduce");
  if (p.overlap_param_gather) flag("--overlap-param-gather");
  if (p.overlap_tp) flag("--tp-comm-overlap");
  if (t.recompute == Recompute::full) arg("--recompute-granularity", "full");
  if (t.recompute == Recompute::selective) arg("--recompute-granularity", "selective");
  if (t.recompute == Recompute::op)
    notes.push_back("training.recompute = op (torchtitan's save list): no Megatron-LM argument");
  if (t.recompute == Recompute::full && t.recompute_layers < 1)
    notes.push_back(
        "training.recompute_layers < 1: add --recompute-method block "
        "--recompute-num-layers for the share");
  if (t.loss == Loss::fused) flag("--cross-entropy-loss-fusion");
  std::string out = fmt::format(
      "# Megatron-LM launch for {} (trainledger plan --emit megatron); add the data, tokenizer,\n"
      "# learning-rate and checkpoint arguments. One process per GPU on every node.\n",
      text::comment(title));
  for (const std::string& n : notes) out += "# not emitted: " + n + "\n";
  // The allocator's option is the environment's, not an argument (the importer reads it back).
  if (t.expandable_segments) out += "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n";
  out += fmt::format("torchrun --nproc_per_node {} --nnodes {} pretrain_gpt.py \\\n",
                     in.cluster.gpus_per_node, in.cluster.nodes);
  for (std::size_t i = 0; i < args.size(); ++i)
    out += "  " + args[i] + (i + 1 < args.size() ? " \\\n" : "\n");
  return out;
}

std::string deepspeed(const PlanInput& in, const std::string& title) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  nlohmann::ordered_json j;
  std::vector<std::string> notes = {
      fmt::format("DeepSpeed config for {} (trainledger plan --emit deepspeed); the model and "
                  "the cluster are the launcher's",
                  title)};
  j["train_micro_batch_size_per_gpu"] = t.micro_batch;
  j["train_batch_size"] = t.global_batch;
  if (t.precision == DType::bf16) j["bf16"] = {{"enabled", true}};
  if (t.precision == DType::fp16) j["fp16"] = {{"enabled", true}};
  if (t.precision == DType::fp8)
    notes.push_back("training.precision = fp8: DeepSpeed needs Transformer Engine in the model");
  nlohmann::ordered_json z;
  z["stage"] = p.zero;
  z["overlap_comm"] = p.overlap_dp;
  z["reduce_bucket_size"] = std::llround(p.bucket_size / 2);  // elements of 2 B
  z["allgather_bucket_size"] = std::llround(p.allgather_bucket);
  if (p.zero >= 3) {
    z["stage3_max_live_parameters"] = std::llround(p.zero3_live_params);
    z["stage3_prefetch_bucket_size"] = std::llround(p.zero3_prefetch);
  }
  if (p.offload == Offload::optimizer || p.offload == Offload::optimizer_params)
    z["offload_optimizer"] = {{"device", "cpu"}};
  if (p.offload == Offload::optimizer_params) z["offload_param"] = {{"device", "cpu"}};
  j["zero_optimization"] = z;
  switch (t.optimizer) {
    case Optimizer::adamw:
      j["optimizer"] = {{"type", "AdamW"}};
      break;
    case Optimizer::lion:
      j["optimizer"] = {{"type", "Lion"}};
      break;
    case Optimizer::sgd_momentum:
      j["optimizer"] = {{"type", "SGD"}};
      break;
    default:
      notes.push_back(fmt::format("training.optimizer = {}: no DeepSpeed optimizer type",
                                  to_string(t.optimizer)));
  }
  if (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1)
    notes.push_back("tp, pp, cp and ep are the model code's (Megatron-DeepSpeed), not this file's");
  if (t.recompute != Recompute::none)
    notes.push_back("training.recompute: the model code turns activation checkpointing on");
  j["_comment"] = notes;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string torchtitan(const PlanInput& in, const std::string& title) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  std::string out =
      fmt::format("# torchtitan job config for {} (trainledger plan --emit torchtitan)\n",
                  text::comment(title));
  static const std::map<std::string, std::pair<std::string, std::string>> flavors = {
      {"Llama-3.1-8B", {"llama3", "8B"}},      {"Llama-3.1-70B", {"llama3", "70B"}},
      {"Llama-3.1-405B", {"llama3", "405B"}},  {"Llama-2-7B", {"llama2", "7B"}},
      {"Llama-2-13B", {"llama2", "13B"}},      {"Llama-2-70B", {"llama2", "70B"}},
      {"DeepSeek-V3", {"deepseek_v3", "671B"}}};
  out += "\n[model]\n";
  const auto f = flavors.find(in.model.name);
  if (f != flavors.end())
    out += fmt::format("name = \"{}\"\nflavor = \"{}\"\n", f->second.first, f->second.second);
  else
    out += fmt::format("# not emitted: no torchtitan flavor for \"{}\"\n",
                       text::comment(in.model.name));
  // torchtitan's converters (components/quantization/float8.py, mx.py): float8 takes the
  // tensorwise and rowwise recipes, mx the MXFP8 one.
  if (t.recipe == Recipe::mxfp8)
    out += "converters = [\"mx\"]\n";
  else if (t.precision == DType::fp8 && t.recipe != Recipe::nvfp4)
    out += "converters = [\"float8\"]\n";
  out += "\n[training]\n";
  out += fmt::format("local_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\n", t.micro_batch,
                     t.global_batch, t.seq_len);
  if (t.precision == DType::fp32) out += "mixed_precision_param = \"float32\"\n";
  out += "\n[parallelism]\n";
  out += fmt::format(
      "tensor_parallel_degree = {}\npipeline_parallel_degree = {}\n"
      "context_parallel_degree = {}\n",
      p.tp, p.pp, p.cp);
  if (p.ep > 1) out += fmt::format("expert_parallel_degree = {}\n", p.ep);
  // torchtitan's default expert tensor-parallel degree is 1 (config/job_config.py).
  if (p.ep > 1) out += fmt::format("expert_tensor_parallel_degree = {}\n", expert_tp(p));
  // torchtitan's ParallelDims: world = dp_replicate × dp_shard × cp × tp × pp, and FSDP
  // shards over dp_shard × cp (torchtitan/distributed/parallel_dims.py). The plan's dp is
  // dp_replicate × dp_shard; its HSDP shard group (zero_shard_size) spans dp_shard × cp ranks.
  int shard = 1;
  int replicate = p.dp;
  if (p.zero >= 3) {
    const int group = p.zero_shard_size > 0 ? p.zero_shard_size : p.dp * p.cp;
    if (group % p.cp == 0 && p.dp % (group / p.cp) == 0) {
      shard = group / p.cp;
      replicate = p.dp / shard;
    } else {
      shard = p.dp;
      replicate = 1;
      out += fmt::format(
          "# not emitted: parallel.zero_shard_size = {}: torchtitan's shard groups are "
          "whole multiples of cp ({})\n",
          p.zero_shard_size, p.cp);
    }
  } else if (p.zero > 0) {
    out += fmt::format(
        "# not emitted: parallel.zero = {}: torchtitan shards with FSDP (3) or replicates (0); "
        "emitted as replicas\n",
        p.zero);
  }
  out += fmt::format("data_parallel_replicate_degree = {}\ndata_parallel_shard_degree = {}\n",
                     replicate, shard);
  if (p.zero >= 3)
    out += fmt::format("fsdp_reshard_after_forward = \"{}\"\n",
                       p.reshard_after_forward ? "always" : "never");
  if (p.pp > 1) {
    const char* schedule = p.schedule == Schedule::gpipe         ? "GPipe"
                           : p.schedule == Schedule::interleaved ? "Interleaved1F1B"
                           : p.schedule == Schedule::dualpipev   ? "DualPipeV"
                                                                 : "1F1B";
    out += fmt::format("pipeline_parallel_schedule = \"{}\"\n", schedule);
  }
  if (p.overlap_tp) out += "enable_async_tensor_parallel = true\n";
  out += "\n[activation_checkpoint]\n";
  if (t.recompute == Recompute::none) out += "mode = \"none\"\n";
  if (t.recompute == Recompute::op) out += "mode = \"selective\"\nselective_ac_option = \"op\"\n";
  if (t.recompute == Recompute::full && t.recompute_layers >= 1) out += "mode = \"full\"\n";
  if (t.recompute == Recompute::full && t.recompute_layers < 1)
    out += fmt::format("mode = \"selective\"\nselective_ac_option = \"{}\"\n",
                       std::lround(1 / std::max(t.recompute_layers, 1e-9)));
  if (t.recompute == Recompute::selective)
    out +=
        "# not emitted: training.recompute = selective (Megatron's attention-core "
        "recompute)\nmode = \"none\"\n";
  out += fmt::format("\n[compile]\nenable = {}\n", t.compile ? "true" : "false");
  if (p.fp8_all_gather || t.recipe == Recipe::rowwise) {
    out += "\n[quantize.linear.float8]\n";
    if (p.fp8_all_gather) out += "enable_fsdp_float8_all_gather = true\n";
    if (t.recipe == Recipe::rowwise) out += "recipe_name = \"rowwise\"\n";
  }
  if (t.recipe == Recipe::mxfp8) out += "\n[quantize.linear.mx]\nrecipe_name = \"mxfp8_cublas\"\n";
  if (t.recipe == Recipe::nvfp4)
    out +=
        "\n# not emitted: training.recipe = nvfp4 (torchtitan's NVFP4 converter is configured in "
        "Python, components/quantization/nvfp4.py)\n";
  if (t.recipe == Recipe::delayed || t.recipe == Recipe::blockwise)
    out += fmt::format("\n# not emitted: training.recipe = {} (a Transformer Engine recipe)\n",
                       to_string(t.recipe));
  return out;
}

}  // namespace

std::string emit_config(const PlanInput& in, const std::string& stack, const std::string& title) {
  if (stack == "megatron") return megatron(in, title);
  if (stack == "deepspeed") return deepspeed(in, title);
  return torchtitan(in, title);
}

}  // namespace trainledger::report
