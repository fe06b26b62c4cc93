// Training configs people already have → plan keys (docs/config.md#importing-training-configs):
// a DeepSpeed JSON, a Megatron-LM launch script or argument list, a torchtitan TOML. Every value
// keeps its origin in the file (a JSON pointer, file:line); settings that do not change memory
// or time, or that the planner does not model, are listed as ignored.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>

#include "files.hpp"
#include "resolve.hpp"

namespace trainledger::config {

namespace {

class Sink {
 public:
  Sink(std::string path, SettingMap& out, std::vector<Diagnostic>& errors)
      : m_path(std::move(path)), m_out(out), m_errors(errors) {}
  void put(const std::string& full, Value v) {
    const auto dot = full.find('.');
    const KeySpec* spec = find_key(full.substr(0, dot), full.substr(dot + 1));
    if (!spec) return;
    if (v.origin.file.empty()) v.origin.file = m_path;
    v.origin.what = "import";
    if (auto s = to_setting(*spec, v, m_errors)) m_out[spec->full_name()] = *s;
  }
  void ignore(const std::string& what, const std::string& why) {
    m_ignored.push_back(what + (why.empty() ? "" : " (" + why + ")"));
  }
  void error(const Origin& at, const std::string& message) {
    m_errors.push_back(Diagnostic{at, message});
  }
  const std::vector<std::string>& ignored() const { return m_ignored; }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  SettingMap& m_out;
  std::vector<Diagnostic>& m_errors;
  std::vector<std::string> m_ignored;
};

const Value* field(const Value& t, const std::string& key) {
  for (const auto& [k, v] : t.fields)
    if (k == key && v.type != Value::Type::other) return &v;
  return nullptr;
}

std::optional<double> number_of(const Value& v) {
  if (v.type == Value::Type::integer) return static_cast<double>(v.integer);
  if (v.type == Value::Type::floating) return v.floating;
  return std::nullopt;
}

bool auto_value(const Value& v) { return v.type == Value::Type::string && v.string == "auto"; }

// ------------------------------------------------------------------------------------------
// DeepSpeed JSON (deepspeed/runtime/config.py, zero/config.py).

void import_deepspeed(const Value& doc, Sink& s) {
  s.put("training.framework", string_value("deepspeed", doc.origin));
  for (const auto& [key, v] : doc.fields) {
    const Origin& at = v.origin;
    if (auto_value(v)) {
      s.ignore(key, "\"auto\": the Hugging Face Trainer fills it in");
      continue;
    }
    if (key == "train_micro_batch_size_per_gpu") {
      s.put("training.micro_batch", v);
    } else if (key == "train_batch_size") {
      s.put("training.global_batch", v);
    } else if (key == "gradient_accumulation_steps") {
      s.put("training.grad_accum", v);
    } else if (key == "bf16" || key == "fp16") {
      const Value* en = field(v, "enabled");
      if (en && en->type == Value::Type::boolean && en->boolean)
        s.put("training.precision", string_value(key, en->origin));
      for (const auto& [k, x] : v.fields)
        if (k != "enabled") s.ignore(key + "." + k, "loss scaling does not change memory or time");
    } else if (key == "zero_optimization") {
      for (const auto& [k, x] : v.fields) {
        const std::string name = "zero_optimization." + k;
        if (auto_value(x)) {
          s.ignore(name, "\"auto\": the Hugging Face Trainer fills it in");
        } else if (k == "stage") {
          s.put("parallel.zero", x);
        } else if (k == "overlap_comm") {
          s.put("parallel.overlap_dp", x);
        } else if (k == "reduce_bucket_size" || k == "allgather_bucket_size") {
          // Elements, not bytes: DeepSpeed's buckets hold 16-bit gradients (2 B each).
          if (const auto n = number_of(x); n && k == "reduce_bucket_size")
            s.put("parallel.bucket_size", string_value(fmt::format("{:.0f} B", *n * 2), x.origin));
          else if (k == "allgather_bucket_size")
            s.ignore(name, "the parameter all-gather bucket is not modelled");
        } else if (k == "offload_optimizer" || k == "offload_param") {
          const Value* dev = field(x, "device");
          if (dev && dev->type == Value::Type::string && dev->string != "none") {
            if (dev->string == "nvme") {
              s.error(dev->origin, fmt::format("{}.device = \"nvme\": offload to NVMe is not "
                                               "modelled (cpu is)",
                                               name));
              continue;
            }
            s.put(
                "parallel.offload",
                string_value(k == "offload_param" ? "optimizer+params" : "optimizer", dev->origin));
          }
        } else {
          s.ignore(name, "a tuning knob the planner does not model");
        }
      }
    } else if (key == "optimizer") {
      const Value* type = field(v, "type");
      if (type && type->type == Value::Type::string) {
        std::string t = type->string;
        for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (t == "adam" || t == "adamw" || t == "fusedadam" || t == "cpuadam")
          s.put("training.optimizer", string_value("adamw", type->origin));
        else if (t == "lion")
          s.put("training.optimizer", string_value("lion", type->origin));
        else if (t == "sgd")
          s.put("training.optimizer", string_value("sgd-momentum", type->origin));
        else
          s.ignore("optimizer.type " + type->string, "not a modelled optimizer: the plan's stays");
      }
    } else if (key == "activation_checkpointing") {
      s.ignore(key,
               "DeepSpeed's options only configure checkpointing the model code asks for: set "
               "training.recompute");
    } else {
      s.ignore(key, "does not change memory or time");
    }
    (void)at;
  }
}

// ------------------------------------------------------------------------------------------
// Megatron-LM arguments (megatron/training/arguments.py), from a launch script or a list.

struct Token {
  std::string text;
  int line = 0;
};

// A shell script's words after variable substitution. Assignments NAME=value (with
// ${NAME:-default} and $((a*b)) arithmetic of known values) are followed in order;
// conditionals are not evaluated (every argument the script names counts, the last wins).
class Shell {
 public:
  explicit Shell(const std::string& text) {
    std::istringstream in(text);
    std::string line, joined;
    int line_no = 0, start = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (joined.empty()) start = line_no;
      if (!line.empty() && line.back() == '\\') {
        joined += line.substr(0, line.size() - 1) + " ";
        continue;
      }
      joined += line;
      logical(joined, start);
      joined.clear();
    }
    if (!joined.empty()) logical(joined, start);
  }
  const std::vector<Token>& tokens() const { return m_tokens; }

