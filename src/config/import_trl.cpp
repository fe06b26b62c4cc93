// TRL GRPO runs (huggingface/trl's GRPOTrainer, read at f2cd5771, July 2026): the settings
// that shape an RL plan, from any of the three places a run states them:
//  - a launch script: `trl grpo --flag value ...`, `accelerate launch [--config_file F]
//    [--num_processes N] ... grpo.py --config recipe.yaml --flag value ...` (any script whose
//    name holds "grpo", or -m trl.scripts.grpo; torchrun's --nproc_per_node/--nnodes too), with
//    the `trl vllm-serve` command of a server-mode run; the recipe (`--config`), the accelerate
//    config (`--config_file`, or `--accelerate_config` by path or by the name of a config TRL
//    ships) and a Python training script named by the command are read when they lie in the
//    plan's folder, the command line winning over the recipe as TrlParser has it;
//  - a TrlParser recipe (YAML: GRPOConfig's fields as top-level keys);
//  - a Python script's `GRPOConfig(name=literal, ...)` call.
// Units (trl/trainer/grpo_config.py __post_init__, grpo_trainer.py _get_train_sampler): every
// batch counts completions; a generation batch of per_device_train_batch_size × processes ×
// steps_per_generation completions holds generation_batch_size / num_generations prompts.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "import_sink.hpp"
#include "import_trl_read.hpp"

namespace trainledger::config::importing {

namespace {

using trl::Arg;
using trl::Args;
using trl::Run;
using trl::truth;

// GRPOConfig's fields (and the launcher's, the server's) → plan keys.
class Apply {
 public:
  static constexpr std::int64_t k_max_count = 1000000;

  Apply(const Run& run, Sink& s) : m_run(run), m_s(s) {}

  void operator()() {
    const Args& c = m_run.config;
    const Origin dflt{m_s.path(), 0, 0, "import"};
    // TRL's defaults where the planner's differ (GRPOConfig at f2cd5771, and the
    // TrainingArguments fields it overrides: gradient_checkpointing and bf16 on).
    put("training.framework", string_value("hf", dflt));
    put("parallel.zero", integer_value(0, dflt));
    put("training.recompute", string_value("full", dflt));
    put("training.precision", string_value("bf16", dflt));
    // The loss (grpo_trainer.py _get_per_token_logps_and_entropies): the 16-bit logits of the
    // completion only (logits_to_keep), divided by the temperature in place, then
    // selective_log_softmax row by row (trl/trainer/utils.py), whose 16-bit rows autograd keeps:
    // about 4 B per completion logit, no fp32 copy (the entropy is taken in chunks without
    // gradients). Planned as the fused loss: 2 B per logit of the whole sequence, the same at a
    // completion half the sequence, under it when the completion is longer.
    put("training.loss", string_value("fused", dflt));
    // The log-prob passes (old and reference): the completion's logits only, no entropy
    // (compute_entropy=False outside the loss).
    put("rl.log_prob_entropy", boolean_value(false, dflt));
    put("rl.response_logits_only", boolean_value(true, dflt));
    put("rl.algorithm", string_value("grpo", dflt));
    put("rl.reference", boolean_value(false, dflt));  // beta 0.0
    put("rl.epochs", integer_value(1, dflt));
    put("rl.response_length", integer_value(512, dflt));
    put("rl.frozen_weights", string_value("resident", dflt));
    // Weights reach vLLM one tensor at a time (vllm_generation.py: load_weights([(name,
    // param)]), update_named_param on a server).
    put("rl.sync_bucket", string_value("0 MiB", dflt));

    for (const auto& [name, a] : c) read_config(name, a);
    m_procs = processes();
    batch(dflt);
    old_log_probs(dflt);
    placement(dflt);
    launcher();
    for (const auto& [name, a] : m_run.launcher)
      if (!m_used_launcher.count(name) && name.rfind("deepspeed_config.", 0) != 0 &&
          name.rfind("fsdp_config.", 0) != 0)
        m_s.ignore(said(name, a), "");
  }

