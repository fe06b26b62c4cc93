// libFuzzer target for what a pull request's files reach past the readers: the first byte
// chooses what the rest is, and every path ends in every report and emitted config.
//   'M', 'T', 'D': a Megatron-LM launch script, a torchtitan TOML or a DeepSpeed JSON,
//                  imported by a plan in a scratch folder, through to the built plan;
//   'H':           a config.json read as the plan's hf_config (the architecture mapping);
//   'P':           a calibration profile applied to the default plan;
//   'S':           a torch.cuda.memory_stats() dump, compared with the default plan
//                  (calibrate compare, table and JSON);
//   'R':           a calibrate replica result, compared with the default plan (calibrate
//                  compare --replica, table and JSON);
//   otherwise:     the bytes as the plan's file name and its model.name (hostile names).
// Each input loads and renders, or fails with located, non-empty ConfigErrors. Every report
// is valid UTF-8 without control characters (tab and newline aside), the JSON parses, the
// emitted torchtitan config is TOML, and no foreign newline leaves a comment of the emitted
// Megatron-LM script.
#include <unistd.h>

#include <toml++/toml.h>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "app.hpp"
#include "trainledger/config.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/report.hpp"
#include "trainledger/text.hpp"

namespace fs = std::filesystem;
using namespace trainledger;

namespace {

[[noreturn]] void fail(const std::string& why, const std::string& out) {
  std::cerr << why << "\n" << out.substr(0, 4000) << "\n";
  std::abort();
}

// Valid UTF-8, no control character but tab and newline, no ESC.
void require_clean(const std::string& out, const char* what) {
  if (text::valid_utf8(out) != out) fail(std::string(what) + ": not valid UTF-8", out);
  for (const char ch : out) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
      fail(std::string(what) + ": a control character", out);
  }
}

const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string pattern = (fs::temp_directory_path() / "trainledger-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) std::abort();
    return fs::path(pattern);
  }();
  return dir;
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

const char* const k_rest = R"(
[training]
seq_len = 2048
micro_batch = 1
global_batch = 8
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 1
)";

void render_all(const config::LoadedPlan& loaded) {
  const PlanResult plan = compute_plan(loaded.input);
  const auto problems = check_invariants(plan);
  for (const std::string& p : problems)
    if (p.find("not finite") == std::string::npos && p.find("not a finite") == std::string::npos)
      fail("broken invariant: " + p, "");
  if (!problems.empty()) return;  // the CLI refuses non-finite plans before rendering
  const PlanSource source = loaded.plan_source();
  report::Options o;
  for (report::Format f : {report::Format::table, report::Format::markdown, report::Format::json,
                           report::Format::html}) {
    const std::string out = report::render(f, plan, source, o);
    require_clean(out, "report");
    if (f == report::Format::json && !nlohmann::json::accept(out)) fail("JSON", out);
  }
  const std::string titan = report::emit_config(loaded.input, "torchtitan", source.name);
  require_clean(titan, "torchtitan");
  try {
    static_cast<void>(toml::parse(titan));
  } catch (const toml::parse_error& e) {
    fail(std::string("emitted torchtitan TOML: ") + e.what(), titan);
  }
  const std::string megatron = report::emit_config(loaded.input, "megatron", source.name);
  require_clean(megatron, "megatron");
  std::size_t start = 0;
  while (start < megatron.size()) {
    const std::size_t end = megatron.find('\n', start);
    const std::string line = megatron.substr(start, end - start);
    // Comments, the launch line, its arguments, and the allocator's fixed environment line.
    if (!line.empty() && line[0] != '#' && line.rfind("torchrun ", 0) != 0 &&
        line.rfind("  --", 0) != 0 &&
        line != "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
      fail("emitted Megatron-LM line outside a comment or an argument: " + line, megatron);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  const std::string ds = report::emit_config(loaded.input, "deepspeed", source.name);
  if (!nlohmann::json::accept(ds)) fail("emitted DeepSpeed JSON", ds);
}

void load_and_render(const std::string& plan_text, const std::string& name, const std::string& base,
                     const config::LoadOptions& options = {}) {
  try {
    render_all(config::load_plan_text(plan_text, name, base, options));
  } catch (const config::ConfigError& e) {
    if (e.diagnostics().empty()) std::abort();
    for (const config::Diagnostic& d : e.diagnostics()) {
      if (d.message.empty()) std::abort();
      require_clean(d.to_string(), "diagnostic");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const fs::path& dir = scratch();
  const std::string base = dir.string();
  switch (data[0]) {
    case 'M':
    case 'T':
    case 'D': {
      const char* kind = data[0] == 'M' ? "megatron" : data[0] == 'T' ? "torchtitan" : "deepspeed";
      write(dir / "imported.cfg", bytes);
      load_and_render(std::string("[import]\n") + kind +
                          " = \"imported.cfg\"\n[model]\npreset = \"llama-3.1-8b\"\n" + k_rest,
                      (dir / "plan.toml").string(), base);
      break;
    }
    case 'H':
      write(dir / "config.json", bytes);
      load_and_render(std::string("[model]\nhf_config = \"config.json\"\n") + k_rest,
                      (dir / "plan.toml").string(), base);
      break;
    case 'P': {
      write(dir / "profile.toml", bytes);
      config::LoadOptions o;
      o.calibration = {(dir / "profile.toml").string()};
      load_and_render(std::string("[model]\npreset = \"llama-3.1-8b\"\n") + k_rest,
                      (dir / "plan.toml").string(), base, o);
      break;
    }
    case 'S':
    case 'R': {
      const bool replica = data[0] == 'R';
      write(dir / "stats.json", bytes);
      for (const char* format : {"table", "json"}) {
        std::ostringstream out, err;
        const int code = cli::run({"calibrate", "compare", replica ? "--replica" : "--memory-stats",
                                   (dir / "stats.json").string(), "--format", format},
                                  out, err);
        if (code != 0 && code != 2)
          fail("calibrate compare: exit " + std::to_string(code), err.str());
        require_clean(out.str(), "calibrate compare");
        require_clean(err.str(), "calibrate compare's errors");
        if (code == 2 && !out.str().empty()) fail("output with exit 2", out.str());
        if (code == 0 && std::string(format) == "json" && !nlohmann::json::accept(out.str()))
          fail("calibrate compare JSON", out.str());
      }
      break;
    }
    default:
      load_and_render(std::string("[model]\npreset = \"llama-3.1-8b\"\nname = \"") +
                          text::toml_string(bytes) + "\"\n" + k_rest,
                      bytes, base);
  }
  return 0;
}