 private:
  void logical(const std::string& raw, int line) {
    std::vector<std::string> words = split(raw);
    if (words.empty()) return;
    std::size_t i = 0;
    if (words[0] == "export" || words[0] == "local" || words[0] == "readonly") i = 1;
    // NAME=value or NAME=( ... )
    if (i < words.size()) {
      const std::string& w = words[i];
      const auto eq = w.find('=');
      if (eq != std::string::npos && eq > 0 && identifier(w.substr(0, eq))) {
        const std::string name = w.substr(0, eq);
        std::string value = w.substr(eq + 1);
        if (value == "(" || value.rfind("(", 0) == 0) {
          // An array: its words are arguments.
          if (value.size() > 1)
            words[i] = value.substr(1);
          else
            ++i;
          for (std::size_t j = i; j < words.size(); ++j) add(words[j], line);
          return;
        }
        m_vars[name] = expand(value, line);
        return;
      }
    }
    for (; i < words.size(); ++i) add(words[i], line);
  }

  void add(std::string w, int line) {
    if (w == ")" || w == "(") return;
    if (!w.empty() && w.back() == ')' && w.find('(') == std::string::npos) w.pop_back();
    if (w.empty()) return;
    const std::string x = expand(w, line);
    // A quoted word may hold several arguments ("--fp8-format hybrid").
    for (const std::string& part : split(x)) {
      if (m_tokens.size() >= 200000) {
        m_too_long = line;
        return;
      }
      m_tokens.push_back(Token{part, line});
    }
  }

  static bool identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
  }