 private:
  void put(const std::string& key, Value v) { m_s.put(key, std::move(v)); }
  const Arg* get(const Args& from, const std::string& name) {
    if (&from == &m_run.launcher) m_used_launcher.insert(name);
    const auto it = from.find(name);
    return it == from.end() ? nullptr : &it->second;
  }
  // A positive integer already checked (and reported) where it was read.
  std::int64_t checked(const std::string& name, std::int64_t otherwise) {
    const Arg* a = get(m_run.config, name);
    const auto x = a && a->problem.empty() ? parse_int(a->value) : std::nullopt;
    return x && *x > 0 && *x <= k_max_count ? *x : otherwise;
  }
  std::string said(const std::string& name, const Arg& a) const {
    return fmt::format("{}{}", shown(name), a.has_value ? " " + in_quotes(a.value) : "");
  }
  bool usable(const std::string& name, const Arg& a) {
    if (!a.problem.empty()) {
      m_s.error(a.at, fmt::format("{}: {}", said(name, a), shown(a.problem, 240)));
      return false;
    }
    return true;
  }
  std::optional<std::int64_t> positive(const Args& from, const std::string& name) {
    const Arg* a = get(from, name);
    if (!a || !usable(name, *a)) return std::nullopt;
    const auto x = a->has_value ? parse_int(a->value) : std::nullopt;
    // Bounded, so that the products of the batch (at most three counts) stay in 64 bits.
    if (!x || *x < 1 || *x > k_max_count) {
      m_s.error(a->at, fmt::format("{}: expected a positive integer up to {}", said(name, *a),
                                   k_max_count));
      return std::nullopt;
    }
    return x;
  }
  std::optional<double> number(const Args& from, const std::string& name) {
    const Arg* a = get(from, name);
    if (!a || !usable(name, *a)) return std::nullopt;
    const auto x = a->has_value ? parse_number(a->value) : std::nullopt;
    if (!x) m_s.error(a->at, fmt::format("{}: expected a number", said(name, *a)));
    return x;
  }
  std::optional<bool> flag(const Args& from, const std::string& name) {
    const Arg* a = get(from, name);
    if (!a || !usable(name, *a)) return std::nullopt;
    const auto b = truth(*a);
    if (!b) m_s.error(a->at, fmt::format("{}: expected true or false", said(name, *a)));
    return b;
  }

  void read_config(const std::string& name, const Arg& a) {
    static const char* const k_used[] = {"num_generations",
                                         "per_device_train_batch_size",
                                         "gradient_accumulation_steps",
                                         "steps_per_generation",
                                         "generation_batch_size",
                                         "use_vllm",
                                         "vllm_mode",
                                         "vllm_gpu_memory_utilization",
                                         "vllm_tensor_parallel_size",
                                         "vllm_enable_sleep_mode",
                                         "vllm_importance_sampling_correction",
                                         "max_completion_length",
                                         "max_prompt_length",
                                         "num_iterations",
                                         "beta",
                                         "gradient_checkpointing",
                                         "bf16",
                                         "fp16",
                                         "use_liger_kernel",
                                         "use_liger_loss",
                                         "reward_model_name_or_path",
                                         "model_name_or_path",
                                         "deepspeed"};
    for (const char* u : k_used)
      if (name == u) return read_known(name, a);
    if (name.rfind("no_", 0) == 0 && !a.has_value) {
      // HfArgumentParser's --no_<field> for a field whose default is true.
      const std::string field = name.substr(3);
      if (field == "gradient_checkpointing" || field == "bf16")
        return read_known(field, Arg{"false", true, a.at, a.problem});
    }
    m_s.ignore(said(name, a), "");
  }

