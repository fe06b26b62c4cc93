// Reading a TRL GRPO run's settings as given (import_trl_read.hpp): the launch script's words
// and flags, the recipe and accelerate configs it names, a DeepSpeed JSON, a Python script's
// GRPOConfig(...) call. The conversion to plan keys is in import_trl.cpp.
#include "import_trl_read.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "shell_words.hpp"
#ifdef TRAINLEDGER_HAVE_YAML
#include "yaml_flat.hpp"
#endif

namespace trainledger::config::importing::trl {

namespace {

std::string normal(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Accelerate's (and torchrun's) own flags: the launcher takes them, not the training script.
bool launcher_flag(const std::string& n) {
  static const char* const k[] = {"num_processes",
                                  "num_machines",
                                  "config_file",
                                  "accelerate_config",
                                  "use_deepspeed",
                                  "zero_stage",
                                  "use_fsdp",
                                  "mixed_precision",
                                  "machine_rank",
                                  "main_process_ip",
                                  "main_process_port",
                                  "rdzv_backend",
                                  "multi_gpu",
                                  "gpu_ids",
                                  "offload_optimizer_device",
                                  "offload_param_device",
                                  "deepspeed_config_file",
                                  "fsdp_version",
                                  "fsdp_offload_params",
                                  "fsdp_sharding_strategy",
                                  "fsdp_reshard_after_forward",
                                  "fsdp_activation_checkpointing",
                                  "same_network",
                                  "dynamo_backend",
                                  "num_cpu_threads_per_process",
                                  "deepspeed_multinode_launcher",
                                  "zero3_init_flag",
                                  "nproc_per_node",
                                  "nnodes",
                                  "node_rank",
                                  "master_addr",
                                  "master_port",
                                  "rdzv_endpoint",
                                  "rdzv_id",
                                  "standalone",
                                  "tee"};
  for (const char* f : k)
    if (n == f) return true;
  return false;
}

// The accelerate configs TRL ships (trl/accelerate_configs/*.yaml at f2cd5771), which
// `--accelerate_config NAME` selects: 8 processes on one machine, bf16.
std::optional<Args> shipped_accelerate_config(const std::string& name, const Origin& at) {
  auto arg = [&](const char* v) { return Arg{v, true, at, ""}; };
  Args a{{"num_processes", arg("8")}, {"num_machines", arg("1")}};
  if (name == "zero1" || name == "zero2" || name == "zero3") {
    a["distributed_type"] = arg("DEEPSPEED");
    a["deepspeed_config.zero_stage"] = arg(name == "zero1" ? "1" : name == "zero2" ? "2" : "3");
  } else if (name == "fsdp1" || name == "fsdp2") {
    a["distributed_type"] = arg("FSDP");
    a["fsdp_config.fsdp_reshard_after_forward"] = arg(name == "fsdp1" ? "FULL_SHARD" : "true");
  } else if (name == "multi_gpu") {
    a["distributed_type"] = arg("MULTI_GPU");
  } else if (name == "single_gpu") {
    a["distributed_type"] = arg("NO");
    a["num_processes"] = arg("1");
  } else {
    return std::nullopt;
  }
  return a;
}

// Where each --name is written: the lines of the text holding it at a word's start, in order,
// found in one pass (a command continued over lines gives its words the line it starts on).
class FlagLines {
 public:
  explicit FlagLines(const std::string& text) {
    each_line(text, [&](int line, std::string_view l) {
      for (std::size_t k = l.find("--"); k != std::string_view::npos; k = l.find("--", k + 2)) {
        if (k > 0 && l[k - 1] != ' ' && l[k - 1] != '\t') continue;
        const std::string_view rest = l.substr(k + 2);
        const std::size_t stop = std::min(rest.find_first_of(" \t=\\\"'"), rest.size());
        if (stop > 0 && m_lines.size() < 100000)
          m_lines[normal(std::string(rest.substr(0, std::min<std::size_t>(stop, 200))))].push_back(
              line);
      }
    });
  }
  // The first line at or after `from` that names --name; `from` when none does.
  int line(const std::string& name, int from) const {
    const auto it = m_lines.find(name);
    if (it == m_lines.end()) return from;
    const auto at = std::lower_bound(it->second.begin(), it->second.end(), from);
    return at == it->second.end() ? from : *at;
  }

