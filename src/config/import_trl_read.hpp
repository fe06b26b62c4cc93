// TRL GRPO runs, read (docs/rl.md#importing): a launch script's commands, the files they name
// (a TrlParser recipe, an accelerate config, a DeepSpeed JSON, a Python script's GRPOConfig(...))
// and their settings as given, with where each is written. import_trl.cpp turns them into plan
// keys with TRL's units and defaults.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "import_sink.hpp"

namespace trainledger::config::importing::trl {

// One setting as given: its text (empty for a bare --flag), where, and why its value is not
// known (a shell variable never set).
struct Arg {
  std::string value;
  bool has_value = true;
  Origin at;
  std::string problem;
};
using Args = std::map<std::string, Arg>;

// A run's settings: the script's (GRPOConfig's fields and the script's own arguments), the
// launcher's (accelerate, torchrun) and a `trl vllm-serve` command's.
struct Run {
  Args config;    // GRPOConfig and the script's own arguments
  Args launcher;  // accelerate / torchrun
  Args serve;     // trl vllm-serve
  bool serve_found = false;
  Origin serve_at;
};

// True for true/True/1/yes and a bare --flag, false for false/False/0/no, else nothing.
std::optional<bool> truth(const Arg& a);
// The keyword arguments of the last GRPOConfig( call with literal values (false: no call).
bool read_python(const std::string& text, const std::string& path, Args& out, Sink& s);
// A YAML mapping's scalars into `out`; with `under`, keys already set are kept.
bool read_yaml(const std::string& text, const std::string& path, Sink& s, const std::string& what,
               Args& out, bool under);
// A recipe's launcher settings moved to the launcher's, where none is set yet.
void move_launcher_settings(Run& run);
// The shell form: the GRPO command, its launcher, a vllm-serve command and the files they name
// (false: no GRPO command in the text).
bool read_shell(const std::string& text, Sink& s, const DefaultsReader& read_file, Run& run);
bool ends_with(const std::string& s, std::string_view tail);
std::string lower(std::string s);

}  // namespace trainledger::config::importing::trl
