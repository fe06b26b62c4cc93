// Golden cases: golden/<case>.toml → the full JSON report in golden/<case>.json (compared with
// a tolerance, a JSON diff printed on mismatch, rewritten only with TRAINLEDGER_UPDATE_GOLDEN=1),
// plus golden/published.json: hand-written published numbers that are never rewritten.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "helpers.hpp"
#include "trainledger/report.hpp"

using namespace trainledger;
using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

bool update_requested() {
  const char* v = std::getenv("TRAINLEDGER_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

void diff(const json& want, const json& got, const std::string& path,
          std::vector<std::string>& out) {
  if (out.size() >= 25) return;
  if (want.is_number_integer() && got.is_number_integer()) {  // bytes and counts: exact
    if (want != got) out.push_back(path + ": expected " + want.dump() + ", got " + got.dump());
    return;
  }
  if (want.is_number() && got.is_number()) {  // floats: relative tolerance 1e-9
    const double a = want.get<double>(), b = got.get<double>();
    if (std::fabs(a - b) > 1e-9 * std::max(1.0, std::fabs(a)))
      out.push_back(path + ": expected " + want.dump() + ", got " + got.dump());
    return;
  }
  if (want.type() != got.type()) {
    out.push_back(path + ": expected " + want.dump() + ", got " + got.dump());
    return;
  }
  if (want.is_object()) {
    for (const auto& [k, v] : want.items()) {
      if (!got.contains(k))
        out.push_back(path + "/" + k + ": missing");
      else
        diff(v, got[k], path + "/" + k, out);
    }
    for (const auto& [k, v] : got.items())
      if (!want.contains(k)) out.push_back(path + "/" + k + ": unexpected " + v.dump());
  } else if (want.is_array()) {
    if (want.size() != got.size())
      out.push_back(path + ": expected " + std::to_string(want.size()) + " entries, got " +
                    std::to_string(got.size()));
    for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i)
      diff(want[i], got[i], path + "/" + std::to_string(i), out);
  } else if (want != got) {
    out.push_back(path + ": expected " + want.dump() + ", got " + got.dump());
  }
}

json report_for(const std::string& name) {
  const std::string text = test::read_file(test::source_path("golden/" + name + ".toml"));
  const config::LoadedPlan loaded =
      config::load_plan_text(text, "golden/" + name + ".toml", test::source_path("golden"), {});
  const PlanResult plan = test::plan_checked(loaded.input);
  json j = json::parse(report::render_json(plan, loaded.plan_source()));
  j.erase("version");  // a release bump is not a change of numbers
  return j;
}

std::vector<std::string> golden_cases() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(test::source_path("golden")))
    if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

double published_value(const json& report, const std::string& path) {
  if (path.rfind("item:", 0) == 0) {
    const std::size_t colon = path.find(':', 5);
    const int stage = std::stoi(path.substr(5, colon - 5));
    const std::string id = path.substr(colon + 1);
    for (const auto& item : report["memory"]["stages"][stage]["items"])
      if (item["id"] == id) return item["value"].get<double>();
    FAIL("no item " << id << " on stage " << stage);
  }
  // "comm:ID", "comm_time:ID", "time:ID", "rel:ID": an item of the time side.
  for (const auto& [prefix, section, field] :
       {std::tuple{"comm:", "communication", "value"},
        std::tuple{"comm_time:", "communication", "time_s"}, std::tuple{"time:", "time", "value"},
        std::tuple{"rel:", "reliability", "value"}}) {
    const std::string p = prefix;
    if (path.rfind(p, 0) != 0) continue;
    for (const auto& item : report[section]["items"])
      if (item["id"] == path.substr(p.size())) return item[field].get<double>();
    FAIL("no item " << path);
  }
  if (path.rfind("state:", 0) == 0) {  // the persistent state of a stage (docs/formulas.md#state)
    double sum = 0;
    for (const auto& item : report["memory"]["stages"][std::stoi(path.substr(6))]["items"]) {
      const std::string id = item["id"];
      if (id == "params" || id == "grads" || id == "master" || id.rfind("optimizer.", 0) == 0 ||
          id.rfind("params.", 0) == 0)
        sum += item["value"].get<double>();
    }
    return sum;
  }
  return report.at(json::json_pointer(path)).get<double>();
}

}  // namespace

TEST_CASE("golden reports match their expected JSON", "[golden]") {
  const auto names = golden_cases();
  REQUIRE(names.size() >= 20);
  for (const std::string& name : names) {
    INFO("golden case " << name);
    const json got = report_for(name);
    const std::string expected_path = test::source_path("golden/" + name + ".json");
    if (update_requested()) {
      std::ofstream(expected_path) << got.dump(2) << "\n";
      continue;
    }
    INFO("expected report " << expected_path << " (write it with TRAINLEDGER_UPDATE_GOLDEN=1)");
    REQUIRE(fs::exists(expected_path));
    const json want = json::parse(test::read_file(expected_path));
    std::vector<std::string> differences;
    diff(want, got, "", differences);
    std::string shown;
    for (const std::string& d : differences) shown += "\n  " + d;
    INFO("JSON differences (expected vs got):" << shown);
    CHECK(differences.empty());
  }
}

TEST_CASE("golden cases reproduce the published numbers", "[golden]") {
  const json published = json::parse(test::read_file(test::source_path("golden/published.json")));
  REQUIRE(published.size() >= 25);
  for (const auto& e : published) {
    const std::string name = e["case"];
    INFO(name << " " << e["path"].get<std::string>() << " = " << e["shown"].get<std::string>()
              << " (" << e["source"].get<std::string>() << ")");
    const double got = published_value(report_for(name), e["path"]);
    const double want = e["value"];
    const double tol = e["tolerance"];
    if (tol > 0)
      CHECK(got == Approx(want).epsilon(tol));
    else
      CHECK(got == Approx(want).margin(1));
  }
}