  // Words, with quotes removed and comments dropped.
  static std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::string cur;
    bool any = false;
    char quote = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (quote) {
        if (c == quote)
          quote = 0;
        else
          cur += c;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
        any = true;
        continue;
      }
      if (c == '#' && cur.empty() && !any) break;
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!cur.empty() || any) out.push_back(cur);
        cur.clear();
        any = false;
        continue;
      }
      cur += c;
    }
    if (!cur.empty() || any) out.push_back(cur);
    return out;
  }

  std::string lookup(const std::string& name, int line, bool* known = nullptr) const {
    const auto it = m_vars.find(name);
    if (known) *known = it != m_vars.end();
    (void)line;
    return it == m_vars.end() ? "" : it->second;
  }

  // $NAME, ${NAME}, ${NAME:-default}, $((arithmetic)), nested at most 8 deep; a value may not
  // grow beyond 64 KiB (scripts come from pull requests: no expansion bombs).
  std::string expand(const std::string& w, int line, int depth = 0) {
    if (depth > 8) return undefined("(nested too deep)", line);
    std::string out;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] != '$' || i + 1 >= w.size()) {
        out += w[i];
        continue;
      }
      if (w.compare(i, 3, "$((") == 0) {
        const auto end = w.find("))", i + 3);
        if (end == std::string::npos) break;
        out += arithmetic(w.substr(i + 3, end - i - 3), line);
        i = end + 1;
      } else if (w[i + 1] == '{') {
        const auto end = w.find('}', i + 2);
        if (end == std::string::npos) break;
        const std::string inner = w.substr(i + 2, end - i - 2);
        const auto dflt = inner.find(":-");
        bool known = false;
        const std::string name = inner.substr(0, dflt);
        const std::string v = lookup(name, line, &known);
        out += known && !v.empty()         ? v
               : dflt != std::string::npos ? expand(inner.substr(dflt + 2), line, depth + 1)
                                           : undefined(name, line);
        i = end;
      } else if (std::isalpha(static_cast<unsigned char>(w[i + 1])) || w[i + 1] == '_') {
        std::size_t j = i + 1;
        while (j < w.size() && (std::isalnum(static_cast<unsigned char>(w[j])) || w[j] == '_')) ++j;
        bool known = false;
        const std::string name = w.substr(i + 1, j - i - 1);
        const std::string v = lookup(name, line, &known);
        out += known ? v : undefined(name, line);
        i = j - 1;
      } else {
        out += w[i];
      }
      if (out.size() > k_max_value) {
        m_too_long = line;
        return out.substr(0, k_max_value);
      }
    }
    return out;
  }

  static constexpr std::size_t k_max_value = 64 * 1024;

  std::string undefined(const std::string& name, int line) {
    m_unresolved[name] = line;
    return "$" + name;
  }

  // Integer + - * / over numbers and variables.
  std::string arithmetic(const std::string& e, int line) {
    std::int64_t acc = 0, term = 1;
    char add_op = '+', mul_op = '*';
    std::string cur;
    bool ok = true;
    auto value = [&](const std::string& t) -> std::int64_t {
      std::string v = t;
      if (!v.empty() && v[0] == '$') v = v.substr(1);
      if (!v.empty() && std::isdigit(static_cast<unsigned char>(v[0])))
        return std::atoll(v.c_str());
      bool known = false;
      const std::string x = lookup(v, line, &known);
      if (!known || x.empty() || !std::isdigit(static_cast<unsigned char>(x[0]))) ok = false;
      return std::atoll(x.c_str());
    };
    auto close_factor = [&] {
      const std::int64_t f = value(cur);
      cur.clear();
      if (mul_op == '*')
        term *= f;
      else if (f != 0)
        term /= f;
      else
        ok = false;
    };
    auto close_term = [&] {
      acc = add_op == '+' ? acc + term : acc - term;
      term = 1;
      mul_op = '*';
    };
    for (char c : e + "+") {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      if (c == '*' || c == '/') {
        close_factor();
        mul_op = c;
      } else if (c == '+' || c == '-') {
        close_factor();
        close_term();
        add_op = c;
      } else {
        cur += c;
      }
    }
    if (!ok) {
      m_unresolved["$((" + e + "))"] = line;
      return "$((" + e + "))";
    }
    return std::to_string(acc);
  }

  std::map<std::string, std::string> m_vars;
  std::vector<Token> m_tokens;

 public:
  std::map<std::string, int> m_unresolved;
  int m_too_long = 0;  // a line whose expansion went over the bound
};

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

