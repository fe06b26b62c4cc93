// `trainledger models`, `gpus` and `keys`: what the presets and plan files offer; `completion`
// and `man`: the shell completions and the manual page, generated from the commands' own options
// (so they cannot drift from the help).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "app.hpp"
#include "trainledger/model.hpp"

namespace trainledger::cli {

CLI::App* add_models_command(CLI::App& app) {
  return app.add_subcommand("models", "List the model presets ([model] preset = \"NAME\")");
}

CLI::App* add_gpus_command(CLI::App& app) {
  return app.add_subcommand("gpus", "List the GPU presets ([cluster] gpu = \"NAME\")");
}

CLI::App* add_keys_command(CLI::App& app) {
  return app.add_subcommand("keys", "List every plan-file key with its type and default");
}

int run_models(std::ostream& out) {
  out << fmt::format("{:<16} {:>18}  {:>6} {:>6} {:>5} {:>4} {:>6} {:>7}  {}\n", "preset",
                     "parameters", "layers", "hidden", "heads", "kv", "ffn", "vocab", "model");
  for (const config::PresetInfo& p : config::model_presets()) {
    const ModelSpec m = config::load_model_preset(p.name);
    out << fmt::format("{:<16} {:>18}  {:>6} {:>6} {:>5} {:>4} {:>6} {:>7}  {}\n", p.name,
                       format_number(total_params(m)), m.layers, m.hidden, m.heads, m.kv_heads,
                       is_moe(m) ? m.expert_ffn : m.ffn, m.vocab, m.name);
  }
  return k_exit_ok;
}

int run_gpus(std::ostream& out) {
  // Dense peaks per precision in TFLOP/s ("-": the GPU has no such mode, or no source gives it).
  const auto peak = [](double flops) {
    return flops > 0 ? fmt::format("{:.1f}", flops / 1e12) : std::string("-");
  };
  out << fmt::format("{:<16} {:>10} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}  {}\n",
                     "preset", "memory", "(GiB)", "tf32", "fp16", "bf16", "fp8", "fp6", "fp4",
                     "HBM", "device");
  for (const config::PresetInfo& p : config::gpu_presets()) {
    const GpuSpec g = config::load_gpu_preset(p.name);
    const PeakFlops& f = g.peak_flops;
    out << fmt::format("{:<16} {:>10} {:>8.2f} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6.2f}  {}\n",
                       p.name, fmt::format("{} MiB", g.memory_bytes / (1024 * 1024)),
                       static_cast<double>(g.memory_bytes) / k_gib, peak(f.tf32), peak(f.fp16),
                       peak(f.bf16), peak(f.fp8), peak(f.fp6), peak(f.fp4),
                       g.memory_bandwidth / 1e12, g.name);
  }
  out << "dense peaks in TFLOP/s (no 2:4 sparsity); HBM in TB/s; fp4 times NVFP4 GEMMs "
         "(training.precision = \"fp4\"), fp6 is listed, not planned (docs/config.md#cluster)\n";
  return k_exit_ok;
}

int run_keys(std::ostream& out) {
  out << "# Plan-file keys\n" << config::keys_markdown();
  return k_exit_ok;
}

namespace {

// A command of the program: its words ("calibrate import"), description, options and the
// commands under it.
struct Command {
  std::string path;
  std::string description;
  std::vector<const CLI::Option*> options;
  std::vector<std::string> children;
};

void collect(const CLI::App& app, const std::string& path, std::vector<Command>& out) {
  Command c{path, app.get_description(), {}, {}};
  for (const CLI::Option* o : app.get_options())
    if (!o->get_lnames().empty() || !o->get_snames().empty()) c.options.push_back(o);
  const std::size_t at = out.size();
  out.push_back(c);
  for (const CLI::App* sub : app.get_subcommands({})) {
    out[at].children.push_back(sub->get_name());
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

std::vector<Command> commands(const CLI::App& app) {
  std::vector<Command> out;
  collect(app, "", out);
  return out;
}

std::vector<std::string> flags_of(const CLI::Option& o) {
  std::vector<std::string> out;
  for (const std::string& s : o.get_snames()) out.push_back("-" + s);
  for (const std::string& l : o.get_lnames()) out.push_back("--" + l);
  return out;
}

// Text inside single quotes of a shell: a quote closes, escapes and reopens.
std::string single_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A description's first clause for a completion menu: up to ": ", ". " or " (", at most 80
// characters, cut at a character boundary.
std::string first_sentence(const std::string& s) {
  std::string out = s.substr(0, std::min({s.find(": "), s.find(". "), s.find(" (")}));
  if (out.size() <= 80) return out;
  std::size_t cut = 77;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "...";
}

std::string bash_script(const std::vector<Command>& all) {
  std::string cases;
  for (const Command& c : all) {
    std::vector<std::string> words = c.children;
    std::vector<std::string> opts;
    for (const CLI::Option* o : c.options)
      for (const std::string& f : flags_of(*o)) opts.push_back(f);
    cases += fmt::format("    {}) subs={}; opts={} ;;\n", single_quoted(c.path),
                         single_quoted(fmt::format("{}", fmt::join(words, " "))),
                         single_quoted(fmt::format("{}", fmt::join(opts, " "))));
  }
  return fmt::format(R"(# bash completion for trainledger (trainledger completion bash)
# Load it with: source <(trainledger completion bash)
_trainledger() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} path="" word i subs opts
  # The command path so far: the words that name (sub)commands.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${{COMP_WORDS[i]}}
    [[ $word == -* ]] && continue
    _trainledger_level "$path"
    if [[ " $subs " == *" $word "* ]]; then path=${{path:+$path }}$word; fi
  done
  _trainledger_level "$path"
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -n $subs ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  else
    COMPREPLY=()  # files (complete -o default)
  fi
}}
_trainledger_level() {{
  case "$1" in
{}    *) subs=""; opts="" ;;
  esac
}}
complete -o default -F _trainledger trainledger
)",
                     cases);
}

