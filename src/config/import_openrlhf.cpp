// OpenRLHF launch scripts (python3 -m openrlhf.cli.train_ppo_ray --flag value ...): the flags of
// openrlhf/cli/train_ppo_ray.py that shape an RL plan, by their classic names (v0.9, e.g.
// --rollout_batch_size) and their dotted names (v0.11, e.g. --rollout.batch_size). OpenRLHF's
// defaults (the argparse defaults of v0.9.7) stand where the script says nothing and the
// planner's default differs. Units (openrlhf/trainer/ppo_utils/replay_buffer.py): the rollout
// batch counts prompts, the train and micro batches count samples.
#include <fmt/format.h>

#include <map>
#include <optional>
#include <string_view>

#include "import_sink.hpp"
#include "shell_words.hpp"

namespace trainledger::config::importing {

namespace {

struct Given {
  std::string value;  // "" for a flag without a value
  bool has_value = false;
  int line = 0;
  std::string problem;
};

// The classic name of a flag given by its dotted name (v0.11's hierarchy), or the name itself.
std::string classic(const std::string& name) {
  static const std::map<std::string, std::string> k = {
      {"rollout.batch_size", "rollout_batch_size"},
      {"rollout.n_samples_per_prompt", "n_samples_per_prompt"},
      {"rollout.micro_batch_size", "micro_rollout_batch_size"},
      {"rollout.max_new_tokens", "generate_max_len"},
      {"train.batch_size", "train_batch_size"},
      {"train.micro_batch_size", "micro_train_batch_size"},
      {"train.colocate_all", "colocate_all_models"},
      {"train.max_epochs", "max_epochs"},
      {"vllm.num_engines", "vllm_num_engines"},
      {"vllm.tensor_parallel_size", "vllm_tensor_parallel_size"},
      {"vllm.gpu_memory_utilization", "vllm_gpu_memory_utilization"},
      {"vllm.enable_sleep", "vllm_enable_sleep"},
      {"vllm.enforce_eager", "enforce_eager"},
      {"ds.enable_sleep", "deepspeed_enable_sleep"},
      {"ds.zero_stage", "zero_stage"},
      {"ds.adam_offload", "adam_offload"},
      {"ds.gradient_checkpointing", "gradient_checkpointing"},
      {"actor.num_nodes", "actor_num_nodes"},
      {"actor.num_gpus_per_node", "actor_num_gpus_per_node"},
      {"actor.gradient_checkpointing", "gradient_checkpointing"},
      {"algo.advantage.estimator", "advantage_estimator"},
      {"algo.kl.init_coef", "init_kl_coef"},
      {"algo.kl.use_loss", "use_kl_loss"},
      {"data.max_len", "max_len"},
      {"ds.ring_attn_size", "ring_attn_size"},
      {"ds.tensor_parallel_size", "ds_tensor_parallel_size"},
      {"actor.model_name_or_path", "pretrain"},
      {"reward.model_name_or_path", "reward_pretrain"},
      {"reward.remote_url", "remote_rm_url"},
  };
  const auto it = k.find(name);
  return it == k.end() ? name : it->second;
}

enum class Kind { integer, number, flag, custom };
struct Flag {
  const char* name;  // classic name
  const char* key;
  Kind kind;
};
const Flag k_flags[] = {
    {"rollout_batch_size", "rl.prompts", Kind::integer},
    {"n_samples_per_prompt", "rl.samples_per_prompt", Kind::integer},
    {"micro_rollout_batch_size", "rl.log_prob_micro_batch", Kind::integer},
    {"micro_train_batch_size", "training.micro_batch", Kind::integer},
    {"prompt_max_len", "rl.prompt_length", Kind::integer},
    {"generate_max_len", "rl.response_length", Kind::integer},
    {"vllm_tensor_parallel_size", "rl.rollout_tp", Kind::integer},
    {"vllm_gpu_memory_utilization", "rl.memory_fraction", Kind::number},
    {"max_epochs", "rl.epochs", Kind::integer},
    {"zero_stage", "parallel.zero", Kind::integer},
    {"ring_attn_size", "parallel.cp", Kind::integer},
    {"ds_tensor_parallel_size", "parallel.tp", Kind::integer},
    {"actor_num_nodes", "cluster.nodes", Kind::integer},
    {"actor_num_gpus_per_node", "cluster.gpus_per_node", Kind::integer},
    {"train_batch_size", "", Kind::custom},
    {"vllm_num_engines", "", Kind::custom},
    {"colocate_all_models", "", Kind::custom},
    {"vllm_enable_sleep", "", Kind::custom},
    {"deepspeed_enable_sleep", "", Kind::custom},
    {"enforce_eager", "", Kind::custom},
    {"adam_offload", "", Kind::custom},
    {"gradient_checkpointing", "", Kind::custom},
    {"advantage_estimator", "", Kind::custom},
    {"init_kl_coef", "", Kind::custom},
    {"use_kl_loss", "", Kind::custom},
    {"bf16", "", Kind::custom},
    {"param_dtype", "", Kind::custom},
    {"max_len", "", Kind::custom},
    {"pretrain", "", Kind::custom},
    {"reward_pretrain", "", Kind::custom},
    {"remote_rm_url", "", Kind::custom},
};

const Flag* find_flag(const std::string& name) {
  for (const Flag& f : k_flags)
    if (name == f.name) return &f;
  return nullptr;
}

// A store_true flag: present (with no value), or given true/false.
std::optional<bool> truth(const Given& g) {
  if (!g.has_value) return true;
  if (g.value == "true" || g.value == "True" || g.value == "1") return true;
  if (g.value == "false" || g.value == "False" || g.value == "0") return false;
  return std::nullopt;
}

}  // namespace

void import_openrlhf(const std::string& text, Sink& s) {
  const Shell sh(text);
  auto at = [&](int line) { return Origin{s.path(), line, 1, "import"}; };
  if (sh.failed()) {
    s.error(at(sh.failed_line()), sh.failure());
    return;
  }
  // The flags after the module (--name value, --name=value, --name for a store_true); the last
  // one of a name wins. Each flag's own line is found in the text: a command continued over
  // lines gives its words the line it starts on.
  std::map<std::string, int> written;
  each_line(text, [&](int line, std::string_view l) {
    // Every --name on the line that starts a word.
    for (std::size_t k = l.find("--"); k != std::string_view::npos; k = l.find("--", k + 2)) {
      if (k > 0 && l[k - 1] != ' ' && l[k - 1] != '\t') continue;
      const std::string_view rest = l.substr(k + 2);
      const std::size_t stop = std::min(rest.find_first_of(" \t=\\"), rest.size());
      if (stop > 0) written[std::string(rest.substr(0, stop))] = line;
    }
  });
  std::map<std::string, Given> seen;
  const std::vector<Token>& words = sh.tokens();
  bool after_module = false;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i].text;
    if (!after_module) {
      after_module =
          w == "openrlhf.cli.train_ppo_ray" || w.find("train_ppo_ray") != std::string::npos;
      continue;
    }
    if (w.rfind("--", 0) != 0 || w.size() < 3) continue;
    std::string name = w.substr(2);
    Given g;
    g.line = words[i].line;
    g.problem = words[i].problem;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      g.value = name.substr(eq + 1);
      g.has_value = true;
      name = name.substr(0, eq);
    } else if (i + 1 < words.size() && words[i + 1].text.rfind("--", 0) != 0) {
      g.value = words[i + 1].text;
      g.has_value = true;
      if (g.problem.empty()) g.problem = words[i + 1].problem;
      ++i;
    }
    const auto line = written.find(name);
    if (line != written.end()) g.line = std::max(g.line, line->second);
    seen[classic(name)] = g;
  }
  if (!after_module || seen.empty()) {
    s.error(at(1),
            "no OpenRLHF flags (--flag value after python3 -m openrlhf.cli.train_ppo_ray) found");
    return;
  }
  // OpenRLHF's defaults where the planner's differ (openrlhf/cli/train_ppo_ray.py, v0.9.7).
  const Origin dflt{s.path(), 0, 0, "import"};
  s.put("training.framework", string_value("deepspeed", dflt));
  s.put("parallel.zero", integer_value(2, dflt));
  s.put("training.recompute", string_value("none", dflt));
  s.put("rl.algorithm", string_value("ppo", dflt));  // advantage_estimator gae
  s.put("rl.reference", boolean_value(true, dflt));  // init_kl_coef 0.01
  s.put("rl.prompts", integer_value(1024, dflt));
  s.put("rl.samples_per_prompt", integer_value(1, dflt));
  s.put("rl.mini_batch_prompts", integer_value(128, dflt));  // train_batch_size 128 samples
  s.put("training.micro_batch", integer_value(4, dflt));
  s.put("rl.log_prob_micro_batch", integer_value(8, dflt));
  s.put("rl.prompt_length", integer_value(1024, dflt));
  s.put("rl.response_length", integer_value(1024, dflt));
  s.put("rl.memory_fraction", number_value(0.95, dflt));
  s.put("rl.sleep", string_value("none", dflt));  // without --vllm_enable_sleep
  s.put("cluster.nodes", integer_value(1, dflt));
  s.put("cluster.gpus_per_node", integer_value(8, dflt));

  auto said = [&](const std::string& name, const Given& g) {
    return fmt::format("--{}{}", shown(name), g.has_value ? " " + shown(g.value) : "");
  };
  std::optional<std::int64_t> engines;
  Origin engines_at;
  bool colocated = false;
  for (const auto& entry : seen) {
    const std::string& name = entry.first;
    const Given& g = entry.second;
    const Origin o = at(g.line);
    const Flag* f = find_flag(name);
    if (!f) {
      s.ignore("--" + name, "");
      continue;
    }
    if (!g.problem.empty()) {
      s.error(o, fmt::format("{}: {}", said(name, g), shown(g.problem, 240)));
      continue;
    }
    auto need_value = [&]() {
      if (!g.has_value) s.error(o, fmt::format("{}: expected a value", said(name, g)));
      return g.has_value;
    };
    switch (f->kind) {
      case Kind::integer: {
        if (!need_value()) continue;
        const auto x = parse_int(g.value);
        if (!x)
          s.error(o, fmt::format("{}: expected an integer", said(name, g)));
        else
          s.put(f->key, integer_value(*x, o));
        continue;
      }
      case Kind::number: {
        if (!need_value()) continue;
        const auto x = parse_number(g.value);
        if (!x)
          s.error(o, fmt::format("{}: expected a number", said(name, g)));
        else
          s.put(f->key, number_value(*x, o));
        continue;
      }
      case Kind::flag:
      case Kind::custom:
        break;
    }
    const std::optional<bool> on = truth(g);
    auto bool_flag = [&]() {
      if (!on) s.error(o, fmt::format("{}: expected no value, true or false", said(name, g)));
      return on.value_or(false);
    };
    if (name == "train_batch_size") {
      // Samples per optimizer step → prompts per mini-batch (below, once n is known).
      continue;
    } else if (name == "vllm_num_engines") {
      if (!need_value()) continue;
      engines = parse_int(g.value);
      engines_at = o;
      if (!engines || *engines < 1)
        s.error(o, fmt::format("{}: expected a positive integer", said(name, g)));
    } else if (name == "colocate_all_models") {
      colocated = bool_flag();
      s.put("rl.placement", string_value(colocated ? "colocated" : "split", o));
    } else if (name == "vllm_enable_sleep") {
      // openrlhf/trainer/ray/vllm_engine.py sleep(level=1): the weights go to the host.
      s.put("rl.sleep", string_value(bool_flag() ? "offload" : "none", o));
    } else if (name == "deepspeed_enable_sleep") {
      const bool b = bool_flag();
      s.put("rl.offload_params", boolean_value(b, o));
      s.put("rl.offload_optimizer", boolean_value(b, o));
      // openrlhf/utils/deepspeed: offload_deepspeed_states(pin_memory=True).
      if (b) s.put("rl.offload_copy", string_value("pinned", o));
    } else if (name == "enforce_eager") {
      s.put("rl.cuda_graphs", boolean_value(!bool_flag(), o));
    } else if (name == "adam_offload") {
      if (bool_flag()) s.put("parallel.offload", string_value("optimizer", o));
    } else if (name == "gradient_checkpointing") {
      s.put("training.recompute", string_value(bool_flag() ? "full" : "none", o));
    } else if (name == "bf16") {
      if (bool_flag()) s.put("training.precision", string_value("bf16", o));
    } else if (name == "param_dtype") {
      if (g.value == "bf16" || g.value == "fp16")
        s.put("training.precision", string_value(g.value, o));
      else
        s.ignore(said(name, g), "a precision the planner does not model here");
    } else if (name == "advantage_estimator") {
      // openrlhf/trainer/ppo_utils/experience_maker.py: gae needs a critic; group_norm is GRPO.
      const std::string& v = g.value;
      if (v == "gae")
        s.put("rl.algorithm", string_value("ppo", o));
      else if (v == "group_norm" || v == "dr_grpo")
        s.put("rl.algorithm", string_value("grpo", o));
      else if (v == "rloo")
        s.put("rl.algorithm", string_value("rloo", o));
      else if (v == "reinforce" || v == "reinforce_baseline")
        s.put("rl.algorithm", string_value("grpo", o));  // critic-free, like GRPO
      else
        s.ignore(said(name, g), "an estimator the planner does not know");
    } else if (name == "init_kl_coef") {
      const auto x = g.has_value ? parse_number(g.value) : std::nullopt;
      if (!x)
        s.error(o, fmt::format("{}: expected a number", said(name, g)));
      else if (*x <= 0 && !seen.count("use_kl_loss"))
        s.put("rl.reference", boolean_value(false, o));
    } else if (name == "use_kl_loss") {
      if (bool_flag()) s.put("rl.reference", boolean_value(true, o));
    } else if (name == "max_len") {
      // v0.11: prompt + response; the response is --rollout.max_new_tokens.
      const auto x = g.has_value ? parse_int(g.value) : std::nullopt;
      const auto resp = seen.count("generate_max_len")
                            ? parse_int(seen.at("generate_max_len").value)
                            : std::nullopt;
      if (!x)
        s.error(o, fmt::format("{}: expected an integer", said(name, g)));
      else if (resp && *x > *resp)
        s.put("rl.prompt_length", integer_value(*x - *resp, o));
      else
        s.ignore(said(name, g), "without --rollout.max_new_tokens the split is not known");
    } else if (name == "pretrain") {
      s.ignore(said(name, g), "a model path: give [model] (model.preset or model.hf_config)");
    } else if (name == "reward_pretrain") {
      s.put("rl.reward_model", boolean_value(true, o));
      s.ignore(said(name, g), "the reward model is planned with the actor's architecture");
    } else if (name == "remote_rm_url") {
      s.put("rl.reward_model", boolean_value(false, o));
    }
  }
  // Samples per optimizer step → prompts per mini-batch.
  if (const auto it = seen.find("train_batch_size"); it != seen.end()) {
    const Origin o = at(it->second.line);
    const auto tbs = parse_int(it->second.value);
    const auto ns = seen.count("n_samples_per_prompt")
                        ? parse_int(seen.at("n_samples_per_prompt").value)
                        : std::optional<std::int64_t>(1);
    if (!tbs || *tbs < 1)
      s.error(o,
              fmt::format("{}: expected a positive integer", said("train_batch_size", it->second)));
    else if (ns && *ns > 0 && *tbs % *ns == 0)
      s.put("rl.mini_batch_prompts", integer_value(*tbs / *ns, o));
    else
      s.error(o, fmt::format("--train_batch_size {} is not a whole number of prompts' samples "
                             "(--n_samples_per_prompt {})",
                             *tbs, ns ? std::to_string(*ns) : std::string("?")));
  }
  // Engines: colocated on the actor's GPUs, or their own (engines × tp) beside them.
  if (engines && *engines > 0 && !colocated) {
    const auto tp = seen.count("vllm_tensor_parallel_size")
                        ? parse_int(seen.at("vllm_tensor_parallel_size").value)
                        : std::optional<std::int64_t>(1);
    s.put("rl.placement", string_value("split", engines_at));
    if (tp && *tp > 0) s.put("rl.rollout_gpus", integer_value(*engines * *tp, engines_at));
  } else if (!engines) {
    s.ignore("no --vllm_num_engines",
             "the actor generates itself: the plan assumes vLLM engines on the actor's GPUs");
  }
}

}  // namespace trainledger::config::importing
