// Megatron-LM arguments (megatron/training/arguments.py), from a launch script or a list.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "import_sink.hpp"
#include "shell_words.hpp"

namespace trainledger::config::importing {

namespace {

struct Flag {
  const char* name;
  const char* key;  // plan key, or empty: custom handling
  bool has_value;
};

// Megatron flags the planner reads; others are listed as ignored.
const Flag k_megatron_flags[] = {
    {"--tensor-model-parallel-size", "parallel.tp", true},
    {"--pipeline-model-parallel-size", "parallel.pp", true},
    {"--context-parallel-size", "parallel.cp", true},
    {"--expert-model-parallel-size", "parallel.ep", true},
    {"--expert-tensor-parallel-size", "parallel.etp", true},
    {"--num-layers-per-virtual-pipeline-stage", "", true},
    {"--virtual-pipeline-model-parallel-size", "", true},
    {"--sequence-parallel", "parallel.sequence_parallel", false},
    {"--use-distributed-optimizer", "", false},
    {"--optimizer-cpu-offload", "", false},
    {"--overlap-grad-reduce", "parallel.overlap_dp", false},
    {"--overlap-param-gather", "parallel.overlap_param_gather", false},
    {"--tp-comm-overlap", "parallel.overlap_tp", false},
    {"--recompute-granularity", "", true},
    {"--recompute-activations", "", false},
    {"--recompute-method", "", true},
    {"--recompute-num-layers", "", true},
    {"--micro-batch-size", "training.micro_batch", true},
    {"--global-batch-size", "training.global_batch", true},
    {"--seq-length", "training.seq_len", true},
    {"--bf16", "", false},
    {"--fp16", "", false},
    {"--fp8-format", "", true},
    {"--fp8-recipe", "", true},
    {"--fp4-format", "", true},
    {"--fp4-recipe", "", true},
    {"--fp8-param-gather", "", false},
    {"--cpu-offloading-num-layers", "training.activation_offload_layers", true},
    {"--fp4-param-gather", "", false},
    {"--moe-enable-deepep", "", false},
    {"--moe-token-dispatcher-type", "", true},
    {"--num-layers", "model.layers", true},
    {"--hidden-size", "model.hidden", true},
    {"--num-attention-heads", "model.heads", true},
    {"--ffn-hidden-size", "model.ffn", true},
    {"--num-query-groups", "model.kv_heads", true},
    {"--group-query-attention", "", false},
    {"--kv-channels", "model.head_dim", true},
    {"--swiglu", "", false},
    {"--normalization", "", true},
    {"--untie-embeddings-and-output-weights", "", false},
    {"--disable-bias-linear", "", false},
    {"--add-qkv-bias", "", false},
    {"--vocab-size", "model.vocab", true},
    {"--num-experts", "model.experts", true},
    {"--moe-router-topk", "model.experts_per_token", true},
    {"--moe-ffn-hidden-size", "model.expert_ffn", true},
    {"--moe-shared-expert-intermediate-size", "", true},
    {"--moe-expert-capacity-factor", "training.moe_capacity_factor", true},
    {"--cross-entropy-loss-fusion", "", false},
    {"--cross-entropy-fusion-impl", "", true},
    {"--grad-reduce-in-bf16", "", false},
    {"--use-flash-attn", "", false},
    {"--attention-backend", "", true},
    // torchrun's own arguments in the same script: the cluster's shape.
    {"--nproc_per_node", "cluster.gpus_per_node", true},
    {"--nproc-per-node", "cluster.gpus_per_node", true},
    {"--nnodes", "cluster.nodes", true},
};

// An unknown flag takes the next word as its value unless that is a flag too.
bool takes_value(const std::vector<Token>& t, std::size_t i) {
  return i + 1 < t.size() && t[i + 1].text.rfind("--", 0) != 0;
}

const Flag* find_flag(std::string_view name) {
  static const std::unordered_map<std::string_view, const Flag*> by_name = [] {
    std::unordered_map<std::string_view, const Flag*> m;
    for (const Flag& f : k_megatron_flags) m.emplace(f.name, &f);
    return m;
  }();
  const auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

// What the script gives a flag (the last time it names it).
struct Given {
  std::string value;
  int line = 0;
  std::string problem;        // why the value is not known (Token::problem)
  bool inline_value = false;  // --flag=value
};

// Bounds of the integer a flag gives: its plan key's, else the ones written here.
struct Bounds {
  std::int64_t min, max;
};

Bounds bounds_of(const std::string& key, Bounds otherwise) {
  const auto dot = key.find('.');
  if (const KeySpec* k =
          dot == std::string::npos ? nullptr : find_key(key.substr(0, dot), key.substr(dot + 1));
      k && k->max > 0)
    return Bounds{static_cast<std::int64_t>(k->min), static_cast<std::int64_t>(k->max)};
  return otherwise;
}

// Whether an allocator configuration ("expandable_segments:True,max_split_size_mb:128")
// turns expandable segments on: options are comma-separated key:value pairs, and the value
// is True or true (c10/core/AllocatorConfig.cpp parseExpandableSegments).
bool expandable_segments_on(std::string_view conf) {
  bool on = false;
  while (!conf.empty()) {
    const auto comma = conf.find(',');
    std::string_view option = conf.substr(0, comma);
    conf = comma == std::string_view::npos ? std::string_view{} : conf.substr(comma + 1);
    const auto colon = option.find(':');
    if (colon == std::string_view::npos) continue;
    auto trim = [](std::string_view v) {
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
      return v;
    };
    if (trim(option.substr(0, colon)) != "expandable_segments") continue;
    const std::string_view value = trim(option.substr(colon + 1));
    on = value == "True" || value == "true";
  }
  return on;
}

// NCCL_ALGO as NCCL reads it for all-reduce (src/graph/tuning.cc, parseList): entries split by
// ';', the first may apply to every function, the others name one ("allreduce:tree"); a list
// enables its algorithms and disables the rest, or with '^' disables them and enables the rest;
// names are case-insensitive. The plan's choice: "ring" when rings run and trees do not, "tree"
// the other way round, "auto" otherwise; an unknown name is the error NCCL gives.
struct NcclAlgoSetting {
  std::string choice;  // "ring", "tree" or "auto"
  std::string error;
};
NcclAlgoSetting nccl_algo_setting(std::string_view value) {
  static constexpr std::string_view k_names[] = {
      "tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
  constexpr std::size_t n = std::size(k_names);
  bool on[n];
  std::fill(on, on + n, true);
  auto lower = [](std::string_view v) {
    std::string out(v);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  bool first = true;
  while (!value.empty() || first) {
    const auto semi = value.find(';');
    std::string_view entry = value.substr(0, semi);
    value = semi == std::string_view::npos ? std::string_view{} : value.substr(semi + 1);
    const bool was_first = first;
    first = false;
    const auto colon = entry.find(':');
    if (colon != std::string_view::npos) {
      if (lower(entry.substr(0, colon)) != "allreduce") continue;
      entry = entry.substr(colon + 1);
    } else if (!was_first) {
      return {"", fmt::format("NCCL_ALGO: every entry but the first needs a function prefix "
                              "(\"allreduce:tree\"), got \"{}\"",
                              entry)};
    }
    const bool negate = !entry.empty() && entry.front() == '^';
    if (negate) entry.remove_prefix(1);
    bool listed[n] = {};
    while (!entry.empty()) {
      const auto comma = entry.find(',');
      const std::string name = lower(entry.substr(0, comma));
      entry = comma == std::string_view::npos ? std::string_view{} : entry.substr(comma + 1);
      const auto* hit = std::find(std::begin(k_names), std::end(k_names), name);
      if (hit == std::end(k_names))
        return {"", fmt::format("NCCL_ALGO: unknown algorithm \"{}\" (NCCL knows ring, tree, "
                                "collnetdirect, collnetchain, nvls, nvlstree, pat)",
                                name)};
      listed[hit - std::begin(k_names)] = true;
    }
    for (std::size_t i = 0; i < n; ++i) on[i] = listed[i] != negate;
  }
  const bool tree = on[0], ring = on[1];
  return {ring && !tree ? "ring" : tree && !ring ? "tree" : "auto", ""};
}

}  // namespace

void import_megatron(const std::string& text, Sink& s) {
  const Shell sh(text);
  const auto& t = sh.tokens();
  auto at = [&](int line) { return Origin{s.path(), line, 1, "import"}; };
  if (sh.failed()) {
    s.error(at(sh.failed_line()), sh.failure());
    return;
  }
  s.put("training.framework", string_value("megatron", at(1)));
  // The caching allocator's options, when the script sets them (PYTORCH_ALLOC_CONF is the name
  // since PyTorch 2.9, PYTORCH_CUDA_ALLOC_CONF before; c10/core/AllocatorConfig.cpp).
  for (const char* name : {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
    int line = 0;
    if (const std::string* conf = sh.variable(name, &line))
      s.put("training.expandable_segments", boolean_value(expandable_segments_on(*conf), at(line)));
  }
  // NCCL's algorithms, when the script restricts them (NCCL_ALGO, docs/formulas.md#collectives).
  {
    int line = 0;
    if (const std::string* algo = sh.variable("NCCL_ALGO", &line)) {
      const NcclAlgoSetting set = nccl_algo_setting(*algo);
      if (!set.error.empty())
        s.error(at(line), set.error);
      else
        s.put("parallel.allreduce", string_value(set.choice, at(line)));
    }
  }
  std::map<std::string, Given> seen;  // flag → what the script gives it (the last wins)
  std::vector<std::string> unknown;   // flags not read, in the script's order (the sink keeps
                                      // each once)
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& w = t[i].text;
    if (w.rfind("--", 0) != 0) continue;
    std::string flag = w;
    Given g{"", t[i].line, "", false};
    if (const auto eq = w.find('='); eq != std::string::npos) {
      flag = w.substr(0, eq);
      g.value = w.substr(eq + 1);
      g.problem = t[i].problem;
      g.inline_value = true;
    }
    const Flag* known = find_flag(flag);
    if (!known) {
      if (!g.inline_value && takes_value(t, i)) ++i;
      unknown.push_back(std::move(flag));
      continue;
    }
    if (known->has_value && !g.inline_value) {
      if (i + 1 >= t.size() || t[i + 1].text.rfind("--", 0) == 0) {
        s.error(at(t[i].line), fmt::format("{} needs a value", flag));
        continue;
      }
      ++i;
      g.value = t[i].text;
      g.problem = t[i].problem;
      g.line = t[i].line;
    }
    seen[flag] = std::move(g);
  }

  // The value of a flag as a message quotes it.
  auto said = [&](const std::string& flag, const Given& g) {
    return fmt::format("{} {}", flag, shown(g.value));
  };
  // An integer within `b`, or a located error naming the flag.
  auto integer = [&](const std::string& flag, const Given& g,
                     Bounds b) -> std::optional<std::int64_t> {
    const auto x = parse_int(g.value);
    const bool digits =
        !g.value.empty() && std::all_of(g.value.begin() + (g.value[0] == '-'), g.value.end(),
                                        [](char c) { return c >= '0' && c <= '9'; });
    if (!x && !(digits && g.value != "-")) {
      s.error(at(g.line), fmt::format("{}: expected an integer", said(flag, g)));
      return std::nullopt;
    }
    if (!x || *x < b.min || *x > b.max) {
      s.error(at(g.line), fmt::format("{}: out of range ({} to {})", said(flag, g), b.min, b.max));
      return std::nullopt;
    }
    return x;
  };
  // The value of another flag when it is a usable integer; its own errors are its own.
  auto quiet_integer = [&](const char* flag, Bounds b) -> std::optional<std::int64_t> {
    const auto it = seen.find(flag);
    if (it == seen.end() || !it->second.problem.empty()) return std::nullopt;
    const auto x = parse_int(it->second.value);
    if (!x || *x < b.min || *x > b.max) return std::nullopt;
    return x;
  };
  const Bounds layers_bounds = bounds_of("model.layers", {1, 100000});
  const Bounds pp_bounds = bounds_of("parallel.pp", {1, 65536});

  for (const auto& [flag, v] : seen) {
    const Origin o = at(v.line);
    const Flag* f = find_flag(flag);
    if (!f->has_value && v.inline_value) {
      s.error(o, fmt::format("{}={}: {} takes no value", flag, shown(v.value), flag));
      continue;
    }
    if (!v.problem.empty()) {
      s.error(o, fmt::format("{}: {}", said(flag, v), shown(v.problem, 240)));
      continue;
    }
    if (f->key[0] != '\0') {
      const std::string key = f->key;
      if (flag == "--sequence-parallel") {
        if (quiet_integer("--tensor-model-parallel-size", bounds_of("parallel.tp", {1, 65536}))
                .value_or(1) == 1) {
          s.ignore(flag, "Megatron-LM turns sequence parallelism off when tp = 1");
          continue;
        }
      }
      if (flag == "--num-query-groups" && !seen.count("--group-query-attention")) {
        s.ignore(flag, "Megatron-LM reads it with --group-query-attention only");
        continue;
      }
      if ((flag == "--nproc_per_node" || flag == "--nproc-per-node") &&
          (v.value == "gpu" || v.value == "auto")) {
        s.ignore(flag + " " + v.value,
                 "torchrun counts the node's GPUs: set cluster.gpus_per_node");
        continue;
      }
      if (flag == "--nnodes" && v.value.find(':') != std::string::npos) {
        s.ignore(flag + " " + v.value, "an elastic range of nodes: set cluster.nodes");
        continue;
      }
      if (!f->has_value) {
        s.put(key, boolean_value(true, o));
      } else if (key == "training.moe_capacity_factor") {
        if (const auto x = parse_number(v.value))
          s.put(key, number_value(*x, o));
        else
          s.error(o, fmt::format("{}: expected a number", said(flag, v)));
      } else if (const auto x = integer(flag, v, bounds_of(key, {1, INT64_MAX}))) {
        s.put(key, integer_value(*x, o));
      }
      continue;
    }
    if (flag == "--use-distributed-optimizer") s.put("parallel.zero", integer_value(1, o));
    // Megatron-Core's HybridDeviceOptimizer: optimizer state and fp32 master parameters on the
    // host, main_grad on the GPU (the framework's offload convention).
    if (flag == "--optimizer-cpu-offload") s.put("parallel.offload", string_value("optimizer", o));
    // FP8 recipes run beside --bf16: FP8 wins.
    if ((flag == "--bf16" || flag == "--fp16") && !seen.count("--fp8-format") &&
        !seen.count("--fp4-format"))
      s.put("training.precision", string_value(flag.substr(2), o));
    if (flag == "--fp8-format" && seen.count("--fp4-format"))
      s.error(o, "--fp8-format with --fp4-format: Megatron-LM trains in one of them");
    if (flag == "--fp8-format") {
      // Megatron-LM's choices (arguments.py); --fp8-recipe defaults to delayed
      // (megatron/core/enums.py Fp8Recipe, transformer_config.py fp8_recipe).
      if (v.value == "e4m3" || v.value == "hybrid") {
        s.put("training.precision", string_value("fp8", o));
        if (!seen.count("--fp8-recipe")) s.put("training.recipe", string_value("delayed", o));
      } else {
        s.error(o, fmt::format("{}: expected e4m3 or hybrid", said(flag, v)));
      }
    }
    if (flag == "--fp8-recipe") {
      if (v.value == "delayed" || v.value == "tensorwise" || v.value == "blockwise" ||
          v.value == "mxfp8")
        s.put("training.recipe", string_value(v.value, o));
      else
        s.error(o, fmt::format("{}: expected delayed, tensorwise, blockwise or mxfp8 (a custom "
                               "recipe is not modelled)",
                               said(flag, v)));
    }
    if (flag == "--fp4-format") {
      if (v.value == "e2m1") {
        s.put("training.precision", string_value("fp4", o));
        s.put("training.recipe", string_value("nvfp4", o));
      } else {
        s.error(o, fmt::format("{}: expected e2m1", said(flag, v)));
      }
    }
    if (flag == "--fp4-recipe" && v.value != "nvfp4")
      s.error(o,
              fmt::format("{}: expected nvfp4 (a custom recipe is not modelled)", said(flag, v)));
    if (flag == "--fp8-param-gather" || flag == "--fp4-param-gather")
      s.put("parallel.fp8_param_gather", boolean_value(true, o));
    // Megatron-Core's flex token dispatcher over DeepEP (--moe-enable-deepep).
    if (flag == "--moe-enable-deepep") s.put("parallel.ep_dispatch", string_value("deepep", o));
    // The dispatcher (arguments.py: allgather, alltoall, flex); flex runs DeepEP only with
    // --moe-enable-deepep, read above.
    if (flag == "--moe-token-dispatcher-type") {
      if (v.value == "allgather")
        s.put("parallel.ep_dispatch", string_value("allgather", o));
      else if (v.value == "alltoall" && !seen.count("--moe-enable-deepep"))
        s.put("parallel.ep_dispatch", string_value("nccl", o));
      else if (v.value != "alltoall" && v.value != "flex")
        s.error(o, fmt::format("{}: expected allgather, alltoall or flex", said(flag, v)));
    }
    if (flag == "--swiglu") s.put("model.ffn_act", string_value("swiglu", o));
    if (flag == "--normalization") {
      if (v.value == "RMSNorm" || v.value == "LayerNorm")
        s.put("model.norm", string_value(v.value == "RMSNorm" ? "rmsnorm" : "layernorm", o));
      else
        s.error(o, fmt::format("{}: expected LayerNorm or RMSNorm", said(flag, v)));
    }
    if (flag == "--untie-embeddings-and-output-weights")
      s.put("model.tied_embeddings", boolean_value(false, o));
    if (flag == "--disable-bias-linear") s.put("model.bias", string_value("none", o));
    if (flag == "--add-qkv-bias") s.put("model.bias", string_value("qkv", o));
    if (flag == "--group-query-attention" && !seen.count("--num-query-groups"))
      s.error(o, "--group-query-attention without --num-query-groups");
    if (flag == "--recompute-activations")
      s.put("training.recompute", string_value("selective", o));
    if (flag == "--recompute-granularity") {
      if (v.value != "full" && v.value != "selective")
        s.error(o, fmt::format("{}: expected full or selective", said(flag, v)));
      else
        s.put("training.recompute", string_value(v.value, o));
    }
    if (flag == "--recompute-method") {
      if (v.value != "uniform" && v.value != "block")
        s.error(o, fmt::format("{}: expected uniform or block", said(flag, v)));
      else
        s.ignore(flag, "recompute of a subset of layers: set training.recompute_layers");
    }
    if (flag == "--recompute-num-layers" && integer(flag, v, layers_bounds))
      s.ignore(flag, "recompute of a subset of layers: set training.recompute_layers");
    if (flag == "--virtual-pipeline-model-parallel-size") {
      if (seen.count("--num-layers-per-virtual-pipeline-stage")) {
        s.error(o,
                "--virtual-pipeline-model-parallel-size and "
                "--num-layers-per-virtual-pipeline-stage: give one of them");
      } else if (const auto x = integer(flag, v, bounds_of("parallel.virtual_stages", {1, 1000}))) {
        s.put("parallel.virtual_stages", integer_value(*x, o));
        s.put("parallel.schedule", string_value("interleaved", o));
      }
    }
    if (flag == "--num-layers-per-virtual-pipeline-stage" &&
        !seen.count("--virtual-pipeline-model-parallel-size")) {
      const auto per = integer(flag, v, layers_bounds);
      if (!per) continue;
      if (!seen.count("--num-layers") || !seen.count("--pipeline-model-parallel-size")) {
        s.error(o,
                "--num-layers-per-virtual-pipeline-stage needs --num-layers and "
                "--pipeline-model-parallel-size beside it");
        continue;
      }
      // Their own values are checked (and any error given) where they are read.
      const auto l = quiet_integer("--num-layers", layers_bounds);
      const auto p = quiet_integer("--pipeline-model-parallel-size", pp_bounds);
      if (!l || !p) continue;
      std::int64_t chunk = 0;  // layers per chunk times the stages
      if (__builtin_mul_overflow(*p, *per, &chunk) || chunk <= 0 || *l % chunk != 0) {
        s.error(o, fmt::format("--num-layers-per-virtual-pipeline-stage {}: {} layers do not "
                               "split into {} stages of that",
                               *per, *l, *p));
      } else {
        s.put("parallel.virtual_stages", integer_value(*l / chunk, o));
        s.put("parallel.schedule", string_value("interleaved", o));
      }
    }
    if (flag == "--moe-shared-expert-intermediate-size") {
      if (const auto x = integer(flag, v, bounds_of("model.shared_expert_ffn", {1, 100000000}))) {
        if (*x == 0) {
          s.error(o, fmt::format("{}: must be at least 1", said(flag, v)));
        } else {
          s.put("model.shared_experts", integer_value(1, o));
          s.put("model.shared_expert_ffn", integer_value(*x, o));
        }
      }
    }
    // Megatron-Core's fused cross-entropy: the native implementation (the default) still makes
    // an fp32 copy of the logits and saves the fp32 softmax (fusions/fused_cross_entropy.py),
    // the memory of the vocab-parallel loss; Transformer Engine's kernel does not.
    if (flag == "--cross-entropy-loss-fusion") {
      const auto impl = seen.find("--cross-entropy-fusion-impl");
      if (impl != seen.end() && impl->second.value == "te")
        s.put("training.loss", string_value("fused", o));
      else
        s.ignore(flag,
                 "the native fused cross-entropy keeps the fp32 softmax: the memory of "
                 "the vocab-parallel loss (training.loss = \"standard\")");
    }
    if (flag == "--cross-entropy-fusion-impl" && v.value != "te" && v.value != "native")
      s.error(o, fmt::format("{}: expected native or te", said(flag, v)));
    // Megatron-Core DDP keeps main_grad in the reduce dtype (grad_reduce_in_fp32 off).
    if (flag == "--grad-reduce-in-bf16") {
      s.put("training.grad_dtype", string_value("bf16", o));
      s.put("training.reduce_dtype", string_value("bf16", o));
    }
    if (flag == "--use-flash-attn") s.put("training.attention", string_value("flash", o));
    if (flag == "--attention-backend") {
      // Megatron-LM's AttnBackend: flash, fused (cuDNN) and auto keep no s² scores; unfused
      // and local (Megatron's own DotProductAttention) materialize them.
      if (v.value == "flash" || v.value == "fused" || v.value == "auto")
        s.put("training.attention", string_value("flash", o));
      else if (v.value == "unfused" || v.value == "local")
        s.put("training.attention", string_value("eager", o));
      else
        s.error(o, fmt::format("{}: expected flash, fused, unfused, local or auto", said(flag, v)));
    }
  }
  for (const std::string& f : unknown) s.ignore(f, "");
}

}  // namespace trainledger::config::importing