  void read_known(const std::string& name, const Arg& a) {
    const Args one{{name, a}};
    if (name == "num_generations") {
      if (const auto x = positive(one, name)) {
        if (*x < 2)  // grpo_config.py __post_init__: the advantage needs a group
          m_s.error(a.at, fmt::format("{}: GRPO needs at least 2 generations per prompt "
                                      "(GRPOConfig refuses fewer)",
                                      said(name, a)));
        else
          put("rl.samples_per_prompt", integer_value(*x, a.at));
      }
    } else if (name == "per_device_train_batch_size") {
      if (const auto x = positive(one, name)) {
        put("training.micro_batch", integer_value(*x, a.at));
        // _generate_and_score_completions: the log-prob passes run in chunks of this size.
        put("rl.log_prob_micro_batch", integer_value(*x, a.at));
      }
    } else if (name == "vllm_importance_sampling_correction") {
      m_correction = flag(one, name).value_or(true);
    } else if (name == "max_completion_length") {
      if (const auto x = positive(one, name)) put("rl.response_length", integer_value(*x, a.at));
    } else if (name == "max_prompt_length") {
      if (const auto x = positive(one, name)) put("rl.prompt_length", integer_value(*x, a.at));
    } else if (name == "num_iterations") {
      if (const auto x = positive(one, name)) put("rl.epochs", integer_value(*x, a.at));
    } else if (name == "beta") {
      if (const auto x = number(one, name)) put("rl.reference", boolean_value(*x != 0, a.at));
    } else if (name == "gradient_checkpointing") {
      if (const auto b = flag(one, name))
        put("training.recompute", string_value(*b ? "full" : "none", a.at));
    } else if (name == "bf16" || name == "fp16") {
      // TrainingArguments: bf16 = not fp16 when unset; both false is fp32 (fp16 is read after
      // bf16 and wins when true).
      if (const auto b = flag(one, name); b && *b)
        put("training.precision", string_value(name, a.at));
      else if (b && name == "bf16")
        put("training.precision", string_value("fp32", a.at));
    } else if (name == "use_liger_kernel" || name == "use_liger_loss") {
      // LigerFusedLinearGRPOLoss: the head and the loss in chunks, no whole logits.
      if (const auto b = flag(one, name); b && *b)
        put("training.loss", string_value("chunked", a.at));
    } else if (name == "reward_model_name_or_path") {
      if (usable(name, a)) {
        put("rl.reward_model", boolean_value(true, a.at));
        m_s.ignore(said(name, a), "the reward model is planned with the actor's architecture");
      }
    } else if (name == "model_name_or_path") {
      m_s.ignore(said(name, a), "a model name: give [model] (model.preset or model.hf_config)");
    } else if (name == "deepspeed") {
      m_s.ignore(said(name, a), "a DeepSpeed config: import it with [import] deepspeed");
    }
    // The batch and the placement fields are read together below.
  }

  // The batch (GRPOConfig.__post_init__): completions throughout.
  void batch(const Origin& dflt) {
    const Args& c = m_run.config;
    const std::int64_t n = checked("num_generations", 8);
    const std::int64_t per_device = checked("per_device_train_batch_size", 8);
    const std::int64_t accum = positive(c, "gradient_accumulation_steps").value_or(1);
    if (!get(c, "num_generations")) put("rl.samples_per_prompt", integer_value(8, dflt));
    if (!get(c, "per_device_train_batch_size")) {
      put("training.micro_batch", integer_value(8, dflt));
      put("rl.log_prob_micro_batch", integer_value(8, dflt));
    }
    const auto& procs = m_procs;
    const Arg* gen = get(c, "generation_batch_size");
    const Arg* spg = get(c, "steps_per_generation");
    if (gen && spg) {
      m_s.error(gen->at,
                "generation_batch_size and steps_per_generation are both set (GRPOConfig "
                "refuses that)");
      return;
    }
    std::optional<std::int64_t> steps = spg ? positive(c, "steps_per_generation") : accum;
    std::optional<std::int64_t> generation;
    Origin at = gen ? gen->at : spg ? spg->at : dflt;
    if (gen) {
      generation = positive(c, "generation_batch_size");
      if (generation && procs) {
        const std::int64_t step = per_device * procs->first;
        if (*generation % step != 0) {
          m_s.error(gen->at, fmt::format("generation_batch_size {} is not a multiple of the "
                                         "global batch ({} per device × {} processes)",
                                         *generation, per_device, procs->first));
          return;
        }
        steps = *generation / step;
      } else {
        steps.reset();  // steps_per_generation = generation / (per device × processes)
      }
    } else if (procs && steps) {
      generation = per_device * procs->first * *steps;
      if (at.line == 0) at = procs->second;
    }
    if (!generation) {
      m_s.ignore("the training processes",
                 "not in the files: rl.prompts (per_device_train_batch_size × processes × "
                 "steps_per_generation / num_generations) is left to the plan");
      return;
    }
    if (*generation % n != 0) {
      m_s.error(at, fmt::format("a generation batch of {} completions is not whole groups of "
                                "num_generations {} (GRPOConfig refuses that)",
                                *generation, n));
      return;
    }
    put("rl.prompts", integer_value(*generation / n, at));
    if (procs) {
      const std::int64_t per_step = per_device * procs->first * accum;
      const std::int64_t prompts = *generation / n;
      if (per_step % n == 0 && prompts % (per_step / n) == 0)
        put("rl.mini_batch_prompts", integer_value(per_step / n, at));
      else
        m_s.ignore(fmt::format("an optimizer step of {} completions", per_step),
                   fmt::format("not whole groups of {} dividing the generation batch: planned as "
                               "one optimizer step per generation batch",
                               n));
    }
    if (steps) m_steps = *steps;
  }

