// Step time against published measurements (tests/reference/time.json). One documented
// matmul efficiency per GPU generation (configs/gpus), never a constant per case. Targets
// (docs/accuracy.md): on Korthikanti et al.'s Megatron-LM iteration times, better than the
// Calculon planner's 3.65 % mean and 8.9 % worst error; on other frameworks' runs, a median
// error of at most 15 %.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace trainledger;

namespace {

struct Errors {
  std::vector<double> abs;
  std::vector<double> signed_errors;
  std::string table = "\n| case | measured | predicted | error |\n|---|---:|---:|---:|\n";
};

Errors evaluate(const nlohmann::json& cases) {
  Errors e;
  for (const auto& c : cases) {
    const std::string plan = c["plan"];
    const config::LoadedPlan loaded =
        config::load_plan_file(test::source_path("tests/reference/" + plan), {});
    const PlanResult p = test::plan_checked(loaded.input);
    const LineItem* item = find_item(p.time, *item_by_name(c["quantity"].get<std::string>()));
    REQUIRE(item);
    const double measured = c["measured"];
    const double error = (item->value - measured) / measured;
    e.abs.push_back(std::fabs(error));
    e.signed_errors.push_back(error);
    e.table += fmt::format("| {} | {:.4g} | {:.4g} | {:+.1f} % |\n", plan, measured, item->value,
                           100 * error);
  }
  return e;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

}  // namespace

TEST_CASE("step time against Megatron-LM's measured iteration times", "[reference][time]") {
  const auto all =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/time.json")));
  const Errors e = evaluate(all["megatron"]);
  REQUIRE(e.abs.size() == 8);
  double mean = 0;
  for (double x : e.abs) mean += x / e.abs.size();
  const double worst = *std::max_element(e.abs.begin(), e.abs.end());
  WARN(e.table << fmt::format("mean {:.2f} %, worst {:.2f} %", 100 * mean, 100 * worst));
  CHECK(mean < 0.0365);
  CHECK(worst < 0.089);
}

TEST_CASE("throughput against other frameworks' measured runs", "[reference][time]") {
  const auto all =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/time.json")));
  Errors e = evaluate(all["other"]);
  REQUIRE(e.abs.size() >= 8);
  const double med = median(e.abs);
  WARN(e.table << fmt::format("median {:.1f} %, median signed {:+.1f} %, worst {:.1f} %", 100 * med,
                              100 * median(e.signed_errors),
                              100 * *std::max_element(e.abs.begin(), e.abs.end())));
  CHECK(med <= 0.15);
}

TEST_CASE("throughput against NVIDIA's published Megatron-Core runs on H100", "[reference][time]") {
  // NeMo 24.07 and Megatron-Bridge performance tables: FP8 on DGX-H100, 8 to 512 GPUs. No
  // value was chosen on these cases (docs/accuracy.md).
  const auto all =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/time.json")));
  const Errors e = evaluate(all["nvidia"]);
  REQUIRE(e.abs.size() >= 14);
  const double med = median(e.abs);
  const double bias = median(e.signed_errors);
  WARN(e.table << fmt::format("median {:.1f} %, median signed {:+.1f} %, worst {:.1f} %", 100 * med,
                              100 * bias, 100 * *std::max_element(e.abs.begin(), e.abs.end())));
  CHECK(med <= 0.10);
  CHECK(std::fabs(bias) <= 0.10);
}
