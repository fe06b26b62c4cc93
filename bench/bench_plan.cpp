// Speed of the planner: the core must take microseconds per plan (a search evaluates millions
// of candidates); loading and rendering are measured separately.
#include <benchmark/benchmark.h>

#include "trainledger/config.hpp"
#include "trainledger/numbers.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/report.hpp"
#include "trainledger/search.hpp"

namespace {

using namespace trainledger;

const config::LoadedPlan& default_plan() {
  static const config::LoadedPlan plan = config::load_default_plan({});
  return plan;
}

void BM_compute_plan_default(benchmark::State& state) {
  const PlanInput input = default_plan().input;
  for (auto _ : state) {
    PlanResult r = compute_plan(input);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_compute_plan_default);

void BM_compute_plan_memory_only(benchmark::State& state) {
  const PlanInput input = default_plan().input;
  for (auto _ : state) {
    PlanResult r = compute_plan(input, PlanScope{false, false});
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_compute_plan_memory_only);

// The numbers-only path (searches, what-if): the same formulas without text or terms.
void BM_evaluate_memory_only(benchmark::State& state) {
  const PlanInput input = default_plan().input;
  PlanNumbers n;
  for (auto _ : state) {
    evaluate(input, n, PlanScope{false, false});
    benchmark::DoNotOptimize(n.verdict);
  }
}
BENCHMARK(BM_evaluate_memory_only);

void BM_evaluate_with_time(benchmark::State& state) {
  const PlanInput input = default_plan().input;
  PlanNumbers n;
  for (auto _ : state) {
    evaluate(input, n, PlanScope{true, false});
    benchmark::DoNotOptimize(n.verdict);
  }
}
BENCHMARK(BM_evaluate_with_time);

void BM_compute_plan_with_time(benchmark::State& state) {
  const PlanInput input = default_plan().input;
  for (auto _ : state) {
    PlanResult r = compute_plan(input, PlanScope{true, false});
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_compute_plan_with_time);

void BM_compute_plan_pp16(benchmark::State& state) {
  config::LoadOptions o;
  o.sets = {"parallel.pp=16", "parallel.dp=1", "cluster.nodes=16"};
  const PlanInput input = config::load_default_plan(o).input;
  for (auto _ : state) {
    PlanResult r = compute_plan(input);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_compute_plan_pp16);

void BM_max_micro_batch(benchmark::State& state) {
  const PlanInput input = default_plan().input;
  const double limit = static_cast<double>(input.cluster.gpu.memory_bytes);
  for (auto _ : state) {
    MaxFit f = find_max(input, MaxKnob::micro_batch, limit);
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_max_micro_batch)->Unit(benchmark::kMillisecond);

void BM_max_seq_len(benchmark::State& state) {
  const PlanInput input = default_plan().input;
  const double limit = static_cast<double>(input.cluster.gpu.memory_bytes);
  for (auto _ : state) {
    MaxFit f = find_max(input, MaxKnob::seq_len, limit);
    benchmark::DoNotOptimize(f);
  }
}
BENCHMARK(BM_max_seq_len)->Unit(benchmark::kMillisecond);

void BM_load_default_plan(benchmark::State& state) {
  for (auto _ : state) {
    config::LoadedPlan p = config::load_default_plan({});
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_load_default_plan);

void BM_render_json(benchmark::State& state) {
  const PlanResult r = compute_plan(default_plan().input);
  for (auto _ : state) {
    std::string s = report::render_json(r, default_plan().plan_source());
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_render_json);

}  // namespace

BENCHMARK_MAIN();
