#include "trainledger/search.hpp"

#include <numeric>

#include "trainledger/numbers.hpp"

namespace trainledger {

namespace {

constexpr std::int64_t k_max_value = std::int64_t{1} << 40;

struct Probe {
  const PlanInput& base;
  MaxKnob knob;
  double limit;
  std::int64_t accum;
  int evaluations = 0;

  PlanInput input_at(std::int64_t value) const {
    PlanInput in = base;
    if (knob == MaxKnob::micro_batch) {
      in.training.micro_batch = value;
      in.training.global_batch = value * in.parallel.dp * accum;
    } else {
      in.training.seq_len = value;
    }
    return in;
  }
  // Memory only and numbers only while searching; the answer gets the whole plan.
  PlanNumbers numbers;
  const PlanNumbers& at(std::int64_t value) {
    ++evaluations;
    evaluate(input_at(value), numbers, PlanScope{false, false});
    return numbers;
  }
  PlanResult full(std::int64_t value) const { return compute_plan(input_at(value)); }
  bool fits(const PlanNumbers& r) const { return r.verdict.peak_bytes <= limit; }
};

}  // namespace

MaxFit find_max(const PlanInput& input, MaxKnob knob, double limit_bytes) {
  const std::int64_t per_pass = input.training.micro_batch * input.parallel.dp;
  const std::int64_t global =
      input.training.global_batch > 0 ? input.training.global_batch : per_pass;
  Probe probe{input,       knob,
              limit_bytes, per_pass > 0 ? std::max<std::int64_t>(1, global / per_pass) : 1,
              0,           {}};
  MaxFit out;
  if (knob == MaxKnob::seq_len) {
    out.step = input.parallel.cp;
    if (input.parallel.sequence_parallel)
      out.step = std::lcm(out.step, std::int64_t{input.parallel.tp});
  }
  if (!probe.fits(probe.at(out.step))) {
    out.plan = probe.full(out.step);
    out.value = out.step;
    out.next_peak_bytes = out.plan.verdict.peak_bytes;
    out.evaluations = probe.evaluations;
    return out;
  }
  // Grow by doubling until a value does not fit, then bisect (in units of `step`).
  std::int64_t good = 1, bad = 0;
  double bad_peak = 0;
  auto try_value = [&](std::int64_t k) {
    const PlanNumbers& r = probe.at(k * out.step);
    if (probe.fits(r)) {
      good = k;
    } else {
      bad = k;
      bad_peak = r.verdict.peak_bytes;
    }
  };
  while (bad == 0 && good * 2 * out.step <= k_max_value) try_value(good * 2);
  while (bad != 0 && bad - good > 1) try_value(good + (bad - good) / 2);
  out.found = true;
  out.value = good * out.step;
  out.plan = probe.full(out.value);
  out.next_peak_bytes = bad_peak;
  out.evaluations = probe.evaluations;
  return out;
}

}  // namespace trainledger
