// One set of formulas, two evaluations. Every formula of the core is a template over its value
// type V: Expr builds the value with its formula text and terms (reports, explain); Num builds
// the value alone, with no strings and no allocation (searches, what-if). Both perform the same
// arithmetic in the same order, so their numbers agree to the bit
// (tests/unit/test_numbers.cpp).
#pragma once

#include <array>
#include <cmath>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "trainledger/ledger.hpp"
#include "trainledger/numbers.hpp"

namespace trainledger {

// A formula evaluated as a plain number: Expr's interface without text or terms.
class Num {
 public:
  static constexpr bool explained = false;

  Num() = default;
  static Num term(const Text& /*key*/, double value, const Text& /*label*/) { return Num(value); }
  static Num constant(double value) { return Num(value); }
  double value() const { return m_value; }

  // The same arithmetic as Expr's operators (a division by zero gives 0).
  friend Num operator+(Num a, Num b) { return Num(a.m_value + b.m_value); }
  friend Num operator-(Num a, Num b) { return Num(a.m_value - b.m_value); }
  friend Num operator*(Num a, Num b) { return Num(a.m_value * b.m_value); }
  friend Num operator/(Num a, Num b) { return Num(b.m_value == 0 ? 0 : a.m_value / b.m_value); }
  static Num min(Num a, Num b) { return Num(std::fmin(a.m_value, b.m_value)); }
  static Num sqrt(Num a) { return Num(a.m_value > 0 ? std::sqrt(a.m_value) : 0); }
  Num note(std::string_view /*text*/) const { return *this; }
  template <typename F>
  Num note_with(F&& /*make*/) const {
    return *this;
  }

 private:
  explicit Num(double v) : m_value(v) {}
  double m_value = 0;
};

// A term read from the plan key `key` ("cluster.cuda_context"): the explained evaluation
// records the key and where its value came from (Provenance); the numbers-only one does not.
template <typename V>
V input(const PlanInput& in, std::string_view key, const Text& name, double value,
        const Text& label) {
  if constexpr (V::explained)
    return Expr::input(name, value, label, key, in.provenance.of(key));
  else
    return V::term(name, value, label);
}

// The item lists of each evaluation: line items with their basis, or ids and values.
template <typename V>
using Items = std::conditional_t<V::explained, std::vector<LineItem>, NumItems>;
template <typename V>
using ItemOf = std::conditional_t<V::explained, LineItem, NumItem>;

// An item's label: text, or a callable that makes it (called only when it is shown).
template <typename L>
std::string label_text(L&& label) {
  if constexpr (std::is_invocable_v<L>)
    return std::string(label());
  else
    return std::string(std::forward<L>(label));
}

// Makes a line item from a formula; byte values are rounded to whole bytes in both
// evaluations.
template <typename V, typename L>
ItemOf<V> make(ItemId id, L&& label, Unit unit, const V& e, const char* source,
               Kind kind = Kind::estimated) {
  if constexpr (V::explained) {
    return make_item(id, label_text(std::forward<L>(label)), unit, e, source, kind);
  } else {
    return NumItem{id, unit == Unit::bytes ? std::round(e.value()) : e.value()};
  }
}

template <typename List>
bool has_item(const List& items, ItemId id) {
  for (const auto& i : items)
    if (i.item == id) return true;
  return false;
}

// Appends `from` to `to` (either kind of list).
template <typename List>
void append(List& to, const List& from) {
  for (const auto& i : from) to.push_back(i);
}

}  // namespace trainledger
