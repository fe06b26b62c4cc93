// Bands on the peak and the step time from the reference residuals (docs/accuracy.md#bands).
#include "bands.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

namespace trainledger {

namespace {

// The narrowest family with at least this many cases gives the band; else the next wider one.
constexpr int k_min_memory_cases = 20;
constexpr int k_min_time_cases = 10;
// ... from at least this many sources: one source's residuals measure its own errors, not how
// far a plan of the family can be off (a source held out of its family's band must not leave
// the band to a single other source).
constexpr int k_min_sources = 2;

}  // namespace

// Memory: by dense or MoE and one GPU or several, then by one GPU or several, then every case
// (the stacks' own residuals are too few per source to hold out a source: docs/accuracy.md).
// Time: by stack and dense or MoE, then dense or MoE, then every case. RL steps: by dense or
// MoE, then every RL case (the RL frameworks' runs are too few per stack).
std::vector<double> family_ratios(Quantity q, const std::string& stack, bool moe, bool multi_gpu,
                                  const std::string& held_out, std::string& name) {
  struct Level {
    bool stack, moe, multi;
  };
  const std::vector<Level> levels =
      q == Quantity::memory
          ? std::vector<Level>{{false, true, true}, {false, false, true}, {false, false, false}}
      : q == Quantity::time
          ? std::vector<Level>{{true, true, false}, {false, true, false}, {false, false, false}}
          : std::vector<Level>{{false, true, false}, {false, false, false}};
  const int least = q == Quantity::memory ? k_min_memory_cases : k_min_time_cases;
  std::vector<double> out;
  std::vector<std::string> sources;
  for (const Level& l : levels) {
    out.clear();
    sources.clear();
    for (const Residual& r : residuals()) {
      if (r.quantity != q || held_out == r.source) continue;
      if (l.stack && stack != r.stack) continue;
      if (l.moe && moe != r.moe) continue;
      if (l.multi && multi_gpu != r.multi_gpu) continue;
      out.push_back(r.ratio);
      if (std::find(sources.begin(), sources.end(), r.source) == sources.end())
        sources.emplace_back(r.source);
    }
    const bool enough =
        static_cast<int>(out.size()) >= least && static_cast<int>(sources.size()) >= k_min_sources;
    if (enough || (!l.stack && !l.moe && !l.multi)) {
      std::string n = q == Quantity::rl_step ? "RL" : "";
      auto add = [&n](const std::string& part) { n += (n.empty() ? "" : " · ") + part; };
      if (l.stack) add(stack);
      if (l.moe) add(moe ? "MoE" : "dense");
      if (l.multi) add(multi_gpu ? "multi-GPU" : "one GPU");
      name = n.empty() ? "every case" : n == "RL" ? "every RL case" : n;
      break;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The distribution-free prediction interval of a new case from n sorted residuals: the
// ⌊(n + 1)(1 − c)/2⌋-th to the ⌈(n + 1)(1 + c)/2⌉-th of them (capped at the extremes), so that
// a case drawn like the others falls inside with probability ≥ c when n is large enough
// (Wilks 1941; the split-conformal interval). The band always holds the estimate itself.
std::pair<double, double> ratio_range(const std::vector<double>& sorted, double c) {
  const int n = static_cast<int>(sorted.size());
  if (n == 0) return {1, 1};
  const int lo = std::max(1, static_cast<int>(std::floor((n + 1) * (1 - c) / 2)));
  const int hi = std::min(n, static_cast<int>(std::ceil((n + 1) * (1 + c) / 2)));
  return {std::min(1.0, sorted[lo - 1]), std::max(1.0, sorted[hi - 1])};
}

namespace {

Band make_band(Quantity q, const PlanInput& in, double value, double measured, double c) {
  Band b;
  if (!(c > 0 && c < 1) || !(value > 0)) return b;
  const std::vector<double> sorted =
      family_ratios(q, std::string(to_string(in.training.framework)), in.model.experts > 1,
                    in.cluster.world_size() > 1, "", b.family);
  if (sorted.empty()) return Band{};
  const auto [lo, hi] = ratio_range(sorted, c);
  const double estimated = std::max(0.0, value - measured);
  b.low = value - estimated + estimated * lo;
  b.high = value - estimated + estimated * hi;
  b.confidence = c;
  b.cases = static_cast<int>(sorted.size());
  b.ratio_low = lo;
  b.ratio_high = hi;
  b.measured = value - estimated;
  return b;
}

// The band of a throughput from its step's band: inverse, so its low end is the step's high end.
Band inverse_band(const Band& step_band, double step, const LineItem* tput) {
  if (!tput || step_band.cases == 0) return Band{};
  Band t = step_band;
  t.low = tput->value * step / step_band.high;
  t.high = tput->value * step / step_band.low;
  return t;
}

}  // namespace

double band_limit(const Band& band, double limit) {
  if (band.cases == 0 || !(band.ratio_high > 0)) return limit;
  return band.measured + (limit - band.measured) / band.ratio_high;
}

Band memory_band(const PlanInput& input, double peak_bytes, double measured_bytes,
                 double confidence) {
  return make_band(Quantity::memory, input, peak_bytes, measured_bytes, confidence);
}

void apply_bands(PlanResult& plan, double confidence) {
  Verdict& v = plan.verdict;
  double measured = 0;
  for (const StageMemory& st : plan.stages)
    if (st.stage == plan.worst_stage)
      for (const LineItem& i : st.items)
        if (i.kind == Kind::measured) measured += i.value;
  v.peak_band = memory_band(plan.input, v.peak_bytes, measured, confidence);
  const double limit = v.limit_bytes * (1 - std::max(0.0, v.required_headroom));
  v.band_fits = v.fits && (v.peak_band.cases == 0 || v.peak_band.high <= limit);
  plan.step_band = Band{};
  plan.throughput_band = Band{};
  const LineItem* step = find_item(plan.time, ItemId::time_step);
  if (step && step->value > 0) {
    double measured_time = 0;
    for (ItemId id :
         {ItemId::time_compute, ItemId::time_recompute, ItemId::time_comm_exposed,
          ItemId::time_bubble, ItemId::time_optimizer, ItemId::time_offload, ItemId::time_host}) {
      const LineItem* i = find_item(plan.time, id);
      if (i && i->kind == Kind::measured) measured_time += i->value;
    }
    plan.step_band = make_band(Quantity::time, plan.input, step->value, measured_time, confidence);
    plan.throughput_band = inverse_band(
        plan.step_band, step->value, find_item(plan.time, ItemId::throughput_tokens_per_s_per_gpu));
  }
  // RL plans: the RL step from the RL runs' residuals (its parts are estimated, none measured).
  RlResult& rl = plan.rl;
  rl.step_band = Band{};
  rl.throughput_band = Band{};
  const LineItem* rl_step = rl.present ? find_item(rl.time, ItemId::rl_time_step) : nullptr;
  if (!rl_step || !(rl_step->value > 0)) return;
  rl.step_band = make_band(Quantity::rl_step, plan.input, rl_step->value, 0, confidence);
  rl.throughput_band = inverse_band(rl.step_band, rl_step->value,
                                    find_item(rl.time, ItemId::rl_tokens_per_s_per_gpu));
}

void judge(PlanResult& plan, double capacity_bytes, double required_headroom, double confidence) {
  Verdict& v = plan.verdict;
  if (capacity_bytes > 0) {
    v.limit_bytes = capacity_bytes;
    v.fits = v.peak_bytes <= capacity_bytes;
    v.headroom = (capacity_bytes - v.peak_bytes) / capacity_bytes;
  }
  v.required_headroom = required_headroom;
  apply_bands(plan, confidence);
}

}  // namespace trainledger
