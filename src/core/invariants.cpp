#include "trainledger/invariants.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "memory.hpp"

namespace trainledger {

namespace {

void check_items(const std::vector<LineItem>& items, const std::string& where,
                 std::vector<std::string>& out) {
  std::set<std::string> ids;
  for (const LineItem& i : items) {
    const std::string at = where + " " + i.id;
    if (!ids.insert(i.id).second) out.push_back(at + ": duplicate id");
    if (!std::isfinite(i.value)) out.push_back(at + ": value is not finite");
    if (i.value < 0 && i.unit != Unit::fraction) out.push_back(at + ": negative value");
    if (i.unit == Unit::bytes && i.value != std::round(i.value))
      out.push_back(at + ": bytes are not a whole number");
    if (i.id.empty()) out.push_back(where + ": item without id");
    if (i.label.empty()) out.push_back(at + ": no label");
    if (i.formula.empty()) out.push_back(at + ": no formula");
    if (i.source.empty()) out.push_back(at + ": no source");
    if (i.terms.empty()) out.push_back(at + ": no terms");
    if (i.formula.find("nan") != std::string::npos || i.formula.find("inf") != std::string::npos)
      out.push_back(at + ": formula shows a non-finite number");
    for (const Term& t : i.terms) {
      if (!std::isfinite(t.value)) out.push_back(at + ": term " + t.key + " is not finite");
    }
    if (i.time_s && (!std::isfinite(*i.time_s) || *i.time_s < 0))
      out.push_back(at + ": time_s is not a finite, non-negative number");
    if (i.time_s && i.time_formula.empty()) out.push_back(at + ": time_s without a formula");
  }
}

}  // namespace

std::vector<std::string> check_invariants(const PlanResult& plan) {
  std::vector<std::string> out;
  if (plan.stages.empty()) out.push_back("memory: no stages");
  double worst = -1;
  int worst_stage = 0;
  const PhaseLedgers phase_ledgers(plan.input);
  for (const StageMemory& st : plan.stages) {
    const std::string where = "memory.stages[" + std::to_string(st.stage) + "]";
    check_items(st.items, where, out);
    const double sum = sum_values(st.items);
    if (std::fabs(sum - st.peak_bytes) > 0.5)
      out.push_back(where + ": items sum to " + std::to_string(sum) + " but peak_bytes is " +
                    std::to_string(st.peak_bytes));
    if (st.fits != (st.peak_bytes <= st.capacity_bytes))
      out.push_back(where + ": fits disagrees with peak and capacity");
    double highest = 0;
    for (const PhaseTotal& pt : st.phases) {
      const std::string at = where + " " + std::string(to_string(pt.phase));
      const std::vector<LineItem> items = phase_ledgers(st.stage, pt.phase);
      check_items(items, at, out);
      if (std::fabs(sum_values(items) - pt.bytes) > 0.5) out.push_back(at + ": items do not sum");
      highest = std::max(highest, pt.bytes);
    }
    if (!st.phases.empty() && highest != st.peak_bytes)
      out.push_back(where + ": peak is not the largest phase");
    if (st.peak_bytes > worst) {
      worst = st.peak_bytes;
      worst_stage = st.stage;
    }
  }
  if (!plan.stages.empty()) {
    if (plan.worst_stage != worst_stage)
      out.push_back("memory: worst_stage is not the largest peak");
    if (plan.verdict.peak_bytes != worst) out.push_back("verdict: peak is not the worst stage's");
    if (plan.verdict.fits != (plan.verdict.peak_bytes <= plan.verdict.limit_bytes))
      out.push_back("verdict: fits disagrees with peak and limit");
  }
  if (plan.verdict.host_fits != plan.host.fits)
    out.push_back("verdict: host_fits disagrees with the host memory");
  if (plan.host.fits !=
      (plan.host.capacity_bytes <= 0 || plan.host.peak_bytes <= plan.host.capacity_bytes))
    out.push_back("host: fits disagrees with peak and capacity");
  check_items(plan.host.items, "host", out);
  if (std::fabs(sum_values(plan.host.items) - plan.host.peak_bytes) > 0.5)
    out.push_back("host: items do not sum to peak_bytes");
  check_items(plan.communication, "communication", out);
  check_items(plan.time, "time", out);
  if (const LineItem* step = find_item(plan.time, ItemId::time_step)) {
    // The step is the sum of its parts (the catalogue's step_part items, time.offload included).
    double parts = 0;
    for (const LineItem& i : plan.time)
      if (info(i.item).step_part) parts += i.value;
    if (std::fabs(parts - step->value) > 1e-9 * std::max(1.0, step->value))
      out.push_back("time: the step's parts do not add up to time.step");
    // Overlap hides traffic; it never exposes more than the traffic takes.
    double traffic = 0;
    for (const LineItem& c : plan.communication)
      if (c.time_s) traffic += *c.time_s;
    const LineItem* exposed = find_item(plan.time, ItemId::time_comm_exposed);
    if (exposed && exposed->value > traffic * (1 + 1e-9) + 1e-12)
      out.push_back("time: exposed communication exceeds the communication time");
  }
  check_items(plan.reliability, "reliability", out);
  const Derived& d = plan.derived;
  if (!(d.params > 0) || !std::isfinite(d.params)) out.push_back("derived: params not positive");
  if (d.trainable_params > d.params + 0.5 && plan.input.training.finetune == Finetune::full)
    out.push_back("derived: more trainable than total parameters");
  if (d.world_size <= 0) out.push_back("derived: world_size not positive");
  if (plan.rl.present) {
    // RL phases (docs/rl.md): each phase's items sum to its peak and its verdict agrees; an
    // on-policy step is the sum of its phases; the verdict holds only when every phase fits.
    const RlResult& rl = plan.rl;
    bool every_phase = rl.kv_fits;
    for (const RlPhase& ph : rl.phases) {
      check_items(ph.items, "rl " + ph.name, out);
      if (std::fabs(sum_values(ph.items) - ph.peak_bytes) > 0.5)
        out.push_back("rl " + ph.name + ": items do not sum to peak_bytes");
      if (ph.fits && ph.capacity_bytes > 0 && ph.peak_bytes > ph.capacity_bytes)
        out.push_back("rl " + ph.name + ": fits although over its capacity");
      every_phase = every_phase && ph.fits;
    }
    if (plan.verdict.rl_fits != (every_phase && rl.problem.empty()))
      out.push_back("verdict: rl_fits disagrees with the RL phases");
    check_items(rl.time, "rl time", out);
    const RlSpec& s = plan.input.rl;
    const LineItem* step = find_item(rl.time, ItemId::rl_time_step);
    if (step && !(s.placement == RlPlacement::split && s.off_policy)) {
      double parts = 0;
      for (const LineItem& i : rl.time)
        if (i.unit == Unit::seconds && i.item != ItemId::rl_time_step) parts += i.value;
      if (std::fabs(parts - step->value) > 1e-9 * std::max(1.0, step->value))
        out.push_back("rl time: the phases do not add up to rl.time.step");
    }
    if (step && step->value > 0) {
      // The timeline: every part inside the step, the exposed parts summing to it.
      double exposed = 0;
      for (const RlSpan& sp : rl.timeline) {
        exposed += sp.exposed_s;
        if (!(sp.start_s >= 0 && sp.end_s >= sp.start_s &&
              sp.end_s <= step->value * (1 + 1e-9) + 1e-12))
          out.push_back("rl timeline: " + std::string(info(sp.item).name) + " outside the step");
        if (sp.exposed_s > sp.end_s - sp.start_s + 1e-12 || sp.exposed_s < 0)
          out.push_back("rl timeline: " + std::string(info(sp.item).name) +
                        " exposes more than it takes");
      }
      if (std::fabs(exposed - step->value) > 1e-9 * std::max(1.0, step->value))
        out.push_back("rl timeline: the exposed parts do not add up to rl.time.step");
    }
  }
  return out;
}

}  // namespace trainledger
