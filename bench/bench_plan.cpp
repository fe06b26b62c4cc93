// Speed of the planner: the core must take microseconds per plan (a search evaluates millions
// of candidates); loading and rendering are measured separately.
#include <benchmark/benchmark.h>

#include "trainledger/config.hpp"
#include "trainledger/layout_search.hpp"
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

// Layout search: Llama-3.1-405B (seq 8192, global batch 2048) on 16,384 H100s, every layout
// with uneven stages; candidates per second (per core: divide by the jobs) and the time of the
// whole search.
PlanInput search_405b() {
  config::LoadOptions o;
  o.sets = {"model.preset=\"llama-3.1-405b\"",
            "cluster.gpu=\"h100-sxm5-80gb\"",
            "training.seq_len=8192",
            "training.global_batch=2048",
            "parallel.tp=8",
            "parallel.pp=16",
            "parallel.dp=8",
            "cluster.nodes=128",
            "parallel.stage_layers=[7, 8, "
            "8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]"};
  PlanInput in = config::load_default_plan(o).input;
  in.cluster.nodes = 2048;  // 16,384 GPUs; the search replaces the layout
  return in;
}

// The whole search, timed; counters: the layouts enumerated and their rate (all jobs).
void time_search(benchmark::State& state, const PlanInput& base, const SearchOptions& o) {
  std::int64_t n = 0;
  for (auto _ : state) {
    const SearchResult r = search_layouts(base, o);
    n += r.enumerated;
    benchmark::DoNotOptimize(r.top);
  }
  state.counters["layouts"] = benchmark::Counter(static_cast<double>(n) / state.iterations());
  state.counters["layouts_per_s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
}

void BM_search_405b_16k(benchmark::State& state) {
  SearchOptions o;
  o.jobs = static_cast<int>(state.range(0));
  if (state.range(1) == 0) o.space.cp = {1};
  time_search(state, search_405b(), o);
}
BENCHMARK(BM_search_405b_16k)
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({2, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Calculon's own search case (GPT-3 175B, seq 2048, global batch 3072, on 4096 A100s), to set
// the rates side by side: bench/calculon_rate.py times Calculon's search on the same machine.
void BM_search_gpt3_4096(benchmark::State& state) {
  config::LoadOptions o;
  o.sets = {"model.preset=\"gpt3-175b\"",
            "cluster.gpu=\"a100-sxm4-80gb\"",
            "training.seq_len=2048",
            "training.global_batch=3072",
            "parallel.tp=8",
            "parallel.pp=8",
            "parallel.dp=1",
            "cluster.nodes=8"};
  PlanInput base = config::load_default_plan(o).input;
  base.cluster.nodes = 512;
  SearchOptions so;
  so.jobs = static_cast<int>(state.range(0));
  time_search(state, base, so);
}
BENCHMARK(BM_search_gpt3_4096)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
