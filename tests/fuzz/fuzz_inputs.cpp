// libFuzzer target for the other untrusted inputs: the first byte chooses what the rest is.
//   even: the text of a config.json, read as a plan's hf_config (the JSON reader, depth and
//         number bounds, the architecture mapping);
//   odd:  one --set value (KEY=VALUE) applied to the embedded default plan;
//   'N':  an nccl-tests log (calibrate import: the parser, the fit, the profile);
//   'D', 'M', 'T', 'V', 'Y', 'O': a DeepSpeed JSON, a Megatron-LM launch script, a torchtitan
//         TOML, a verl launch script, a NeMo-RL YAML config, an OpenRLHF launch script imported.
// Either loads and gives a plan whose only broken invariants are non-finite numbers (the CLI
// refuses those as out of range), or fails with located, non-empty ConfigErrors.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "resolve.hpp"
#include "trainledger/calibrate.hpp"
#include "trainledger/config.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/plan.hpp"
#include "value.hpp"

namespace {

bool only_non_finite(const std::vector<std::string>& problems) {
  for (const std::string& p : problems)
    if (p.find("not finite") == std::string::npos && p.find("not a finite") == std::string::npos)
      return false;
  return true;
}

void require_sound(const trainledger::config::LoadedPlan& loaded) {
  const trainledger::PlanResult plan = trainledger::compute_plan(loaded.input);
  const auto problems = trainledger::check_invariants(plan);
  if (problems.empty() || only_non_finite(problems)) return;
  for (const auto& p : problems) std::cerr << p << "\n";
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainledger;
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (std::string_view("DMTVYOLPQ").find(static_cast<char>(data[0])) != std::string_view::npos) {
      // An import maps onto plan keys, each located in the file, or fails with located errors.
      // TRL reads a launch script (L), a Python script (P) or a recipe (Q) by its file name.
      const std::string kind = data[0] == 'D'   ? "deepspeed"
                               : data[0] == 'M' ? "megatron"
                               : data[0] == 'V' ? "verl"
                               : data[0] == 'Y' ? "nemo_rl"
                               : data[0] == 'O' ? "openrlhf"
                               : data[0] == 'T' ? "torchtitan"
                                                : "trl";
      const std::string file = data[0] == 'P'   ? "fuzz.py"
                               : data[0] == 'Q' ? "fuzz.yaml"
                               : data[0] == 'L' ? "fuzz.sh"
                                                : "fuzz.cfg";
      std::vector<config::Diagnostic> errors;
      std::vector<std::string> warnings;
      const config::SettingMap s =
          config::import_text(kind, text, file, config::Origin{}, errors, warnings);
      for (const auto& d : errors)
        if (d.message.empty()) std::abort();
      for (const auto& [key, setting] : s)
        if (setting.origin.file.empty()) std::abort();
    } else if (data[0] == 'N') {
      // A log fits into finite numbers, or is refused with a located error.
      const calibrate::Sweep s = calibrate::parse_nccl_tests(text, "fuzz.log", {});
      const calibrate::Profile p = calibrate::build_profile({s}, "fuzz", "fuzz", "now");
      for (const calibrate::Fit& f : p.fits)
        if (!std::isfinite(f.busbw) || !std::isfinite(f.alpha_s) || f.busbw < 0 || f.alpha_s < 0)
          std::abort();
      // No number of the profile prints as nan (a host name the log gives may hold "nan": the
      // quoted strings are not numbers).
      std::string numbers;
      bool quoted = false;
      for (const char c : calibrate::render_profile(p)) {
        if (c == '"') quoted = !quoted;
        if (!quoted) numbers += c;
      }
      if (numbers.find("nan") != std::string::npos) std::abort();
    } else if (data[0] % 2 == 0) {
      // The JSON reader alone, then the whole mapping through a plan in a scratch folder is
      // not needed: parse_json is what every config.json goes through first.
      const config::Value v = config::parse_json(text, "fuzz.json");
      static_cast<void>(v);
    } else {
      config::LoadOptions o;
      o.sets = {text};
      require_sound(config::load_default_plan(o));
    }
  } catch (const config::ConfigError& e) {
    if (e.diagnostics().empty()) std::abort();
    for (const config::Diagnostic& d : e.diagnostics())
      if (d.message.empty()) std::abort();
  }
  return 0;
}
