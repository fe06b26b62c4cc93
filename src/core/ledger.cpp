#include "trainledger/ledger.hpp"

#include <cmath>
#include <utility>

namespace trainledger {

LineItem make_item(std::string id, std::string label, Unit unit, const Expr& e, std::string source,
                   Kind kind) {
  LineItem item;
  item.id = std::move(id);
  item.label = std::move(label);
  item.unit = unit;
  item.value = unit == Unit::bytes ? std::round(e.value()) : e.value();
  item.formula = e.text();
  item.terms = e.terms();
  item.source = std::move(source);
  item.kind = kind;
  return item;
}

double sum_values(const std::vector<LineItem>& items) {
  double sum = 0;
  for (const LineItem& i : items) sum += i.value;
  return sum;
}

const LineItem* find_item(const std::vector<LineItem>& items, std::string_view id) {
  for (const LineItem& i : items)
    if (i.id == id) return &i;
  return nullptr;
}

}  // namespace trainledger
