#include "trainledger/search.hpp"

#include <algorithm>
#include <numeric>

#include "trainledger/numbers.hpp"
#include "trainledger/whatif.hpp"

namespace trainledger {

namespace {

constexpr std::int64_t k_max_value = std::int64_t{1} << 40;

struct Probe {
  const PlanInput& base;
  MaxKnob knob;
  MaxKeep keep;
  double limit;
  std::int64_t accum;
  int evaluations = 0;

  PlanInput input_at(std::int64_t value) const {
    PlanInput in = base;
    if (knob == MaxKnob::micro_batch) {
      in.training.micro_batch = value;
      if (keep == MaxKeep::accum) in.training.global_batch = value * in.parallel.dp * accum;
    } else {
      in.training.seq_len = value;
    }
    return in;
  }
  // A value the plan file's rules accept (e.g. enough micro-batches for the schedule).
  bool valid(std::int64_t value) const {
    Change c;
    if (knob == MaxKnob::micro_batch) {
      c.set(base, Knob::micro_batch, value);
      if (keep == MaxKeep::accum) c.set(base, Knob::global_batch, value * base.parallel.dp * accum);
    } else {
      return true;
    }
    return apply_valid(base, c).has_value();
  }
  // Memory only and numbers only while searching; the answer gets the whole plan.
  PlanNumbers numbers;
  const PlanNumbers& at(std::int64_t value) {
    ++evaluations;
    evaluate(input_at(value), numbers, PlanScope{false, false});
    return numbers;
  }
  PlanResult full(std::int64_t value) const { return compute_plan(input_at(value)); }
  bool fits(const PlanNumbers& r) const {
    return r.verdict.peak_bytes <= limit && r.verdict.host_fits;
  }
};

// The micro-batches to try with the global batch kept, ascending: the divisors of
// global_batch / dp that the plan's rules accept. (Other searches try multiples of a step.)
std::vector<std::int64_t> candidates(const Probe& probe) {
  std::vector<std::int64_t> out;
  if (probe.knob == MaxKnob::micro_batch && probe.keep == MaxKeep::global_batch) {
    const std::int64_t dp = std::max(1, probe.base.parallel.dp);
    const std::int64_t global = probe.base.training.global_batch > 0
                                    ? probe.base.training.global_batch
                                    : probe.base.training.micro_batch * dp;
    const std::int64_t per_rank = global / dp;
    for (std::int64_t d = 1; d * d <= per_rank; ++d) {
      if (per_rank % d != 0) continue;
      out.push_back(d);
      if (d != per_rank / d) out.push_back(per_rank / d);
    }
    std::sort(out.begin(), out.end());
  }
  std::vector<std::int64_t> valid;
  if (!out.empty()) {
    for (std::int64_t v : out)
      if (probe.valid(v)) valid.push_back(v);
  }
  return valid;
}

}  // namespace

MaxFit find_max(const PlanInput& input, MaxKnob knob, double limit_bytes, MaxKeep keep,
                std::int64_t max_value) {
  // A plan that gives no global batch has none to keep: its accumulation (1) is kept.
  const Source batch = input.provenance.of("training.global_batch");
  if (input.training.global_batch <= 0 || batch == Source::default_value ||
      batch == Source::derived)
    keep = MaxKeep::accum;
  const std::int64_t per_pass = input.training.micro_batch * input.parallel.dp;
  const std::int64_t global =
      input.training.global_batch > 0 ? input.training.global_batch : per_pass;
  Probe probe{input,
              knob,
              keep,
              limit_bytes,
              per_pass > 0 ? std::max<std::int64_t>(1, global / per_pass) : 1,
              0,
              {}};
  MaxFit out;
  out.keep = keep;
  if (knob == MaxKnob::seq_len) {
    out.step = input.parallel.cp;
    if (input.parallel.sequence_parallel)
      out.step = std::lcm(out.step, std::int64_t{input.parallel.tp});
  }
  // The values as a list (divisors of the per-rank batch) or as multiples k · step.
  const std::vector<std::int64_t> list = candidates(probe);
  const bool listed = knob == MaxKnob::micro_batch && keep == MaxKeep::global_batch;
  if (listed && list.empty()) {
    // No micro-batch divides the global batch under the plan's rules: the plan as it is.
    out.plan = probe.full(input.training.micro_batch);
    out.value = input.training.micro_batch;
    out.evaluations = probe.evaluations;
    return out;
  }
  const std::int64_t top = max_value > 0 ? std::min(max_value, k_max_value) : k_max_value;
  std::int64_t count = listed ? static_cast<std::int64_t>(list.size()) : top / out.step;
  if (listed)
    while (count > 1 && list[static_cast<std::size_t>(count - 1)] > top) --count;
  count = std::max<std::int64_t>(count, 1);
  auto value_of_index = [&](std::int64_t k) {  // k = 1 .. count
    return listed ? list[static_cast<std::size_t>(k - 1)] : k * out.step;
  };
  if (!probe.fits(probe.at(value_of_index(1)))) {
    out.plan = probe.full(value_of_index(1));
    out.value = value_of_index(1);
    out.next_peak_bytes = out.plan.verdict.peak_bytes;
    out.evaluations = probe.evaluations;
    return out;
  }
  // Grow by doubling until a value does not fit, then bisect (over the list's indices).
  std::int64_t good = 1, bad = 0;
  double bad_peak = 0;
  auto try_index = [&](std::int64_t k) {
    const PlanNumbers& r = probe.at(value_of_index(k));
    if (probe.fits(r)) {
      good = k;
    } else {
      bad = k;
      bad_peak = r.verdict.peak_bytes;
    }
  };
  while (bad == 0 && good < count) try_index(std::min(good * 2, count));
  while (bad != 0 && bad - good > 1) try_index(good + (bad - good) / 2);
  out.found = true;
  out.value = value_of_index(good);
  out.plan = probe.full(out.value);
  out.next_peak_bytes = bad_peak;
  out.next_value = bad != 0 ? value_of_index(bad) : 0;
  out.evaluations = probe.evaluations;
  return out;
}

}  // namespace trainledger
