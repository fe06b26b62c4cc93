#include "helpers.hpp"

#include <stdexcept>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "app.hpp"
#include "trainledger/invariants.hpp"

namespace trainledger::test {

std::string source_path(const std::string& relative) {
  return std::string(TRAINLEDGER_SOURCE_DIR) + "/" + relative;
}

std::optional<std::string> browser_dom(const std::string& name, const std::string& page,
                                       int width) {
  if (std::system("command -v chromium > /dev/null 2>&1") != 0) return std::nullopt;
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-browser";
  std::filesystem::create_directories(dir);
  const auto file = dir / (name + ".html"), out = dir / (name + ".dom");
  std::ofstream(file) << page;
  const std::string cmd =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
      "--disable-extensions --hide-scrollbars --window-size=" +
      std::to_string(width) + ",900 --dump-dom 'file://" + file.string() + "' > '" + out.string() +
      "' 2> /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return read_file(out.string());
}

std::string text_probe() {
  return "<script>const bad = [], covered = [];"
         "for (const svg of document.querySelectorAll('svg')) {"
         "  const r = svg.getBoundingClientRect();"
         "  for (const t of svg.querySelectorAll('text')) {"
         "    const b = t.getBoundingClientRect();"
         "    if (b.width === 0) continue;"
         "    if (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 ||"
         "        b.bottom > r.bottom + 1) bad.push(svg.id + ': ' + t.textContent);"
         "  }"
         "  const named = [...svg.querySelectorAll('text.tag, text.guide')];"
         "  for (let i = 0; i < named.length; ++i)"
         "    for (let j = i + 1; j < named.length; ++j) {"
         "      const a = named[i].getBoundingClientRect(), b = named[j].getBoundingClientRect();"
         "      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 &&"
         "          b.top < a.bottom - 1)"
         "        covered.push(named[i].textContent + ' | ' + named[j].textContent);"
         "    }"
         "}"
         "document.body.setAttribute('data-overflow', bad.length + ' ' + bad.join(' / '));"
         "document.body.setAttribute('data-overlap', covered.length + ' ' + covered.join(' / '));"
         "</script>";
}

std::optional<std::string> attribute(const std::string& dom, const std::string& name) {
  const std::string key = name + "=\"";
  const std::size_t at = dom.find(key);
  if (at == std::string::npos) return std::nullopt;
  const std::size_t end = dom.find('"', at + key.size());
  if (end == std::string::npos) return std::nullopt;
  return dom.substr(at + key.size(), end - at - key.size());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

config::LoadedPlan load_text(const std::string& toml, const std::vector<std::string>& sets) {
  config::LoadOptions o;
  o.sets = sets;
  return config::load_plan_text(toml, "test.toml", source_path("tests/data"), o);
}

PlanResult plan_checked(const PlanInput& input) {
  PlanResult r = compute_plan(input);
  const std::vector<std::string> problems = check_invariants(r);
  INFO("invariant violations: " << problems.size());
  for (const std::string& p : problems) UNSCOPED_INFO(p);
  REQUIRE(problems.empty());
  return r;
}

PlanResult plan_text(const std::string& toml, const std::vector<std::string>& sets) {
  return plan_checked(load_text(toml, sets).input);
}

std::vector<std::string> load_errors(const std::string& toml,
                                     const std::vector<std::string>& sets) {
  try {
    load_text(toml, sets);
  } catch (const config::ConfigError& e) {
    std::vector<std::string> out;
    for (const config::Diagnostic& d : e.diagnostics()) out.push_back(d.to_string());
    return out;
  }
  return {};
}

CliResult run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CliResult r;
  r.code = cli::run(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

ItemId item_named(const std::string& name) {
  const std::optional<ItemId> id = item_by_name(name);
  if (!id) throw std::invalid_argument("no item named " + name);
  return *id;
}

double item_value(const PlanResult& plan, const std::string& id, int stage) {
  return value_of(plan.stages.at(static_cast<std::size_t>(stage)).items, item_named(id));
}

double phase_value(const PlanResult& plan, const std::string& id, int stage, Phase phase) {
  return value_of(phase_ledger(plan.input, stage, phase), item_named(id));
}

double state_bytes(const PlanResult& plan, int stage) {
  double sum = 0;
  for (const LineItem& i : plan.stages.at(static_cast<std::size_t>(stage)).items)
    if (info(i.item).role == Role::state) sum += i.value;
  return sum;
}

double predicted_memory(const PlanResult& plan, const std::string& kind, const std::string& stage) {
  const std::size_t i = stage == "first"  ? 0
                        : stage == "last" ? plan.stages.size() - 1
                                          : static_cast<std::size_t>(plan.worst_stage);
  const StageMemory& st = plan.stages[i];
  double v = st.peak_bytes;
  if (kind == "device") return v;
  v -=
      value_of(st.items, ItemId::overhead_cuda_context) + value_of(st.items, ItemId::overhead_nccl);
  if (kind == "reserved") return v;
  return v - value_of(st.items, ItemId::overhead_fragmentation);
}

double unit_bytes(const std::string& unit) {
  if (unit == "GiB") return k_gib;
  if (unit == "MiB") return 1024.0 * 1024;
  if (unit == "MB") return 1e6;
  return k_gb;
}

std::vector<std::map<std::string, std::string>> svg_marks(const std::string& svg,
                                                          const std::string& cls) {
  std::vector<std::map<std::string, std::string>> out;
  const std::regex mark("<[a-z]+ class=\"" + cls + "\"([^>]*)>");
  const std::regex attr("([a-z-]+)=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), mark); it != std::sregex_iterator();
       ++it) {
    std::map<std::string, std::string> m;
    const std::string body = (*it)[1];
    for (auto a = std::sregex_iterator(body.begin(), body.end(), attr); a != std::sregex_iterator();
         ++a)
      m[(*a)[1]] = (*a)[2];
    out.push_back(m);
  }
  return out;
}

std::string scratch_folder(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& files) {
  const auto dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (const auto& [f, text] : files) {
    std::filesystem::create_directories((dir / f).parent_path());
    std::ofstream(dir / f, std::ios::binary) << text;
  }
  return (dir / files.front().first).string();
}

std::string origin_of(const config::LoadedPlan& p, const std::string& key) {
  for (const auto& r : p.resolved)
    if (r.key == key) return r.origin.to_string();
  return "";
}

bool warned(const config::LoadedPlan& p, const std::string& what) {
  for (const std::string& w : p.warnings)
    if (w.find(what) != std::string::npos) return true;
  return false;
}

std::string load_file_errors(const std::string& plan) {
  try {
    config::load_plan_file(plan, {});
  } catch (const config::ConfigError& e) {
    std::string all;
    for (const auto& d : e.diagnostics()) all += d.origin.to_string() + ": " + d.message + "\n";
    return all;
  }
  return "";
}

void same_rl(const PlanResult& a, const PlanResult& b) {
  REQUIRE(a.rl.present);
  REQUIRE(b.rl.present);
  REQUIRE(a.rl.phases.size() == b.rl.phases.size());
  for (std::size_t i = 0; i < a.rl.phases.size(); ++i) {
    INFO(a.rl.phases[i].name);
    CHECK(a.rl.phases[i].peak_bytes == b.rl.phases[i].peak_bytes);
  }
  REQUIRE(a.rl.time.size() == b.rl.time.size());
  for (std::size_t i = 0; i < a.rl.time.size(); ++i) {
    INFO(a.rl.time[i].id);
    CHECK(a.rl.time[i].value == b.rl.time[i].value);
  }
  CHECK(a.verdict.peak_bytes == b.verdict.peak_bytes);
}

}  // namespace trainledger::test
