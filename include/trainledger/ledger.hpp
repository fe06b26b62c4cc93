// Line items: every number the planner reports, with the basis it was computed from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainledger/expr.hpp"
#include "trainledger/items.hpp"
#include "trainledger/units.hpp"

namespace trainledger {

// One call pattern of a collective within a communication item.
struct Collective {
  std::string collective;          // "all-reduce", "all-gather", "reduce-scatter", "send/recv", ...
  std::string algorithm = "ring";  // NCCL's algorithm: "ring", "tree" or "pat"
  int group_size = 1;
  double message_bytes = 0;  // S: the full tensor of one call
  double calls_per_step = 0;
  std::string link;  // "intra-node" or "inter-node"
  // The plan inputs its time was read from (the link's bandwidth, or the node's links where they
  // bound an inter-node group, and its latency): the terms of its formula that name a key.
  std::vector<Term> inputs;
};

struct LineItem {
  ItemId item = ItemId::params;  // what the item is (info(item) gives its role and traits)
  std::string id;                // info(item).name
  std::string label;
  double value = 0;  // in base units; integral when unit == bytes
  Unit unit = Unit::bytes;
  std::string formula;
  std::vector<Term> terms;
  std::string source;
  Kind kind = Kind::estimated;
  // Communication items only: time for the step's traffic and the calls that make it.
  std::optional<double> time_s;
  std::string time_formula;  // the formula of time_s, from the same terms
  std::vector<Collective> collectives;
};

// Builds a line item from an expression: the value, formula text and terms come from `e`.
// Byte values are rounded to whole bytes.
LineItem make_item(ItemId id, std::string label, Unit unit, const Expr& e, std::string source,
                   Kind kind = Kind::estimated);

// Sum of the values of `items` (line items or numbers-only items), for totals that the
// invariant checker re-derives.
template <typename List>
double sum_values(const List& items) {
  double sum = 0;
  for (const auto& i : items) sum += i.value;
  return sum;
}

// The item with this id, or nullptr.
const LineItem* find_item(const std::vector<LineItem>& items, ItemId id);
// The value of the item with this id (line items or numbers-only items), or 0 when the list
// has none.
template <typename List>
double value_of(const List& items, ItemId id) {
  for (const auto& i : items)
    if (i.item == id) return i.value;
  return 0.0;
}

}  // namespace trainledger
