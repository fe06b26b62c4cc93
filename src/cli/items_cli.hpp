// What `sweep` and `diff` read from a plan: an item's value by its id (memory items at the
// worst stage, the time, communication and reliability items, the peak), and the value as text.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>

#include "trainledger/ledger.hpp"
#include "trainledger/plan.hpp"

namespace trainledger::cli {

struct Quantity {
  double value = 0;
  Unit unit = Unit::bytes;
};

// "peak" (the worst stage's peak), "fits" (1 or 0), or an item id ("activations", "time.step",
// "throughput.tokens_per_s_per_gpu", "comm.tp"): memory items from the worst stage.
inline std::optional<Quantity> quantity(const PlanResult& p, const std::string& id) {
  if (id == "peak") return Quantity{p.verdict.peak_bytes, Unit::bytes};
  if (id == "fits") return Quantity{plan_fits(p.verdict) ? 1.0 : 0.0, Unit::count};
  const std::optional<ItemId> item = item_by_name(id);
  if (!item) return std::nullopt;
  for (const auto* list : {&p.time, &p.communication, &p.reliability})
    if (const LineItem* i = find_item(*list, *item)) return Quantity{i->value, i->unit};
  if (!p.stages.empty())
    if (const LineItem* i =
            find_item(p.stages[static_cast<std::size_t>(p.worst_stage)].items, *item))
      return Quantity{i->value, i->unit};
  return Quantity{0, Unit::bytes};  // an item this plan does not hold (no cp traffic)
}

inline std::string quantity_text(const Quantity& q) {
  switch (q.unit) {
    case Unit::bytes:
      return fmt::format("{:.2f} GiB", q.value / (1024.0 * 1024.0 * 1024.0));
    case Unit::seconds:
      return std::fabs(q.value) >= 1 || q.value == 0 ? fmt::format("{:.3f} s", q.value)
                                                     : fmt::format("{:.1f} ms", q.value * 1e3);
    case Unit::fraction:
      return fmt::format("{:.1f} %", 100 * q.value);
    case Unit::tokens_per_s:
      return fmt::format("{:.0f} tokens/s", q.value);
    case Unit::flop:
      return fmt::format("{:.3g} FLOP", q.value);
    case Unit::flop_per_s:
      return fmt::format("{:.3g} FLOP/s", q.value);
    case Unit::bytes_per_s:
      return fmt::format("{:.3g} B/s", q.value);
    case Unit::count:
      break;
  }
  return fmt::format("{:.6g}", q.value);
}

}  // namespace trainledger::cli