 private:
  std::map<std::string, std::vector<int>> m_lines;
};

// --name value, --name=value and bare --name flags of words [begin, end); later ones win.
void read_flags(const std::vector<Token>& w, std::size_t begin, std::size_t end,
                const std::string& path, const FlagLines& lines, Args& script, Args* launcher,
                bool launcher_by_name) {
  for (std::size_t i = begin; i < end; ++i) {
    const std::string& word = w[i].text;
    if (word.rfind("--", 0) != 0 || word.size() < 3) continue;
    std::string name = word.substr(2);
    Arg a;
    a.problem = w[i].problem;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      a.value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < end && w[i + 1].text.rfind("--", 0) != 0) {
      a.value = w[i + 1].text;
      if (a.problem.empty()) a.problem = w[i + 1].problem;
      ++i;
    } else {
      a.has_value = false;
    }
    name = normal(name);
    a.at = Origin{path, lines.line(name, w[i].line), 1, "import"};
    if (launcher && (!launcher_by_name || launcher_flag(name)))
      (*launcher)[name] = a;
    else
      script[name] = a;
  }
}

// Where the last `GRPOConfig(` call starts: the name whole (`trl.GRPOConfig(` is one,
// `MyGRPOConfig(` is not) and not after a `#` on its line.
std::size_t last_grpo_config_call(const std::string& text) {
  constexpr std::string_view k_call = "GRPOConfig(";
  std::size_t at = text.size();
  while (at > 0) {
    const std::size_t call = text.rfind(k_call.data(), at - 1, k_call.size());
    if (call == std::string::npos) return call;
    at = call;
    const unsigned char before = call > 0 ? static_cast<unsigned char>(text[call - 1]) : ' ';
    if (std::isalnum(before) || before == '_') continue;
    const std::size_t line_start = call == 0 ? 0 : text.rfind('\n', call - 1) + 1;
    if (text.find('#', line_start) < call) continue;
    return call;
  }
  return std::string::npos;
}

// The file name of a path word.
std::string base_name(const std::string& w) {
  const auto slash = w.rfind('/');
  return slash == std::string::npos ? w : w.substr(slash + 1);
}

// accelerate's `deepspeed_config_file` (a flag, or a key of its config's deepspeed_config): a
// DeepSpeed JSON that replaces the accelerate config's ZeRO settings (accelerate's
// DeepSpeedPlugin ignores zero_stage and the offload devices beside it). Its ZeRO stage and
// offload devices become those keys; the rest of the file (batch sizes, precision: "auto",
// filled from GRPOConfig by the Trainer) is not read.
template <class ReadNamed>
void deepspeed_config_file(Run& run, ReadNamed& read_named) {
  const Arg* name = nullptr;
  for (const char* k : {"deepspeed_config_file", "deepspeed_config.deepspeed_config_file"})
    if (const auto it = run.launcher.find(k); it != run.launcher.end() && !name) name = &it->second;
  if (!name || !name->has_value) return;
  std::string resolved;
  const auto text = read_named(name->value, name->at, resolved, "deepspeed_config_file");
  if (!text) return;
  const Value doc = parse_json(*text, resolved);
  const Value* zero = doc.type == Value::Type::table ? field(doc, "zero_optimization") : nullptr;
  if (!zero || zero->type != Value::Type::table) return;
  auto take = [&](const Value* v, const char* key) {
    if (!v) return;
    if (v->type == Value::Type::integer)
      run.launcher[key] = Arg{std::to_string(v->integer), true, v->origin, ""};
    else if (v->type == Value::Type::string && v->string != "auto")
      run.launcher[key] = Arg{v->string, true, v->origin, ""};
  };
  take(field(*zero, "stage"), "deepspeed_config.zero_stage");
  for (const auto& [section, key] :
       {std::pair{"offload_optimizer", "deepspeed_config.offload_optimizer_device"},
        std::pair{"offload_param", "deepspeed_config.offload_param_device"}}) {
    const Value* o = field(*zero, section);
    if (o && o->type == Value::Type::table) take(field(*o, "device"), key);
  }
}

}  // namespace

std::optional<bool> truth(const Arg& a) {
  if (!a.has_value) return true;
  const std::string& v = a.value;
  if (v == "true" || v == "True" || v == "TRUE" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "False" || v == "FALSE" || v == "0" || v == "no") return false;
  return std::nullopt;
}