  // grpo_trainer.py _generate_and_score_completions (f2cd5771): the old log-probs are computed
  // only when gradient_accumulation_steps is not a multiple of steps_per_generation ×
  // num_iterations (the samples then span two policies), or for vLLM's importance-sampling
  // correction (vllm_importance_sampling_correction, on by default); else the pass is skipped.
  void old_log_probs(const Origin& dflt) {
    const Args& c = m_run.config;
    if (!m_steps) return;  // steps_per_generation unknown: the pass stays (the safer plan)
    const std::int64_t accum = positive(c, "gradient_accumulation_steps").value_or(1);
    const std::int64_t every = *m_steps * checked("num_iterations", 1);
    const bool vllm = get(c, "use_vllm") && flag(c, "use_vllm").value_or(false);
    if (accum % every != 0 || (vllm && m_correction)) return;
    const Arg* at = get(c, "gradient_accumulation_steps");
    put("rl.old_log_probs", boolean_value(false, at ? at->at : dflt));
  }

  // Training processes (and where that is said): the launcher's, else none.
  std::optional<std::pair<std::int64_t, Origin>> processes() {
    const Args& l = m_run.launcher;
    if (const Arg* a = get(l, "num_processes")) {
      if (const auto x = positive(l, "num_processes")) return std::make_pair(*x, a->at);
      return std::nullopt;
    }
    if (const Arg* a = get(l, "nproc_per_node")) {
      const auto x = positive(l, "nproc_per_node");
      const auto nodes = get(l, "nnodes") ? positive(l, "nnodes") : std::optional<std::int64_t>(1);
      if (x && nodes) return std::make_pair(*x * *nodes, a->at);
    }
    return std::nullopt;
  }

  void placement(const Origin& dflt) {
    const Args& c = m_run.config;
    const Arg* use = get(c, "use_vllm");
    const bool vllm = use ? flag(c, "use_vllm").value_or(false) : false;
    if (!vllm) {
      m_s.ignore(use ? said("use_vllm", *use) : std::string("no use_vllm"),
                 "TRL then generates with transformers' generate() in the trainer: planned as a "
                 "colocated vLLM engine, faster and with an engine's memory (set rl.* to match)");
    }
    // The mode: TRL's default is colocate; a script that starts `trl vllm-serve` and names no
    // mode runs in server mode (the default of TRL before 0.23).
    std::string mode = m_run.serve_found ? "server" : "colocate";
    Origin mode_at = m_run.serve_found ? m_run.serve_at : dflt;
    if (const Arg* a = get(c, "vllm_mode"); a && usable("vllm_mode", *a)) {
      mode_at = a->at;
      if (a->value == "server" || a->value == "colocate")
        mode = a->value;
      else
        m_s.error(a->at,
                  fmt::format("{}: expected \"server\" or \"colocate\"", said("vllm_mode", *a)));
    }
    if (mode == "colocate") {
      put("rl.placement", string_value("colocated", mode_at));
      put("rl.memory_fraction", number_value(0.3, dflt));
      put("rl.sleep", string_value("none", dflt));
      put("rl.max_batched_tokens", integer_value(4096, dflt));  // vllm_generation.py LLM(...)
      if (const auto x = number(c, "vllm_gpu_memory_utilization"))
        put("rl.memory_fraction", number_value(*x, get(c, "vllm_gpu_memory_utilization")->at));
      std::int64_t tp = 1;
      if (const auto x = positive(c, "vllm_tensor_parallel_size")) {
        tp = *x;
        put("rl.rollout_tp", integer_value(tp, get(c, "vllm_tensor_parallel_size")->at));
      }
      // sleep(level=2) after start-up and after each generation: weights and KV cache freed.
      if (const auto b = flag(c, "vllm_enable_sleep_mode"))
        put("rl.sleep",
            string_value(*b ? "discard" : "none", get(c, "vllm_enable_sleep_mode")->at));
      // max_num_seqs = per_device_train_batch_size × vllm_tensor_parallel_size ×
      // steps_per_generation (grpo_trainer.py, VLLMGeneration(...)).
      const std::int64_t per_device = checked("per_device_train_batch_size", 8);
      if (m_steps) put("rl.max_num_seqs", integer_value(per_device * tp * *m_steps, dflt));
      if (m_run.serve_found)
        m_s.ignore("trl vllm-serve", "the run is in colocate mode: the server is not used");
      return;
    }
    // Server mode: `trl vllm-serve` on GPUs of its own (trl/scripts/vllm_serve.py).
    put("rl.placement", string_value("split", mode_at));
    put("rl.memory_fraction", number_value(0.9, dflt));
    for (const char* k :
         {"vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_enable_sleep_mode"})
      if (const Arg* a = get(c, k)) m_s.ignore(said(k, *a), "colocate mode only");
    if (!m_run.serve_found) {
      m_s.ignore("server mode without a trl vllm-serve command",
                 "the server's GPUs are not known: give rl.rollout_gpus and rl.rollout_tp");
      return;
    }
    const Args& v = m_run.serve;
    const std::int64_t tp =
        get(v, "tensor_parallel_size") ? positive(v, "tensor_parallel_size").value_or(1) : 1;
    const std::int64_t dp =
        get(v, "data_parallel_size") ? positive(v, "data_parallel_size").value_or(1) : 1;
    const Origin tp_at =
        get(v, "tensor_parallel_size") ? get(v, "tensor_parallel_size")->at : m_run.serve_at;
    put("rl.rollout_tp", integer_value(tp, tp_at));
    put("rl.rollout_gpus", integer_value(tp * dp, tp_at));
    if (const auto x = number(v, "gpu_memory_utilization"))
      put("rl.memory_fraction", number_value(*x, get(v, "gpu_memory_utilization")->at));
    if (const auto b = flag(v, "enforce_eager"))
      put("rl.cuda_graphs", boolean_value(!*b, get(v, "enforce_eager")->at));
    if (const Arg* a = get(v, "kv_cache_dtype"); a && usable("kv_cache_dtype", *a)) {
      if (a->value.rfind("fp8", 0) == 0)
        put("rl.kv_dtype", string_value("fp8", a->at));
      else if (a->value != "auto")
        m_s.ignore(said("kv_cache_dtype", *a),
                   "a KV dtype the planner does not model: auto or fp8");
    }
    for (const auto& [k, a] : v)
      if (k != "tensor_parallel_size" && k != "data_parallel_size" &&
          k != "gpu_memory_utilization" && k != "enforce_eager" && k != "kv_cache_dtype")
        m_s.ignore("vllm-serve " + said(k, a), "");
    m_s.ignore("vllm-serve's max_num_seqs",
               "vLLM's default (1024 on GPUs of 70 GiB or more, 256 below): the plan's "
               "rl.max_num_seqs stands");
  }