std::string zsh_script(const std::vector<Command>& all) {
  std::string cases;
  for (const Command& c : all) {
    std::vector<std::string> opts;
    for (const CLI::Option* o : c.options)
      for (const std::string& f : flags_of(*o)) opts.push_back(f);
    cases += fmt::format("    {}) subs=({}); opts=({}) ;;\n", single_quoted(c.path),
                         fmt::format("{}", fmt::join(c.children, " ")),
                         fmt::format("{}", fmt::join(opts, " ")));
  }
  return fmt::format(R"(#compdef trainledger
# zsh completion for trainledger (trainledger completion zsh)
# Put it in a directory of $fpath as _trainledger, or: source <(trainledger completion zsh)
_trainledger_level() {{
  case "$1" in
{}    *) subs=(); opts=() ;;
  esac
}}
_trainledger() {{
  local path_words="" word
  local -a subs opts
  for word in "${{(@)words[2,CURRENT-1]}}"; do
    [[ $word == -* ]] && continue
    _trainledger_level "$path_words"
    if (( ${{subs[(Ie)$word]}} )); then path_words=${{path_words:+$path_words }}$word; fi
  done
  _trainledger_level "$path_words"
  if [[ $PREFIX == -* ]]; then
    compadd -- $opts
  elif (( ${{#subs}} )); then
    compadd -- $subs
  else
    _files
  fi
}}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _trainledger "$@"
else
  compdef _trainledger trainledger
fi
)",
                     cases);
}

std::string fish_script(const std::vector<Command>& all) {
  std::string out =
      "# fish completion for trainledger (trainledger completion fish)\n"
      "# Load it with: trainledger completion fish | source\n"
      "# (files complete wherever no command or option does: plans, logs, profiles)\n";
  for (const Command& c : all) {
    // The condition of this level: every word of its path seen, none of its children yet.
    std::string cond;
    if (c.path.empty()) {
      cond = "__fish_use_subcommand";
    } else {
      std::size_t start = 0;
      while (start <= c.path.size()) {
        const std::size_t sp = std::min(c.path.find(' ', start), c.path.size());
        cond += (cond.empty() ? "" : "; and ") +
                ("__fish_seen_subcommand_from " + c.path.substr(start, sp - start));
        start = sp + 1;
      }
      if (!c.children.empty())
        cond += fmt::format("; and not __fish_seen_subcommand_from {}", fmt::join(c.children, " "));
    }
    for (const std::string& child : c.children) {
      std::string description;
      for (const Command& d : all)
        if (d.path == (c.path.empty() ? child : c.path + " " + child))
          description = first_sentence(d.description);
      out += fmt::format("complete -c trainledger -n {} -a {} -d {}\n", single_quoted(cond), child,
                         single_quoted(description));
    }
    const std::string level = c.path.empty() ? cond : cond.substr(0, cond.find("; and not "));
    for (const CLI::Option* o : c.options) {
      std::string spec;
      for (const std::string& s : o->get_snames()) spec += " -s " + s;
      for (const std::string& l : o->get_lnames()) spec += " -l " + l;
      // An option that takes a value requires one (a file or a word).
      const bool value = o->get_type_size() != 0 && o->get_expected_max() != 0;
      out += fmt::format("complete -c trainledger -n {}{}{} -d {}\n", single_quoted(level), spec,
                         value ? " -r" : "", single_quoted(first_sentence(o->get_description())));
    }
  }
  return out;
}

// roff text: a backslash doubled, a leading dot or quote escaped, hyphens as \-.
std::string roff(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  // A line that starts with a dot or a quote would be a request: \& before it.
  std::string lines;
  std::size_t start = 0;
  while (start <= out.size()) {
    const std::size_t nl = std::min(out.find('\n', start), out.size());
    const std::string line = out.substr(start, nl - start);
    lines += (start ? "\n" : "") +
             (!line.empty() && (line.front() == '.' || line.front() == '\'') ? "\\&" + line : line);
    start = nl + 1;
  }
  return lines;
}

// The NAME line: the description's first line, without the program's name before it.
std::string name_line(std::string d) {
  d = d.substr(0, d.find('\n'));
  if (d.rfind("trainledger: ", 0) == 0) d = d.substr(13);
  return d;
}

}  // namespace

CLI::App* add_completion_command(CLI::App& app, std::string& shell) {
  CLI::App* sub = app.add_subcommand(
      "completion",
      "Print the shell completion script: bash (source <(trainledger completion bash)), zsh or "
      "fish (trainledger completion fish | source)");
  sub->add_option("shell", shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  return sub;
}

CLI::App* add_man_command(CLI::App& app) {
  return app.add_subcommand(
      "man", "Print the manual page (roff, from the commands' help): trainledger man | man -l -");
}

int run_completion(const CLI::App& app, const std::string& shell, std::ostream& out) {
  const std::vector<Command> all = commands(app);
  out << (shell == "bash" ? bash_script(all) : shell == "zsh" ? zsh_script(all) : fish_script(all));
  return out ? k_exit_ok : k_exit_runtime;
}

int run_man(const CLI::App& app, const std::string& version, const std::string& footer,
            std::ostream& out) {
  const std::vector<Command> all = commands(app);
  out << fmt::format(".TH TRAINLEDGER 1 \"\" \"trainledger {}\" \"User Commands\"\n", version)
      << ".SH NAME\ntrainledger \\- " << roff(name_line(app.get_description())) << "\n"
      << ".SH SYNOPSIS\n.B trainledger\n.I COMMAND\n[\\fIOPTIONS\\fR] [\\fIPLAN\\fR]\n"
      << ".SH DESCRIPTION\n"
      << roff(app.get_description()) << "\n"
      << ".SH COMMANDS\n";
  for (const Command& c : all) {
    if (c.path.empty()) continue;
    out << ".SS trainledger " << roff(c.path) << "\n" << roff(c.description) << "\n";
    for (const CLI::Option* o : c.options) {
      std::string names = fmt::format("{}", fmt::join(flags_of(*o), ", "));
      if (o->get_type_size() != 0 && o->get_expected_max() != 0)
        names += " " + (o->get_type_name().empty() ? std::string("VALUE") : o->get_type_name());
      out << ".TP\n.B " << roff(names) << "\n" << roff(o->get_description()) << "\n";
    }
  }
  out << ".SH EXIT STATUS\n.nf\n"
      << roff(footer) << "\n.fi\n"
      << ".SH SEE ALSO\nThe documentation installed with the program: README.md, docs/cli.md, "
         "docs/config.md, docs/formulas.md, docs/json\\-schema.md, docs/calibration.md.\n";
  return out ? k_exit_ok : k_exit_runtime;
}

}  // namespace trainledger::cli
