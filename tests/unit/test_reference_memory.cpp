// Peaks against published *measured* peaks, one folder per source (tests/reference/memory.json
// lists them with their stack and split; tests/reference/memory/<source>/cases.json holds the
// cases). Each case states what was measured: "allocated" (torch.cuda.max_memory_allocated),
// "reserved" (the caching allocator's max reserved) or "device" (nvidia-smi), and on which
// stage ("first", "last" or the worst). The ledger maps onto them: device = every item;
// reserved = device − CUDA context − NCCL buffers (outside PyTorch's allocator); allocated =
// reserved − the fragmentation reserve. The held-back sources were never looked at while the
// planner changed; docs/accuracy.md reports both splits per stack.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "helpers.hpp"

using namespace trainledger;

namespace {

struct Score {
  std::vector<double> errors;  // signed
  double median_abs() const {
    std::vector<double> a;
    for (double e : errors) a.push_back(std::fabs(e));
    std::sort(a.begin(), a.end());
    return a.empty() ? 0 : a[a.size() / 2];
  }
  double median_signed() const {
    std::vector<double> a = errors;
    std::sort(a.begin(), a.end());
    return a.empty() ? 0 : a[a.size() / 2];
  }
  double under(double by) const {
    double n = 0;
    for (double e : errors) n += e < -by ? 1 : 0;
    return errors.empty() ? 0 : n / errors.size();
  }
};

}  // namespace

TEST_CASE("peak memory against published measurements, by source", "[reference][memory]") {
  const auto index =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/memory.json")));
  std::map<std::string, Score> by;
  std::set<std::string> sources;
  int multi_gpu = 0;
  std::vector<double> blackwell;  // errors of the cases on B200/GB200/B300/GB300
  std::string table =
      "\n| split | stack | case | measured | predicted | error |\n|---|---|---|---:|---:|---:|\n";
  for (const auto& src : index["sources"]) {
    const std::string dir = src["dir"], stack = src["stack"], split = src["split"];
    REQUIRE((split == "dev" || split == "held-back"));
    const auto doc = nlohmann::json::parse(
        test::read_file(test::source_path("tests/reference/memory/" + dir + "/cases.json")));
    REQUIRE(doc["source"]["id"] == dir);
    REQUIRE(!doc["source"]["url"].get<std::string>().empty());
    sources.insert(dir);
    for (const auto& c : doc["cases"]) {
      const std::string plan = c["plan"];
      INFO(dir << "/" << plan);
      const config::LoadedPlan loaded = config::load_plan_file(
          test::source_path("tests/reference/memory/" + dir + "/" + plan), {});
      const PlanResult p = test::plan_checked(loaded.input);  // the invariant checker
      const double unit = test::unit_bytes(c["unit"]);
      const double measured = c["measured"].get<double>() * unit;
      const double got =
          test::predicted_memory(p, c["kind"], c.value("stage", std::string("worst")));
      const double error = (got - measured) / measured;
      CHECK(std::isfinite(error));
      multi_gpu += p.input.cluster.world_size() > 1 ? 1 : 0;
      const std::string& gpu = p.input.cluster.gpu.name;
      if (gpu.find("B200") != std::string::npos || gpu.find("B300") != std::string::npos)
        blackwell.push_back(error);
      for (const std::string& key : {split, split + " / " + stack, std::string("all")})
        by[key].errors.push_back(error);
      table += fmt::format("| {} | {} | {}/{} ({}) | {:.2f} {} | {:.2f} {} | {:+.1f} % |\n", split,
                           stack, dir, plan, c["kind"].get<std::string>(), measured / unit,
                           c["unit"].get<std::string>(), got / unit, c["unit"].get<std::string>(),
                           100 * error);
    }
  }
  std::string summary;
  for (const auto& [key, s] : by)
    summary += fmt::format(
        "{}: n {}, median |e| {:.1f} %, median signed {:+.1f} %, under by more "
        "than 10 % {:.0f} %\n",
        key, s.errors.size(), 100 * s.median_abs(), 100 * s.median_signed(), 100 * s.under(0.10));
  INFO(table << summary);
  // The set: at least 100 measurements from at least 12 sources, most of them multi-GPU.
  CHECK(by["all"].errors.size() >= 100);
  CHECK(sources.size() >= 12);
  CHECK(multi_gpu * 2 > static_cast<int>(by["all"].errors.size()));
  // The held-back sources (docs/accuracy.md): median within 8 %, its sign within 4 %, at most
  // 10 % of the cases predicted more than 10 % low (the gate would pass a run that OOMs), and
  // none more than 40 % off.
  const Score& held = by["held-back"];
  REQUIRE(held.errors.size() >= 30);
  CHECK(held.median_abs() <= 0.08);
  CHECK(std::fabs(held.median_signed()) <= 0.04);
  CHECK(held.under(0.10) <= 0.10);
  for (double e : held.errors) CHECK(std::fabs(e) <= 0.40);
  // Blackwell (B200/GB200 in bf16, float8 tensorwise and rowwise, MXFP8; torchao's table and
  // Megatron-LM's CI): every peak within 10 % of its measurement (docs/accuracy.md#recipes).
  CHECK(blackwell.size() >= 7);
  for (double e : blackwell) CHECK(std::fabs(e) <= 0.10);
  WARN(summary);
}
