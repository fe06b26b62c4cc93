// Peaks against published *measured* peaks (tests/reference/memory.json). Each case states
// what was measured: "allocated" (torch.cuda.max_memory_allocated), "reserved" (the caching
// allocator's max reserved) or "device" (nvidia-smi). The planner's ledger maps onto them:
// device = every item; reserved = device − CUDA context − NCCL buffers (outside PyTorch's
// allocator); allocated = reserved − the fragmentation reserve. Target (docs/accuracy.md):
// median absolute error ≤ 10 %, none worse than 25 %.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace trainledger;

namespace {

double predicted(const PlanResult& p, const std::string& kind) {
  const StageMemory& st = p.stages[p.worst_stage];
  double v = st.peak_bytes;
  auto value = [&](ItemId id) { return value_of(st.items, id); };
  if (kind == "device") return v;
  v -= value(ItemId::overhead_cuda_context) + value(ItemId::overhead_nccl);
  if (kind == "reserved") return v;
  return v - value(ItemId::overhead_fragmentation);
}

}  // namespace

TEST_CASE("peak memory against published measurements", "[reference][memory]") {
  const auto cases =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/memory.json")));
  REQUIRE(cases.size() >= 8);
  std::vector<double> errors, signed_errors;
  std::string table = "\n| case | measured | predicted | error |\n|---|---:|---:|---:|\n";
  for (const auto& c : cases) {
    const std::string plan = c["plan"];
    const config::LoadedPlan loaded =
        config::load_plan_file(test::source_path("tests/reference/" + plan), {});
    const PlanResult p = test::plan_checked(loaded.input);
    const double unit = c["unit"] == "GiB" ? k_gib : c["unit"] == "MiB" ? 1024.0 * 1024 : k_gb;
    const double measured = c["measured"].get<double>() * unit;
    const double got = predicted(p, c["kind"]);
    const double error = (got - measured) / measured;
    errors.push_back(std::fabs(error));
    signed_errors.push_back(error);
    table +=
        fmt::format("| {} ({}) | {:.2f} {} | {:.2f} {} | {:+.1f} % |\n", plan,
                    c["kind"].get<std::string>(), measured / unit, c["unit"].get<std::string>(),
                    got / unit, c["unit"].get<std::string>(), 100 * error);
    INFO(plan << ": " << c["source"].get<std::string>());
    CHECK(std::fabs(error) <= 0.25);
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  INFO(table << "median absolute error " << 100 * median << " %");
  CHECK(median <= 0.10);
  std::sort(signed_errors.begin(), signed_errors.end());
  WARN(table << "median absolute error " << fmt::format("{:.1f}", 100 * median) << " %, worst "
             << fmt::format("{:.1f}", 100 * errors.back()) << " %, median signed "
             << fmt::format("{:+.1f}", 100 * signed_errors[signed_errors.size() / 2]) << " %");
}
