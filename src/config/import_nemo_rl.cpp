// NeMo-RL YAML configs (examples/configs/*.yaml and the recipes under
// examples/configs/recipes/): the keys of a GRPO run that shape an RL plan. A recipe names its
// parent with `defaults:` (a path relative to the recipe, as nemo_rl/utils/config.py
// load_config_with_inheritance reads it), whose keys it overrides; `${a.b}` interpolations
// (OmegaConf) of another key are resolved. Read with yaml-cpp after a structural check: the
// files come from pull requests.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "import_sink.hpp"
#include "yaml_flat.hpp"

namespace trainledger::config::importing {

namespace {

constexpr int k_max_chain = 8;          // files in a defaults chain
constexpr int k_max_interpolation = 8;  // ${...} resolved within ${...}

std::optional<bool> flag_of(std::string_view v) {
  if (v == "true" || v == "True" || v == "TRUE") return true;
  if (v == "false" || v == "False" || v == "FALSE") return false;
  return std::nullopt;
}

// Resolves ${a.b} references to other keys of the config (OmegaConf's node interpolation);
// other resolvers (${oc.env:...}, ${mul:...}) are left as written.
std::string interpolated(const Flat& flat, const std::string& v, int depth = 0) {
  if (depth > k_max_interpolation || v.size() < 4 || v.rfind("${", 0) != 0 || v.back() != '}')
    return v;
  const std::string ref = v.substr(2, v.size() - 3);
  if (ref.find_first_of(":${} ") != std::string::npos) return v;
  const auto it = flat.find(ref);
  if (it == flat.end() || it->second.null) return v;
  return interpolated(flat, it->second.value, depth + 1);
}

// What each key of the config becomes (the rest are listed as ignored).
enum class Kind { integer, number, flag, not_flag, custom };
struct Mapping {
  const char* name;
  const char* key;
  Kind kind;
};
const Mapping k_keys[] = {
    {"grpo.num_prompts_per_step", "rl.prompts", Kind::integer},
    {"grpo.num_generations_per_prompt", "rl.samples_per_prompt", Kind::integer},
    {"data.max_input_seq_length", "rl.prompt_length", Kind::integer},
    {"policy.generation.max_new_tokens", "rl.response_length", Kind::integer},
    {"policy.max_total_sequence_length", "training.seq_len", Kind::integer},
    {"policy.train_micro_batch_size", "training.micro_batch", Kind::integer},
    {"policy.logprob_batch_size", "rl.log_prob_micro_batch", Kind::integer},
    {"policy.generation.vllm_cfg.tensor_parallel_size", "rl.rollout_tp", Kind::integer},
    {"policy.generation.vllm_cfg.gpu_memory_utilization", "rl.memory_fraction", Kind::number},
    {"policy.generation.vllm_cfg.max_num_seqs", "rl.max_num_seqs", Kind::integer},
    {"policy.generation.vllm_cfg.enforce_eager", "rl.cuda_graphs", Kind::not_flag},
    {"cluster.gpus_per_node", "cluster.gpus_per_node", Kind::integer},
    {"cluster.num_nodes", "cluster.nodes", Kind::integer},
    {"policy.train_global_batch_size", "", Kind::custom},
    {"policy.precision", "", Kind::custom},
    {"policy.megatron_cfg.enabled", "", Kind::custom},
    {"policy.dtensor_cfg.enabled", "", Kind::custom},
    {"policy.generation.backend", "", Kind::custom},
    {"policy.generation.colocated.enabled", "", Kind::custom},
    {"grpo.async_grpo.enabled", "", Kind::custom},
    {"grpo.use_dynamic_sampling", "", Kind::custom},
    {"grpo.skip_reference_policy_logprobs_calculation", "", Kind::custom},
    {"policy.model_name", "", Kind::custom},
    {"policy.generation.vllm_cfg.kv_cache_dtype", "", Kind::custom},
};
// The training layout, read from the backend that is enabled.
const Mapping k_megatron[] = {
    {"policy.megatron_cfg.tensor_model_parallel_size", "parallel.tp", Kind::integer},
    {"policy.megatron_cfg.pipeline_model_parallel_size", "parallel.pp", Kind::integer},
    {"policy.megatron_cfg.context_parallel_size", "parallel.cp", Kind::integer},
    {"policy.megatron_cfg.expert_model_parallel_size", "parallel.ep", Kind::integer},
    {"policy.megatron_cfg.expert_tensor_parallel_size", "parallel.etp", Kind::integer},
    {"policy.megatron_cfg.sequence_parallel", "parallel.sequence_parallel", Kind::flag},
    {"policy.megatron_cfg.activation_checkpointing", "", Kind::custom},
    {"policy.megatron_cfg.optimizer.use_distributed_optimizer", "", Kind::custom},
    {"policy.megatron_cfg.moe_token_dispatcher_type", "", Kind::custom},
    {"policy.megatron_cfg.moe_enable_deepep", "", Kind::custom},
};
const Mapping k_dtensor[] = {
    {"policy.dtensor_cfg.tensor_parallel_size", "parallel.tp", Kind::integer},
    {"policy.dtensor_cfg.context_parallel_size", "parallel.cp", Kind::integer},
    {"policy.dtensor_cfg.sequence_parallel", "parallel.sequence_parallel", Kind::flag},
    {"policy.dtensor_cfg.activation_checkpointing", "", Kind::custom},
};

}  // namespace

void import_nemo_rl(const std::string& text, Sink& s, const DefaultsReader& read_defaults) {
  // The chain: the recipe, its defaults, theirs ... (at most k_max_chain files), read first to
  // last, then merged last to first so that each file overrides its parent.
  std::vector<Flat> chain;
  std::string current_text = text, current_path = s.path();
  for (int depth = 0; depth < k_max_chain; ++depth) {
    Flat one;
    if (!read_flat_yaml(current_text, current_path, s, "NeMo-RL's keys", one)) return;
    const auto parent = one.find("defaults");
    const bool has_parent = parent != one.end();
    const Leaf p = has_parent ? parent->second : Leaf{};
    const bool nested = std::any_of(
        one.begin(), one.end(), [](const auto& kv) { return kv.first.rfind("defaults.", 0) == 0; });
    chain.push_back(std::move(one));
    if (!has_parent && !nested) break;
    const Origin at = has_parent ? origin_of(p) : Origin{current_path, 1, 1, "import"};
    if (nested || p.null || p.value.empty() || p.value.front() == '[') {
      s.error(at, "defaults: expected the path of one parent config");
      return;
    }
    if (depth + 1 == k_max_chain) {
      s.error(at, fmt::format("defaults: a chain of more than {} files", k_max_chain));
      return;
    }
    std::string why, resolved;
    const std::optional<std::string> next = read_defaults(current_path, p.value, resolved, why);
    if (!next) {
      s.error(at, fmt::format("defaults: cannot read {}: {}", in_quotes(p.value), why));
      return;
    }
    current_text = *next;
    current_path = resolved;
  }
  Flat flat;
  for (auto f = chain.rbegin(); f != chain.rend(); ++f)
    for (auto& [k, v] : *f) flat[k] = std::move(v);
  flat.erase("defaults");

  auto value = [&](const std::string& k) -> std::optional<std::string> {
    const auto it = flat.find(k);
    if (it == flat.end() || it->second.null) return std::nullopt;
    return interpolated(flat, it->second.value);
  };
  auto origin = [&](const std::string& k) {
    const Leaf& l = flat.at(k);
    return Origin{l.file, l.line, l.column, "import"};
  };
  auto flag = [&](const std::string& k) -> std::optional<bool> {
    const auto v = value(k);
    if (!v) return std::nullopt;
    const auto b = flag_of(*v);
    if (!b) s.error(origin(k), fmt::format("{}: {}: expected true or false", k, in_quotes(*v)));
    return b;
  };
  std::map<std::string, bool> used;
  auto apply = [&](const Mapping& m) {
    used[m.name] = true;
    const auto v = value(m.name);
    if (!v || m.kind == Kind::custom) return;
    const Origin o = origin(m.name);
    const std::string said = fmt::format("{}: {}", m.name, in_quotes(*v));
    switch (m.kind) {
      case Kind::integer: {
        const auto x = parse_int(*v);
        if (!x)
          s.error(o, said + ": expected an integer");
        else
          s.put(m.key, integer_value(*x, o));
        return;
      }
      case Kind::number: {
        const auto x = parse_number(*v);
        if (!x)
          s.error(o, said + ": expected a number");
        else
          s.put(m.key, number_value(*x, o));
        return;
      }
      case Kind::flag:
      case Kind::not_flag: {
        const auto b = flag_of(*v);
        if (!b)
          s.error(o, said + ": expected true or false");
        else
          s.put(m.key, boolean_value(m.kind == Kind::flag ? *b : !*b, o));
        return;
      }
      case Kind::custom:
        return;
    }
  };
  for (const Mapping& m : k_keys) apply(m);

  // NeMo-RL's conventions where the planner's defaults differ (grpo.py; docs/rl.md): the
  // policy's state goes to the host around the refit, the reference is swapped into the
  // policy's parameters for its pass, training packs sequences (the planner's mean lengths).
  const Origin dflt{s.path(), 0, 0, "import"};
  s.put("rl.algorithm", string_value("grpo", dflt));
  s.put("rl.reference", boolean_value(true, dflt));
  s.put("rl.frozen_weights", string_value("swap", dflt));
  s.put("rl.epochs", integer_value(1, dflt));
  // The training backend: Megatron-Core when its section is enabled, else DTensor (FSDP2).
  const bool megatron = flag("policy.megatron_cfg.enabled").value_or(false);
  const bool dtensor = !megatron && flag("policy.dtensor_cfg.enabled").value_or(true);
  if (megatron) {
    const Origin o = origin("policy.megatron_cfg.enabled");
    s.put("training.framework", string_value("megatron", o));
    for (const Mapping& m : k_megatron) apply(m);
    const bool dist =
        flag("policy.megatron_cfg.optimizer.use_distributed_optimizer").value_or(true);
    s.put("parallel.zero", integer_value(dist ? 1 : 0, flat.count("policy.megatron_cfg.optimizer."
                                                                  "use_distributed_optimizer")
                                                           ? origin("policy.megatron_cfg.optimizer."
                                                                    "use_distributed_optimizer")
                                                           : o));
    if (const auto b = flag("policy.megatron_cfg.activation_checkpointing"))
      s.put("training.recompute",
            string_value(*b ? "full" : "none",
                         origin("policy.megatron_cfg.activation_checkpointing")));
    // The MoE token dispatcher (grpo_math_1B.yaml: allgather at v0.5, alltoall at v0.6; DeepEP
    // through the flex dispatcher with moe_enable_deepep).
    if (flag("policy.megatron_cfg.moe_enable_deepep").value_or(false)) {
      s.put("parallel.ep_dispatch",
            string_value("deepep", origin("policy.megatron_cfg.moe_enable_deepep")));
    } else if (const auto d = value("policy.megatron_cfg.moe_token_dispatcher_type")) {
      const Origin od = origin("policy.megatron_cfg.moe_token_dispatcher_type");
      if (*d == "allgather")
        s.put("parallel.ep_dispatch", string_value("allgather", od));
      else if (*d == "alltoall")
        s.put("parallel.ep_dispatch", string_value("nccl", od));
      else if (*d != "flex")
        s.error(od, fmt::format("policy.megatron_cfg.moe_token_dispatcher_type: \"{}\": expected "
                                "allgather, alltoall or flex",
                                *d));
    }
  } else if (dtensor) {
    const Origin o =
        flat.count("policy.dtensor_cfg.enabled") ? origin("policy.dtensor_cfg.enabled") : dflt;
    s.put("training.framework", string_value("pytorch", o));
    s.put("parallel.zero", integer_value(3, o));
    for (const Mapping& m : k_dtensor) apply(m);
    if (const auto b = flag("policy.dtensor_cfg.activation_checkpointing"))
      s.put("training.recompute",
            string_value(*b ? "full" : "none",
                         origin("policy.dtensor_cfg.activation_checkpointing")));
  }
  // The other backend's keys say nothing about this run.
  for (const auto& [k, l] : flat)
    if ((megatron && k.rfind("policy.dtensor_cfg.", 0) == 0) ||
        (!megatron && k.rfind("policy.megatron_cfg.", 0) == 0))
      used[k] = true;

  if (const auto v = value("policy.precision")) {
    const Origin o = origin("policy.precision");
    if (*v == "bfloat16" || *v == "bf16")
      s.put("training.precision", string_value("bf16", o));
    else if (*v == "float16" || *v == "fp16")
      s.put("training.precision", string_value("fp16", o));
    else
      s.ignore("policy.precision: " + in_quotes(*v), "a precision the planner does not model here");
  }
  // Sequences per optimizer step → prompts per mini-batch.
  if (const auto v = value("policy.train_global_batch_size")) {
    const Origin o = origin("policy.train_global_batch_size");
    const auto gbs = parse_int(*v);
    const auto n = parse_int(value("grpo.num_generations_per_prompt").value_or("16"));
    if (!gbs || *gbs < 1)
      s.error(o, fmt::format("policy.train_global_batch_size: {}: expected a positive integer",
                             in_quotes(*v)));
    else if (n && *n > 0 && *gbs % *n == 0)
      s.put("rl.mini_batch_prompts", integer_value(*gbs / *n, o));
    else
      s.error(o, fmt::format("policy.train_global_batch_size {} is not a whole number of "
                             "prompts' generations (grpo.num_generations_per_prompt {})",
                             *gbs, n ? std::to_string(*n) : std::string("?")));
  }
  if (const auto v = value("policy.generation.vllm_cfg.kv_cache_dtype")) {
    // vLLM's "auto" keeps the model's dtype.
    const Origin o = origin("policy.generation.vllm_cfg.kv_cache_dtype");
    if (*v == "auto")
      s.put("rl.kv_dtype",
            string_value(
                value("policy.precision").value_or("bfloat16") == "float16" ? "fp16" : "bf16", o));
    else if (v->rfind("fp8", 0) == 0)
      s.put("rl.kv_dtype", string_value("fp8", o));
    else
      s.ignore("policy.generation.vllm_cfg.kv_cache_dtype: " + in_quotes(*v),
               "a KV dtype the planner does not model: auto or fp8");
  }
  if (const auto v = value("policy.generation.backend"); v && *v != "vllm")
    s.ignore("policy.generation.backend: " + in_quotes(*v),
             "an engine the planner does not model: vllm");
  // Placement: colocated unless the generation has resources of its own.
  if (const auto b = flag("policy.generation.colocated.enabled")) {
    const Origin o = origin("policy.generation.colocated.enabled");
    s.put("rl.placement", string_value(*b ? "colocated" : "split", o));
    if (*b) {
      // vllm_worker.py sleep(): llm.sleep(level=1), the weights to pinned host memory.
      s.put("rl.sleep", string_value("offload", o));
      s.put("rl.offload_params", boolean_value(true, o));     // offload_after_refit
      s.put("rl.offload_optimizer", boolean_value(true, o));  // offload_before_refit
      // megatron_policy_worker.py: move_optimizer copies each state tensor with .to("cpu")
      // (pageable), move_model the weights through pinned buffers.
      if (megatron) s.put("rl.offload_copy", string_value("pinned_weights", o));
    } else {
      const auto per_node =
          parse_int(value("policy.generation.colocated.resources.gpus_per_node").value_or(""));
      const auto nodes =
          parse_int(value("policy.generation.colocated.resources.num_nodes").value_or("1"));
      used["policy.generation.colocated.resources.gpus_per_node"] = true;
      used["policy.generation.colocated.resources.num_nodes"] = true;
      if (per_node && nodes && *per_node > 0 && *nodes > 0)
        s.put("rl.rollout_gpus", integer_value(*per_node * *nodes, o));
      else
        s.error(o,
                "policy.generation.colocated.enabled false: the generation's GPUs "
                "(policy.generation.colocated.resources.gpus_per_node and num_nodes) are "
                "not given");
      // The cluster of a split run holds both pools: the training pool is the rest.
      const auto all_nodes = parse_int(value("cluster.num_nodes").value_or(""));
      if (nodes && all_nodes && *all_nodes > *nodes)
        s.put("cluster.nodes", integer_value(*all_nodes - *nodes, origin("cluster.num_nodes")));
    }
  }
  if (const auto b = flag("grpo.async_grpo.enabled"); b && *b)
    s.put("rl.off_policy", boolean_value(true, origin("grpo.async_grpo.enabled")));
  if (const auto b = flag("grpo.skip_reference_policy_logprobs_calculation"); b && *b)
    s.put("rl.reference",
          boolean_value(false, origin("grpo.skip_reference_policy_logprobs_calculation")));
  if (const auto b = flag("grpo.use_dynamic_sampling"); b && *b) {
    s.put("rl.algorithm", string_value("dapo", origin("grpo.use_dynamic_sampling")));
    s.put("rl.reference", boolean_value(true, origin("grpo.use_dynamic_sampling")));
    s.ignore("grpo.use_dynamic_sampling: true",
             "the rounds it takes are the run's: set rl.generation_rounds from its logs");
  }
  if (const auto v = value("policy.model_name"))
    s.ignore("policy.model_name: " + in_quotes(*v),
             "a model name: give [model] (model.preset or model.hf_config)");

  // Everything else is listed, by section, as not read.
  std::map<std::string, int> others;
  for (const auto& [k, l] : flat) {
    if (used.count(k)) continue;
    // Grouped by section: its first two names when the key has three or more, else its first.
    const std::size_t first = k.find('.');
    const std::size_t second = first == std::string::npos ? first : k.find('.', first + 1);
    ++others[second != std::string::npos ? k.substr(0, second) : k.substr(0, first)];
  }
  for (const auto& [section, count] : others)
    s.ignore(fmt::format("{}.* ({} {})", section, count, count == 1 ? "key" : "keys"), "");
}

}  // namespace trainledger::config::importing