// Python: the keyword arguments of the last `GRPOConfig(` call whose values are literals
// (numbers, True/False/None, quoted strings); the others are listed as not read.
bool read_python(const std::string& text, const std::string& path, Args& out, Sink& s) {
  const std::size_t call = last_grpo_config_call(text);
  if (call == std::string::npos) return false;
  int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + call, '\n'));
  std::size_t i = call + std::string_view("GRPOConfig(").size();
  int depth = 0;
  std::string piece;
  int piece_line = line;
  auto finish = [&]() {
    std::string p = piece;
    piece.clear();
    const auto first = p.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return;
    p = p.substr(first, p.find_last_not_of(" \t\r\n") - first + 1);
    const auto eq = p.find('=');
    std::string name = eq == std::string::npos ? "" : p.substr(0, eq);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    const bool identifier = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    if (!identifier || (eq + 1 < p.size() && p[eq + 1] == '=')) {
      s.ignore(p, "not a keyword argument");
      return;
    }
    std::string v = p.substr(eq + 1);
    v = v.substr(std::min(v.find_first_not_of(" \t\r\n"), v.size()));
    const Origin at{path, piece_line, 1, "import"};
    const bool quoted = v.size() >= 2 && (v.front() == '"' || v.front() == '\'') &&
                        v.back() == v.front() && v.find(v.front(), 1) == v.size() - 1;
    if (quoted)
      out[name] = Arg{v.substr(1, v.size() - 2), true, at, ""};
    else if (v == "None")
      return;
    else if (v == "True" || v == "False" || parse_number(v))
      out[name] = Arg{v, true, at, ""};
    else
      s.ignore(name + "=" + v, "not a literal");
  };
  char quote = 0;
  bool first_char = true;
  int arguments = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (quote) {
      if (c == '\\' && i + 1 < text.size()) {
        piece += c;
        piece += text[++i];
        continue;
      }
      if (c == quote) quote = 0;
      piece += c;
      continue;
    }
    if (first_char && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      piece_line = line;
      first_char = false;
    }
    if (c == '#') {
      const std::size_t nl = text.find('\n', i);
      if (nl == std::string::npos) break;
      i = nl - 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) {
        finish();
        return true;
      }
      --depth;
    } else if (c == ',' && depth == 0) {
      finish();
      if (++arguments > 1000) {  // GRPOConfig has about 200 fields
        s.error(Origin{path, line, 1, "import"}, "GRPOConfig( has more than 1000 arguments");
        return true;
      }
      first_char = true;
      continue;
    }
    if (piece.size() < 4096) piece += c;
  }
  s.error(Origin{path, line, 1, "import"}, "GRPOConfig( is not closed");
  return true;
}