// ------------------------------------------------------------------------------------------
// torchtitan TOML (torchtitan/config/job_config.py).

void import_torchtitan(const Value& doc, Sink& s) {
  s.put("training.framework", string_value("pytorch", doc.origin));
  for (const auto& [section, table] : doc.fields) {
    if (table.type != Value::Type::table) continue;
    for (std::size_t i = 0; i < table.fields.size(); ++i) {
      const std::string& k = table.fields[i].first;
      const Value& v = table.fields[i].second;
      const std::string name = section + "." + k;
      if (section == "parallelism") {
        if (k == "tensor_parallel_degree")
          s.put("parallel.tp", v);
        else if (k == "pipeline_parallel_degree")
          s.put("parallel.pp", v);
        else if (k == "context_parallel_degree")
          s.put("parallel.cp", v);
        else if (k == "expert_parallel_degree")
          s.put("parallel.ep", v);
        else if (k == "data_parallel_shard_degree") {
          // FSDP unless the shard group is one rank (-1: every remaining rank).
          if (v.type == Value::Type::integer && v.integer != 1)
            s.put("parallel.zero", integer_value(3, v.origin));
          if (v.type == Value::Type::integer && v.integer > 1) s.put("parallel.zero_shard_size", v);
        } else if (k == "data_parallel_replicate_degree") {
          if (v.type == Value::Type::integer && v.integer > 1)
            s.ignore(name, "HSDP replicas follow from the cluster size and the shard degree");
        } else if (k == "pipeline_parallel_schedule" && v.type == Value::Type::string) {
          const std::string& x = v.string;
          if (x == "1F1B")
            s.put("parallel.schedule", string_value("1f1b", v.origin));
          else if (x == "GPipe")
            s.put("parallel.schedule", string_value("gpipe", v.origin));
          else if (x == "Interleaved1F1B")
            s.put("parallel.schedule", string_value("interleaved", v.origin));
          else
            s.ignore(name + " = " + x, "not a modelled schedule");
        } else if (k == "enable_async_tensor_parallel") {
          s.put("parallel.overlap_tp", v);
        } else if (k == "fsdp_reshard_after_forward" && v.type == Value::Type::string) {
          if (v.string == "never")
            s.put("parallel.reshard_after_forward", boolean_value(false, v.origin));
          else if (v.string == "always")
            s.put("parallel.reshard_after_forward", boolean_value(true, v.origin));
        } else {
          s.ignore(name, "");
        }
      } else if (section == "training") {
        if (k == "local_batch_size" || k == "batch_size")
          s.put("training.micro_batch", v);
        else if (k == "global_batch_size") {
          if (v.type == Value::Type::integer && v.integer > 0) s.put("training.global_batch", v);
        } else if (k == "seq_len")
          s.put("training.seq_len", v);
        else if (k == "mixed_precision_param" && v.type == Value::Type::string) {
          if (v.string == "bfloat16")
            s.put("training.precision", string_value("bf16", v.origin));
          else if (v.string == "float32")
            s.put("training.precision", string_value("fp32", v.origin));
        } else if (k == "compile")
          s.put("training.compile", v);
        else
          s.ignore(name, "does not change memory or time");
      } else if (section == "activation_checkpoint") {
        if (k == "mode" && v.type == Value::Type::string) {
          if (v.string == "full" || v.string == "none")
            s.put("training.recompute", string_value(v.string, v.origin));
          else if (v.string == "selective") {
            const Value* opt = field(table, "selective_ac_option");
            if (!opt || (opt->type == Value::Type::string && opt->string == "op")) {
              s.put("training.recompute", string_value("op", v.origin));
            } else if (opt->type == Value::Type::string) {
              // Every n-th layer recomputed in full.
              const long n = std::atol(opt->string.c_str());
              if (n > 0) {
                s.put("training.recompute", string_value("full", opt->origin));
                s.put("training.recompute_layers", number_value(1.0 / n, opt->origin));
              } else {
                s.error(opt->origin, "selective_ac_option: expected \"op\" or a positive integer");
              }
            }
          }
        } else if (k != "selective_ac_option") {
          s.ignore(name, "");
        }
      } else if (section == "compile") {
        if (k == "enable") s.put("training.compile", v);
      } else if (section == "model") {
        if (k == "converters" && v.type == Value::Type::array) {
          for (const Value& c : v.items)
            if (c.type == Value::Type::string && c.string == "float8")
              s.put("training.precision", string_value("fp8", c.origin));
        } else if (k == "flavor" && v.type == Value::Type::string) {
          const Value* model = field(table, "name");
          const std::string family =
              model && model->type == Value::Type::string ? model->string : "";
          static const std::map<std::string, std::string> presets = {
              {"llama3/8B", "llama-3.1-8b"},      {"llama3/70B", "llama-3.1-70b"},
              {"llama3/405B", "llama-3.1-405b"},  {"llama2/7B", "llama-2-7b"},
              {"llama2/13B", "llama-2-13b"},      {"llama2/70B", "llama-2-70b"},
              {"deepseek_v3/671B", "deepseek-v3"}};
          const auto p = presets.find(family + "/" + v.string);
          if (p != presets.end())
            s.put("model.preset", string_value(p->second, v.origin));
          else
            s.ignore(name + " = " + family + " " + v.string,
                     "no preset of that flavor: give model.preset or model.hf_config");
        }
      } else if (section == "quantize.linear.float8" || section == "float8") {
        if (k == "enable_fsdp_float8_all_gather") s.put("parallel.fp8_all_gather", v);
      } else {
        // Nested tables ([quantize.linear.float8]) arrive as tables of tables.
        if (section == "quantize" && v.type == Value::Type::table) {
          for (const auto& [k2, lin] : v.fields)
            if (k2 == "float8" && lin.type == Value::Type::table)
              if (const Value* fp8 = field(lin, "enable_fsdp_float8_all_gather"))
                s.put("parallel.fp8_all_gather", *fp8);
          continue;
        }
        s.ignore(section, "does not change memory or time");
        break;
      }
    }
  }
}

}  // namespace

