// Megatron-LM arguments (megatron/training/arguments.py), from a launch script or a list.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

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
    {"--num-layers-per-virtual-pipeline-stage", "", true},
    {"--virtual-pipeline-model-parallel-size", "", true},
    {"--sequence-parallel", "parallel.sequence_parallel", false},
    {"--use-distributed-optimizer", "", false},
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
    {"--fp8-param-gather", "", false},
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

// A value as an error message shows it: at most 40 characters.
std::string shown(const std::string& v) { return v.size() > 40 ? v.substr(0, 40) + "..." : v; }

}  // namespace

void import_megatron(const std::string& text, Sink& s) {
  Shell sh(text);
  const auto& t = sh.tokens();
  auto at = [&](int line) { return Origin{s.path(), line, 1, "import"}; };
  if (sh.m_too_long > 0) {
    s.error(at(sh.m_too_long),
            "the script's variables expand beyond 64 KiB or 200,000 words: "
            "not a launch script the importer reads");
    return;
  }
  s.put("training.framework", string_value("megatron", at(1)));
  std::map<std::string, std::pair<std::string, int>> seen;  // flag → value, line (last wins)
  std::vector<std::string> ignored;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& w = t[i].text;
    if (w.rfind("--", 0) != 0) continue;
    std::string flag = w, value;
    if (const auto eq = w.find('='); eq != std::string::npos) {
      flag = w.substr(0, eq);
      value = w.substr(eq + 1);
    }
    const Flag* known = nullptr;
    for (const Flag& f : k_megatron_flags)
      if (flag == f.name) known = &f;
    if (!known) {
      if (value.empty() && takes_value(t, i)) ++i;
      if (std::find(ignored.begin(), ignored.end(), flag) == ignored.end()) ignored.push_back(flag);
      continue;
    }
    if (known->has_value && value.empty()) {
      if (i + 1 >= t.size() || t[i + 1].text.rfind("--", 0) == 0) {
        s.error(at(t[i].line), fmt::format("{} needs a value", flag));
        continue;
      }
      value = t[++i].text;
    }
    seen[flag] = {value, t[i].line};
  }
  for (const auto& [name, line] : sh.m_unresolved) {
    for (const auto& [flag, v] : seen)
      if (v.first.find("$" + name) != std::string::npos || v.first == name)
        s.error(at(v.second),
                fmt::format("{} {}: the script does not define {} (give the value, or import the "
                            "argument list the job ran with)",
                            flag, shown(v.first), shown(name)));
  }
  auto integer = [&](const std::string& flag, const std::pair<std::string, int>& v) {
    char* end = nullptr;
    const long long x = std::strtoll(v.first.c_str(), &end, 10);
    if (end == v.first.c_str() || *end != '\0') {
      s.error(at(v.second), fmt::format("{} {}: expected an integer", flag, shown(v.first)));
      return std::optional<long long>();
    }
    return std::optional<long long>(x);
  };
  for (const auto& [flag, v] : seen) {
    const Origin o = at(v.second);
    const Flag* f = nullptr;
    for (const Flag& k : k_megatron_flags)
      if (flag == k.name) f = &k;
    if (f->key[0] != '\0') {
      const std::string key = f->key;
      if (flag == "--sequence-parallel") {
        const auto tp = seen.find("--tensor-model-parallel-size");
        if (tp == seen.end() || tp->second.first == "1") {
          s.ignore(flag, "Megatron-LM turns sequence parallelism off when tp = 1");
          continue;
        }
      }
      if (!f->has_value) {
        s.put(key, boolean_value(true, o));
      } else if (key == "training.moe_capacity_factor") {
        s.put(key, number_value(std::atof(v.first.c_str()), o));
      } else if (const auto x = integer(flag, v)) {
        s.put(key, integer_value(*x, o));
      }
      continue;
    }
    if (flag == "--use-distributed-optimizer") s.put("parallel.zero", integer_value(1, o));
    // FP8 recipes run beside --bf16: FP8 wins.
    if ((flag == "--bf16" || flag == "--fp16") && !seen.count("--fp8-format"))
      s.put("training.precision", string_value(flag.substr(2), o));
    if (flag == "--fp8-format") s.put("training.precision", string_value("fp8", o));
    if (flag == "--fp8-param-gather")
      s.ignore(flag, "FP8 parameter all-gather is not modelled yet");
    if (flag == "--swiglu") s.put("model.ffn_act", string_value("swiglu", o));
    if (flag == "--normalization")
      s.put("model.norm", string_value(v.first == "RMSNorm" ? "rmsnorm" : "layernorm", o));
    if (flag == "--untie-embeddings-and-output-weights")
      s.put("model.tied_embeddings", boolean_value(false, o));
    if (flag == "--disable-bias-linear") s.put("model.bias", string_value("none", o));
    if (flag == "--add-qkv-bias") s.put("model.bias", string_value("qkv", o));
    if (flag == "--group-query-attention" && !seen.count("--num-query-groups"))
      s.error(o, "--group-query-attention without --num-query-groups");
    if (flag == "--recompute-activations")
      s.put("training.recompute", string_value("selective", o));
    if (flag == "--recompute-granularity") {
      if (v.first != "full" && v.first != "selective")
        s.error(o, fmt::format("--recompute-granularity {}: expected full or selective",
                               shown(v.first)));
      else
        s.put("training.recompute", string_value(v.first, o));
    }
    if (flag == "--recompute-method" || flag == "--recompute-num-layers")
      s.ignore(flag, "recompute of a subset of layers: set training.recompute_layers");
    if (flag == "--virtual-pipeline-model-parallel-size") {
      if (const auto x = integer(flag, v)) {
        s.put("parallel.virtual_stages", integer_value(*x, o));
        s.put("parallel.schedule", string_value("interleaved", o));
      }
    }
    if (flag == "--num-layers-per-virtual-pipeline-stage") {
      const auto layers = seen.find("--num-layers");
      const auto pp = seen.find("--pipeline-model-parallel-size");
      const auto per = integer(flag, v);
      if (layers == seen.end() || pp == seen.end() || !per || *per <= 0) {
        s.error(o,
                "--num-layers-per-virtual-pipeline-stage needs --num-layers and "
                "--pipeline-model-parallel-size beside it");
      } else {
        const long long l = std::atoll(layers->second.first.c_str());
        const long long p = std::atoll(pp->second.first.c_str());
        if (p > 0 && l % (p * *per) == 0) {
          s.put("parallel.virtual_stages", integer_value(l / (p * *per), o));
          s.put("parallel.schedule", string_value("interleaved", o));
        } else {
          s.error(o, fmt::format("--num-layers-per-virtual-pipeline-stage {}: {} layers do not "
                                 "split into {} stages of that",
                                 *per, l, p));
        }
      }
    }
    if (flag == "--moe-shared-expert-intermediate-size") {
      if (const auto x = integer(flag, v)) {
        s.put("model.shared_experts", integer_value(1, o));
        s.put("model.shared_expert_ffn", integer_value(*x, o));
      }
    }
    if (flag == "--cross-entropy-loss-fusion") s.put("training.loss", string_value("fused", o));
    // Megatron-Core DDP keeps main_grad in the reduce dtype (grad_reduce_in_fp32 off).
    if (flag == "--grad-reduce-in-bf16") {
      s.put("training.grad_dtype", string_value("bf16", o));
      s.put("training.reduce_dtype", string_value("bf16", o));
    }
    if (flag == "--use-flash-attn" || flag == "--attention-backend")
      s.put("training.attention", string_value("flash", o));
  }
  for (const std::string& f : ignored) s.ignore(f, "");
}

}  // namespace trainledger::config::importing