// Reads a YAML mapping's scalars (a TrlParser recipe, an accelerate config) into `out`, where
// no key is set yet when `under` (the command line wins over its --config).
bool read_yaml(const std::string& text, const std::string& path, Sink& s, const std::string& what,
               Args& out, bool under) {
#ifdef TRAINLEDGER_HAVE_YAML
  Flat flat;
  if (!read_flat_yaml(text, path, s, what, flat)) return false;
  for (const auto& [k, l] : flat) {
    if (l.null) continue;
    if (under && out.count(k)) continue;
    out[k] = Arg{l.value, true, origin_of(l), ""};
  }
  return true;
#else
  (void)text;
  (void)what;
  (void)out;
  (void)under;
  s.error(Origin{path, 1, 1, "import"},
          "this build reads no YAML: install libyaml-cpp-dev and build again");
  return false;
#endif
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// TrlParser passes a recipe's launcher settings (num_processes, accelerate_config, ...) on to
// accelerate: they move from the script's settings to the launcher's, where none is set yet.
void move_launcher_settings(Run& run) {
  for (auto k = run.config.begin(); k != run.config.end();)
    if (launcher_flag(k->first)) {
      run.launcher.emplace(k->first, k->second);
      k = run.config.erase(k);
    } else {
      ++k;
    }
}

// The shell form: the GRPO command, the launcher's flags before it, and a vllm-serve command.
bool read_shell(const std::string& text, Sink& s, const DefaultsReader& read_file, Run& run) {
  const Shell sh(text);
  if (sh.failed()) {
    s.error(Origin{s.path(), sh.failed_line(), 1, "import"}, sh.failure());
    return true;
  }
  const FlagLines lines(text);
  const std::vector<Token>& w = sh.tokens();
  // Commands: a logical line, or the words between &, &&, || and |.
  std::vector<std::pair<std::size_t, std::size_t>> commands;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::string& t = w[i].text;
    if (t == "&" || t == "&&" || t == "||" || t == "|") {
      if (i > begin) commands.emplace_back(begin, i);
      begin = i + 1;
    } else if (i > begin && w[i].line != w[i - 1].line) {
      commands.emplace_back(begin, i);
      begin = i;
    }
  }
  if (begin < w.size()) commands.emplace_back(begin, w.size());
  bool found = false;
  std::string script_file;
  for (const auto& [b, e] : commands) {
    for (std::size_t i = b; i < e; ++i) {
      const std::string& word = w[i].text;
      const std::string name = lower(base_name(word));
      const bool trl_word = i > b && base_name(w[i - 1].text) == "trl";
      if ((trl_word && word == "vllm-serve") || word == "trl.scripts.vllm_serve" ||
          name == "vllm_serve.py") {
        run.serve.clear();
        read_flags(w, i + 1, e, s.path(), lines, run.serve, nullptr, false);
        run.serve_found = true;
        run.serve_at = Origin{s.path(), w[i].line, 1, "import"};
        break;
      }
      const bool grpo_cli = trl_word && word == "grpo";
      const bool grpo_script = word == "trl.scripts.grpo" ||
                               (ends_with(name, ".py") && name.find("grpo") != std::string::npos);
      if (!grpo_cli && !grpo_script) continue;
      found = true;
      run.config.clear();
      run.launcher.clear();
      // accelerate launch / torchrun flags before the script; after it, the script's (and
      // for `trl grpo`, accelerate's by their names, as TRL's CLI separates them).
      read_flags(w, b, i, s.path(), lines, run.config, &run.launcher, false);
      read_flags(w, i + 1, e, s.path(), lines, run.config, grpo_cli ? &run.launcher : nullptr,
                 true);
      if (grpo_script && ends_with(name, ".py")) script_file = word;
      break;
    }
  }
  if (!found) return false;
  // The files the command names, in the plan's folder: the recipe under the command line,
  // the accelerate config under the launcher's flags, a Python script's GRPOConfig(...).
  auto read_named = [&](const std::string& rel, const Origin& at, std::string& resolved,
                        const char* what) -> std::optional<std::string> {
    if (rel.find('$') != std::string::npos) {  // left unexpanded: the script does not set it
      s.error(at, fmt::format("{}: {} names a shell variable the script does not set: give the "
                              "file's path",
                              what, in_quotes(rel)));
      return std::nullopt;
    }
    std::string why;
    const auto t = read_file(s.path(), rel, resolved, why);
    if (!t) s.error(at, fmt::format("{}: cannot read {}: {}", what, in_quotes(rel), why));
    return t;
  };
  if (const auto it = run.config.find("config"); it != run.config.end()) {
    const Arg cfg = it->second;
    run.config.erase(it);
    std::string resolved;
    if (const auto t = read_named(cfg.value, cfg.at, resolved, "--config")) {
      read_yaml(*t, resolved, s, "GRPOConfig's fields", run.config, true);
      move_launcher_settings(run);
    }
  }
  std::optional<Arg> acc;
  for (const char* k : {"config_file", "accelerate_config"})
    if (const auto it = run.launcher.find(k); it != run.launcher.end()) acc = it->second;
  if (acc) {
    const auto shipped = shipped_accelerate_config(acc->value, acc->at);
    Args file;
    std::string resolved;
    if (shipped && !ends_with(acc->value, ".yaml") && !ends_with(acc->value, ".yml")) {
      file = *shipped;
    } else if (const auto t = read_named(acc->value, acc->at, resolved, "accelerate config")) {
      read_yaml(*t, resolved, s, "accelerate's settings", file, false);
    }
    for (auto& [k, a] : file) run.launcher.emplace(k, a);
  }
  deepspeed_config_file(run, read_named);
  if (!script_file.empty()) {
    std::string resolved, why;
    if (const auto t = read_file(s.path(), script_file, resolved, why)) {
      Args py;
      if (read_python(*t, resolved, py, s))
        for (auto& [k, a] : py) run.config.emplace(k, a);
    } else {
      s.ignore(script_file, "not read: " + why);
    }
  }
  return true;
}

}  // namespace trainledger::config::importing::trl