const std::vector<std::string>& import_kinds() {
  static const std::vector<std::string> k = {"deepspeed", "megatron", "torchtitan"};
  return k;
}

SettingMap read_import(const std::string& kind, const std::string& path, const Origin& asked_at,
                       std::vector<Diagnostic>& errors, std::vector<std::string>& warnings) {
  std::string why;
  const std::optional<std::string> text = read_regular_file(path, k_max_hf_config_bytes, why);
  if (!text) {
    errors.push_back(
        Diagnostic{asked_at, fmt::format("import.{}: cannot read \"{}\": {}", kind, path, why)});
    return {};
  }
  return import_text(kind, *text, path, asked_at, errors, warnings);
}

SettingMap import_text(const std::string& kind, const std::string& text_in, const std::string& path,
                       const Origin& asked_at, std::vector<Diagnostic>& errors,
                       std::vector<std::string>& warnings) {
  SettingMap out;
  const std::optional<std::string> text = text_in;
  Sink sink(path, out, errors);
  const std::size_t before = errors.size();
  try {
    if (kind == "deepspeed") {
      const Value doc = parse_json(*text, path);
      if (doc.type != Value::Type::table)
        errors.push_back(Diagnostic{asked_at, "import.deepspeed: expected a JSON object"});
      else
        import_deepspeed(doc, sink);
    } else if (kind == "megatron") {
      import_megatron(*text, sink);
    } else if (kind == "torchtitan") {
      import_torchtitan(parse_toml(*text, path, "import"), sink);
    } else {
      errors.push_back(Diagnostic{
          asked_at,
          fmt::format("unknown import kind \"{}\" (deepspeed, megatron, torchtitan)", kind)});
    }
  } catch (const ConfigError& e) {
    for (const Diagnostic& d : e.diagnostics()) errors.push_back(d);
  }
  if (errors.size() > before) return {};
  if (!sink.ignored().empty())
    warnings.push_back(
        fmt::format("{}: ignored (not modelled, or no effect on memory and time): {}", path,
                    fmt::join(sink.ignored(), "; ")));
  return out;
}

}  // namespace trainledger::config