  // The training layout and the cluster from accelerate (its config and flags) or torchrun.
  void launcher() {
    const Args& l = m_run.launcher;
    for (const char* k : {"config_file", "accelerate_config", "deepspeed_config_file"}) get(l, k);
    std::string type;
    if (const Arg* a = get(l, "distributed_type")) type = a->value;
    if (get(l, "use_deepspeed") && flag(l, "use_deepspeed").value_or(false)) type = "DEEPSPEED";
    if (get(l, "use_fsdp") && flag(l, "use_fsdp").value_or(false)) type = "FSDP";
    const Arg* type_at = get(l, "use_deepspeed") ? get(l, "use_deepspeed")
                         : get(l, "use_fsdp")    ? get(l, "use_fsdp")
                                                 : get(l, "distributed_type");
    if (type == "DEEPSPEED") {
      put("training.framework", string_value("deepspeed", type_at->at));
      // accelerate's DeepSpeedPlugin: zero_stage 2 unless given.
      put("parallel.zero", integer_value(2, type_at->at));
      for (const char* k : {"deepspeed_config.zero_stage", "zero_stage"})
        if (const Arg* a = get(l, k); a && usable(k, *a)) {
          const auto x = parse_int(a->value);
          if (!x || *x < 0 || *x > 3)
            m_s.error(a->at, fmt::format("{}: expected 0, 1, 2 or 3", said(k, *a)));
          else
            put("parallel.zero", integer_value(*x, a->at));
        }
      // A launcher flag wins over the accelerate config's key.
      const Arg* opt = get(l, "offload_optimizer_device");
      if (!opt) opt = get(l, "deepspeed_config.offload_optimizer_device");
      const Arg* par = get(l, "offload_param_device");
      if (!par) par = get(l, "deepspeed_config.offload_param_device");
      if (par && (par->value == "cpu" || par->value == "nvme"))
        put("parallel.offload", string_value("optimizer+params", par->at));
      else if (opt && (opt->value == "cpu" || opt->value == "nvme"))
        put("parallel.offload", string_value("optimizer", opt->at));
    } else if (type == "FSDP") {
      put("parallel.zero", integer_value(3, type_at->at));
      const Arg* r = get(l, "fsdp_reshard_after_forward");
      if (!r) r = get(l, "fsdp_sharding_strategy");
      if (!r) r = get(l, "fsdp_config.fsdp_reshard_after_forward");
      if (!r) r = get(l, "fsdp_config.fsdp_sharding_strategy");
      if (r) {
        const std::string v = r->value;
        if (v == "NO_SHARD" || v == "3")
          put("parallel.zero", integer_value(0, r->at));
        else if (v == "SHARD_GRAD_OP" || v == "2" || v == "false" || v == "False")
          put("parallel.reshard_after_forward", boolean_value(false, r->at));
        else if (v.find("HYBRID") != std::string::npos || v == "4" || v == "5")
          m_s.ignore(said("fsdp sharding", *r), "hybrid sharding is planned as full sharding");
      }
      auto first = [&](const char* flag_name, const char* config_key) -> const char* {
        return get(l, flag_name) ? flag_name : get(l, config_key) ? config_key : nullptr;
      };
      // accelerate's FullyShardedDataParallelPlugin: fsdp_version 1 (FullyShardedDataParallel)
      // unless the config says 2 (fully_shard).
      if (const char* k = first("fsdp_version", "fsdp_config.fsdp_version")) {
        const Arg* a = get(l, k);
        if (a->value == "1" || a->value == "2")
          put("parallel.fsdp_version", integer_value(a->value == "1" ? 1 : 2, a->at));
        else
          m_s.error(a->at, fmt::format("{}: expected 1 or 2", said(k, *a)));
      }
      if (const char* k = first("fsdp_offload_params", "fsdp_config.fsdp_offload_params"))
        put("parallel.offload",
            string_value(flag(l, k).value_or(false) ? "optimizer+params" : "none", get(l, k)->at));
      if (const char* k =
              first("fsdp_activation_checkpointing", "fsdp_config.fsdp_activation_checkpointing"))
        if (flag(l, k).value_or(false))
          put("training.recompute", string_value("full", get(l, k)->at));
    }
    // The cluster: the training processes over the machines.
    const auto& procs = m_procs;
    if (!procs) return;
    std::int64_t machines = 1;
    Origin machines_at = procs->second;
    for (const char* k : {"num_machines", "nnodes"})
      if (const Arg* a = get(l, k)) {
        if (const auto x = positive(l, k)) {
          machines = *x;
          machines_at = a->at;
        }
      }
    if (get(l, "nproc_per_node")) {
      put("cluster.nodes", integer_value(machines, machines_at));
      put("cluster.gpus_per_node", integer_value(procs->first / machines, procs->second));
      return;
    }
    if (procs->first % machines != 0) {
      m_s.error(procs->second, fmt::format("{} processes do not split evenly over {} machines",
                                           procs->first, machines));
      return;
    }
    put("cluster.nodes", integer_value(machines, machines_at));
    put("cluster.gpus_per_node", integer_value(procs->first / machines, procs->second));
  }

