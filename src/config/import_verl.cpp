// verl launch scripts (python3 -m verl.trainer.main_ppo key=value ...): the Hydra overrides of
// verl/trainer/config/ppo_trainer.yaml that shape an RL plan. verl's own defaults
// (_generated_ppo_trainer.yaml, rollout.yaml, actor.yaml) stand where the script says nothing
// and the planner's default differs.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "import_sink.hpp"
#include "shell_words.hpp"

namespace trainledger::config::importing {

namespace {

enum class Kind { integer, number, flag, not_flag, custom };

struct Override {
  const char* name;  // the override's key, without a leading + or ++
  const char* key;   // plan key ("" for custom handling)
  Kind kind;
};

const Override k_overrides[] = {
    {"data.train_batch_size", "rl.prompts", Kind::integer},
    {"data.max_prompt_length", "rl.prompt_length", Kind::integer},
    {"data.max_response_length", "rl.response_length", Kind::integer},
    {"actor_rollout_ref.rollout.n", "rl.samples_per_prompt", Kind::integer},
    {"actor_rollout_ref.actor.ppo_mini_batch_size", "rl.mini_batch_prompts", Kind::integer},
    {"actor_rollout_ref.actor.ppo_epochs", "rl.epochs", Kind::integer},
    {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "training.micro_batch", Kind::integer},
    {"actor_rollout_ref.rollout.tensor_model_parallel_size", "rl.rollout_tp", Kind::integer},
    {"actor_rollout_ref.rollout.gpu_memory_utilization", "rl.memory_fraction", Kind::number},
    {"actor_rollout_ref.rollout.max_num_seqs", "rl.max_num_seqs", Kind::integer},
    {"actor_rollout_ref.rollout.max_num_batched_tokens", "rl.max_batched_tokens", Kind::integer},
    {"actor_rollout_ref.rollout.enforce_eager", "rl.cuda_graphs", Kind::not_flag},
    {"actor_rollout_ref.actor.use_rollout_log_probs", "rl.old_log_probs", Kind::not_flag},
    {"async_training.use_rollout_log_probs", "rl.old_log_probs", Kind::not_flag},
    {"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "rl.log_prob_micro_batch",
     Kind::integer},
    {"actor_rollout_ref.rollout.name", "", Kind::custom},
    {"actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes", "",
     Kind::custom},
    {"actor_rollout_ref.actor.strategy", "", Kind::custom},
    {"actor_rollout_ref.actor.fsdp_config.param_offload", "rl.offload_params", Kind::flag},
    {"actor_rollout_ref.actor.fsdp_config.optimizer_offload", "rl.offload_optimizer", Kind::flag},
    {"actor_rollout_ref.actor.megatron.param_offload", "rl.offload_params", Kind::flag},
    {"actor_rollout_ref.actor.megatron.optimizer_offload", "rl.offload_optimizer", Kind::flag},
    {"actor_rollout_ref.ref.fsdp_config.param_offload", "", Kind::custom},
    {"actor_rollout_ref.ref.megatron.param_offload", "", Kind::custom},
    {"actor_rollout_ref.actor.fsdp_config.fsdp_size", "", Kind::custom},
    {"actor_rollout_ref.actor.ulysses_sequence_parallel_size", "parallel.cp", Kind::integer},
    {"actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "parallel.tp", Kind::integer},
    {"actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", "parallel.pp", Kind::integer},
    {"actor_rollout_ref.actor.megatron.expert_model_parallel_size", "parallel.ep", Kind::integer},
    {"actor_rollout_ref.actor.megatron.expert_tensor_parallel_size", "parallel.etp", Kind::integer},
    {"actor_rollout_ref.actor.megatron.context_parallel_size", "parallel.cp", Kind::integer},
    {"actor_rollout_ref.model.enable_gradient_checkpointing", "", Kind::custom},
    {"actor_rollout_ref.actor.use_kl_loss", "", Kind::custom},
    {"algorithm.use_kl_in_reward", "", Kind::custom},
    {"algorithm.adv_estimator", "", Kind::custom},
    {"trainer.nnodes", "cluster.nodes", Kind::integer},
    {"trainer.n_gpus_per_node", "cluster.gpus_per_node", Kind::integer},
};

const Override* find_override(std::string_view name) {
  for (const Override& o : k_overrides)
    if (name == o.name) return &o;
  return nullptr;
}

std::optional<bool> flag_of(std::string_view v) {
  if (v == "True" || v == "true" || v == "1") return true;
  if (v == "False" || v == "false" || v == "0") return false;
  return std::nullopt;
}

struct Given {
  std::string value;
  int line = 0;
  std::string problem;
};

}  // namespace

void import_verl(const std::string& text, Sink& s) {
  const Shell sh(text);
  auto at = [&](int line) { return Origin{s.path(), line, 1, "import"}; };
  if (sh.failed()) {
    s.error(at(sh.failed_line()), sh.failure());
    return;
  }
  // The line each override is written on: a command continued over lines ("\\") gives its
  // words the line it starts on, so the override's own line is found in the text (the last
  // line that starts with it, after blanks and +).
  std::map<std::string, int> written;
  each_line(text, [&](int line, std::string_view l) {
    while (!l.empty() && (l.front() == ' ' || l.front() == '\t' || l.front() == '+'))
      l.remove_prefix(1);
    if (const auto eq = l.find('='); eq != std::string_view::npos && eq > 0)
      written[std::string(l.substr(0, eq))] = line;
  });
  // The overrides (key=value, +key=value, ++key=value); the last one of a key wins.
  std::map<std::string, Given> seen;
  for (const Token& t : sh.tokens()) {
    const std::string& w = t.text;
    const auto eq = w.find('=');
    if (eq == std::string::npos || eq == 0 || w.rfind("--", 0) == 0) continue;
    std::string key = w.substr(0, eq);
    while (!key.empty() && key.front() == '+') key.erase(0, 1);
    if (key.find('.') == std::string::npos) continue;  // a shell assignment, not an override
    const auto line = written.find(key);
    seen[key] = Given{w.substr(eq + 1),
                      line != written.end() ? std::max(line->second, t.line) : t.line, t.problem};
  }
  if (seen.empty()) {
    s.error(at(1), "no verl override (key=value after python3 -m verl.trainer.main_ppo) found");
    return;
  }
  auto has = [&](const char* k) { return seen.count(k) > 0; };
  // verl's defaults where the planner's differ (verl/trainer/config/_generated_ppo_trainer.yaml).
  const Origin dflt{s.path(), 0, 0, "import"};
  s.put("training.framework", string_value("pytorch", dflt));
  s.put("parallel.zero", integer_value(3, dflt));
  s.put("parallel.fsdp_version", integer_value(1, dflt));   // strategy fsdp: FSDP1
  s.put("training.recompute", string_value("full", dflt));  // enable_gradient_checkpointing
  s.put("rl.algorithm", string_value("ppo", dflt));         // adv_estimator gae
  s.put("rl.reference", boolean_value(false, dflt));        // no KL term
  s.put("rl.prompts", integer_value(1024, dflt));
  s.put("rl.mini_batch_prompts", integer_value(256, dflt));
  s.put("rl.samples_per_prompt", integer_value(1, dflt));
  s.put("rl.prompt_length", integer_value(512, dflt));
  s.put("rl.response_length", integer_value(512, dflt));
  s.put("rl.rollout_tp", integer_value(2, dflt));

  s.put("cluster.nodes", integer_value(1, dflt));
  for (const auto& [name, g] : seen) {
    const Origin o = at(g.line);
    if (name == "actor_rollout_ref.model.path") continue;  // below
    const Override* ov = find_override(name);
    const std::string said = fmt::format("{}={}", shown(name), shown(g.value));
    if (!ov) {
      s.ignore(name, "");
      continue;
    }
    if (!g.problem.empty()) {
      s.error(o, fmt::format("{}: {}", said, shown(g.problem, 240)));
      continue;
    }
    const std::string v = g.value;
    switch (ov->kind) {
      case Kind::integer: {
        const auto x = parse_int(v);
        if (!x) {
          s.error(o, fmt::format("{}: expected an integer", said));
          continue;
        }
        s.put(ov->key, integer_value(*x, o));
        continue;
      }
      case Kind::number: {
        const auto x = parse_number(v);
        if (!x) {
          s.error(o, fmt::format("{}: expected a number", said));
          continue;
        }
        s.put(ov->key, number_value(*x, o));
        continue;
      }
      case Kind::flag:
      case Kind::not_flag: {
        const auto b = flag_of(v);
        if (!b) {
          s.error(o, fmt::format("{}: expected True or False", said));
          continue;
        }
        s.put(ov->key, boolean_value(ov->kind == Kind::flag ? *b : !*b, o));
        continue;
      }
      case Kind::custom:
        break;
    }
    if (name == "actor_rollout_ref.rollout.name") {
      if (v == "vllm" || v == "sglang")
        s.put("rl.engine", string_value(v, o));
      else
        s.ignore(said, "an engine the planner does not model: vllm or sglang");
    } else if (name ==
               "actor_rollout_ref.rollout.checkpoint_engine."
               "update_weights_bucket_megabytes") {
      const auto x = parse_int(v);
      if (!x || *x < 0)
        s.error(o, fmt::format("{}: expected a whole number of MiB", said));
      else
        s.put("rl.sync_bucket", string_value(fmt::format("{} MiB", *x), o));
    } else if (name == "actor_rollout_ref.actor.strategy") {
      if (v == "fsdp" || v == "fsdp2") {
        s.put("training.framework", string_value("pytorch", o));
        s.put("parallel.zero", integer_value(3, o));
        // verl's fsdp workers wrap in FullyShardedDataParallel, fsdp2 in fully_shard.
        s.put("parallel.fsdp_version", integer_value(v == "fsdp" ? 1 : 2, o));
      } else if (v == "megatron") {
        // verl's Megatron actor uses the distributed optimizer (megatron.yaml).
        s.put("training.framework", string_value("megatron", o));
        s.put("parallel.zero", integer_value(1, o));
      } else {
        s.ignore(said, "a strategy the planner does not model: fsdp, fsdp2 or megatron");
      }
    } else if (name == "actor_rollout_ref.ref.fsdp_config.param_offload" ||
               name == "actor_rollout_ref.ref.megatron.param_offload") {
      const auto b = flag_of(v);
      if (!b)
        s.error(o, fmt::format("{}: expected True or False", said));
      else
        s.put("rl.frozen_weights", string_value(*b ? "offload" : "resident", o));
    } else if (name == "actor_rollout_ref.actor.fsdp_config.fsdp_size") {
      const auto x = parse_int(v);
      if (!x)
        s.error(o, fmt::format("{}: expected an integer", said));
      else if (*x > 1)
        s.put("parallel.zero_shard_size", integer_value(*x, o));
      else
        s.ignore(said, "-1: one shard group of every rank");
    } else if (name == "actor_rollout_ref.model.enable_gradient_checkpointing") {
      const auto b = flag_of(v);
      if (!b)
        s.error(o, fmt::format("{}: expected True or False", said));
      else
        s.put("training.recompute", string_value(*b ? "full" : "none", o));
    } else if (name == "actor_rollout_ref.actor.use_kl_loss" ||
               name == "algorithm.use_kl_in_reward") {
      const auto b = flag_of(v);
      if (!b) {
        s.error(o, fmt::format("{}: expected True or False", said));
      } else if (*b) {
        s.put("rl.reference", boolean_value(true, o));
      }
    } else if (name == "algorithm.adv_estimator") {
      // verl/trainer/ppo/core_algos.py AdvantageEstimator: gae needs a critic (PPO).
      if (v == "gae")
        s.put("rl.algorithm", string_value("ppo", o));
      else if (v == "grpo" || v == "rloo")
        s.put("rl.algorithm", string_value(v, o));
      else if (v == "grpo_passk" || v == "reinforce_plus_plus" || v == "remax" ||
               v == "reinforce_plus_plus_baseline" || v == "opo" || v == "gpg")
        s.put("rl.algorithm", string_value("grpo", o));  // critic-free, like GRPO
      else
        s.ignore(said, "an estimator the planner does not know");
    }
  }
  if (has("actor_rollout_ref.model.path"))
    s.ignore("actor_rollout_ref.model.path=" + shown(seen["actor_rollout_ref.model.path"].value),
             "a model path: give [model] (model.preset or model.hf_config)");
}

}  // namespace trainledger::config::importing
