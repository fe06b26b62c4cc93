#include "trainledger/ledger.hpp"

#include <cmath>
#include <utility>

namespace trainledger {

namespace {

bool user_given(Source s) {
  return s == Source::file || s == Source::set || s == Source::hf_config || s == Source::imported ||
         s == Source::change;
}

// An item that rests on assumed inputs is measured when one of them was measured, and given
// when the user gave every one of them.
Kind kind_from_terms(Kind declared, const std::vector<Term>& terms) {
  if (declared != Kind::assumed) return declared;
  bool any = false, all_given = true;
  for (const Term& t : terms) {
    if (t.input.empty()) continue;
    any = true;
    if (t.source == Source::calibration) return Kind::measured;
    all_given = all_given && user_given(t.source);
  }
  return any && all_given ? Kind::given : Kind::assumed;
}

}  // namespace

LineItem make_item(ItemId id, std::string label, Unit unit, const Expr& e, std::string source,
                   Kind kind) {
  LineItem item;
  item.item = id;
  item.id = std::string(info(id).name);
  item.label = std::move(label);
  item.unit = unit;
  item.value = unit == Unit::bytes ? std::round(e.value()) : e.value();
  item.formula = e.text();
  item.terms = e.terms();
  item.source = std::move(source);
  item.kind = kind_from_terms(kind, item.terms);
  return item;
}

const LineItem* find_item(const std::vector<LineItem>& items, ItemId id) {
  for (const LineItem& i : items)
    if (i.item == id) return &i;
  return nullptr;
}

}  // namespace trainledger