  const Run& m_run;
  Sink& m_s;
  std::optional<std::int64_t> m_steps;
  bool m_correction = true;  // vllm_importance_sampling_correction
  std::optional<std::pair<std::int64_t, Origin>> m_procs;
  std::set<std::string> m_used_launcher;
};

}  // namespace

void import_trl(const std::string& text, Sink& s, const DefaultsReader& read_file) {
  using namespace trl;
  Run run;
  const std::string& path = s.path();
  if (ends_with(lower(path), ".yaml") || ends_with(lower(path), ".yml")) {
    if (!read_yaml(text, path, s, "GRPOConfig's fields", run.config, false)) return;
    move_launcher_settings(run);
  } else if (ends_with(lower(path), ".py")) {
    if (!read_python(text, path, run.config, s)) {
      s.error(Origin{path, 1, 1, "import"}, "no GRPOConfig( call found");
      return;
    }
  } else if (!read_shell(text, s, read_file, run)) {
    s.error(Origin{path, 1, 1, "import"},
            "no TRL GRPO command found (trl grpo ..., accelerate launch ... grpo.py ..., "
            "python -m trl.scripts.grpo ...); a TrlParser recipe (.yaml) or a Python script "
            "with GRPOConfig(...) (.py) are read by their file names");
    return;
  }
  Apply(run, s)();
}

}  // namespace trainledger::config::importing
