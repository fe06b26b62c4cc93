// libFuzzer target: arbitrary bytes as a plan file. Any input must either load and produce a
// sound plan (invariants hold, every renderer succeeds) or fail with ConfigError.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include "trainledger/config.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainledger;
  const std::string text(reinterpret_cast<const char*>(data), size);
  config::LoadedPlan loaded;
  try {
    loaded = config::load_plan_text(text, "fuzz.toml", "", {});
  } catch (const config::ConfigError& e) {
    if (e.diagnostics().empty()) std::abort();  // every error must say something
    for (const config::Diagnostic& d : e.diagnostics())
      if (d.message.empty()) std::abort();
    return 0;
  }
  const PlanResult plan = compute_plan(loaded.input);
  const auto problems = check_invariants(plan);
  // Non-finite numbers from inputs at the edge of their ranges are refused by the CLI
  // (cli::require_sound); any other broken invariant is a bug.
  bool only_non_finite = true;
  for (const auto& p : problems)
    only_non_finite = only_non_finite && (p.find("not finite") != std::string::npos ||
                                          p.find("not a finite") != std::string::npos);
  if (!problems.empty() && only_non_finite) return 0;
  if (!problems.empty()) {
    for (const auto& p : problems) std::cerr << p << "\n";
    std::abort();
  }
  for (report::Format f : {report::Format::table, report::Format::json, report::Format::markdown}) {
    const std::string out = report::render(f, plan, loaded.plan_source(), {});
    // A printed NaN or infinity would be a number without a basis.
    for (const char* bad : {" nan", "-nan", " inf", "NaN"}) {
      if (out.find(bad) != std::string::npos) {
        std::cerr << "report prints \"" << bad << "\":\n" << out << "\n";
        std::abort();
      }
    }
    if (out.empty()) std::abort();
  }
  return 0;
}
