// The biggest levers on the step: knobs tried by re-planning the plan with each one, kept when
// the changed plan is valid, still fits and is faster.
#include <fmt/format.h>

#include <algorithm>

#include "app.hpp"
#include "trainledger/plan.hpp"

namespace trainledger::cli {

namespace {

struct Candidate {
  std::vector<std::string> sets;
  std::string text;
};

std::vector<Candidate> candidates(const PlanInput& in, const Derived& d) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  std::vector<Candidate> c;
  if (p.pp > 1) {
    const auto more = d.global_batch * 4;
    c.push_back({{"training.global_batch=" + std::to_string(more)},
                 fmt::format("global_batch {} → {} (m {} → {})", d.global_batch, more, d.grad_accum,
                             d.grad_accum * 4)});
    const int per_stage = in.model.layers / p.pp;
    if (p.schedule != Schedule::interleaved && per_stage % 2 == 0 &&
        in.parallel.stage_layers.empty())
      c.push_back({{"parallel.schedule=\"interleaved\"", "parallel.virtual_stages=2"},
                   "schedule = interleaved, virtual_stages = 2"});
  }
  if (t.recompute == Recompute::full) {
    c.push_back({{"training.recompute=\"selective\""}, "recompute = selective"});
    c.push_back({{"training.recompute=\"op\""}, "recompute = op"});
  }
  if (t.recompute != Recompute::none)
    c.push_back({{"training.recompute=\"none\""}, "recompute = none"});
  if (p.tp > 1 && !p.sequence_parallel)
    c.push_back({{"parallel.sequence_parallel=true"}, "sequence_parallel = true"});
  if (d.grad_accum % 2 == 0)
    c.push_back({{"training.micro_batch=" + std::to_string(t.micro_batch * 2)},
                 fmt::format("micro_batch {} → {}", t.micro_batch, t.micro_batch * 2)});
  if (p.zero >= 2) c.push_back({{"parallel.zero=1"}, fmt::format("zero {} → 1", p.zero)});
  if (p.tp > 1 && p.tp % 2 == 0 && p.dp > 0)
    c.push_back(
        {{"parallel.tp=" + std::to_string(p.tp / 2), "parallel.dp=" + std::to_string(p.dp * 2)},
         fmt::format("tp {} → {} (dp {} → {})", p.tp, p.tp / 2, p.dp, p.dp * 2)});
  return c;
}

}  // namespace

std::vector<Lever> find_levers(const PlanOptions& o, const PlanResult& plan) {
  std::vector<Lever> out;
  const double before = value_of(plan.time, ItemId::throughput_tokens_per_s_per_gpu);
  if (before <= 0) return out;
  const double bubble_before = value_of(plan.time, ItemId::pipeline_bubble_fraction);
  for (const Candidate& c : candidates(plan.input, plan.derived)) {
    PlanOptions po = o;
    po.max.clear();
    po.sets.insert(po.sets.end(), c.sets.begin(), c.sets.end());
    PlanResult r;
    try {
      r = compute_plan(load(po).input);
    } catch (const config::ConfigError&) {
      continue;  // not a valid plan (a divisibility rule): not a lever
    }
    const double after = value_of(r.time, ItemId::throughput_tokens_per_s_per_gpu);
    if (after <= before * 1.005 || !r.verdict.fits) continue;
    Lever l;
    l.knob = c.text;
    l.throughput_before = before;
    l.throughput_after = after;
    const double bubble_after = value_of(r.time, ItemId::pipeline_bubble_fraction);
    std::string effect;
    if (bubble_after < bubble_before - 0.001)
      effect = fmt::format("bubble {:.1f} % → {:.1f} %, ", 100 * bubble_before, 100 * bubble_after);
    l.effect = effect + fmt::format("{:.0f} → {:.0f} tokens/s per GPU (+{:.1f} %), peak {:.1f} GiB",
                                    before, after, 100 * (after / before - 1),
                                    r.verdict.peak_bytes / k_gib);
    out.push_back(l);
  }
  std::sort(out.begin(), out.end(),
            [](const Lever& a, const Lever& b) { return a.throughput_after > b.throughput_after; });
  if (out.size() > 3) out.resize(3);
  return out;
}

}  // namespace trainledger::cli
