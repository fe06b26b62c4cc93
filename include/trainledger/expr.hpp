// Expr: a value and the formula text that produced it, built from the same terms.
//
// Every line item is made from an Expr, so the printed formula cannot disagree with the
// arithmetic: `term("bytes_per_param", 4, "B/param") * term("params", 7e9, "params")` has the
// value 2.8e10 and the text "4 B/param × 7,000,000,000 params".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainledger/units.hpp"

namespace trainledger {

// The text of a term's key or label, given as up to four pieces that are joined only when a
// formula's text is built: a numbers-only evaluation (src/core/formula.hpp) never joins them.
class Text {
 public:
  Text(const char* s) : m_a(s) {}         // NOLINT(google-explicit-constructor)
  Text(std::string_view s) : m_a(s) {}    // NOLINT(google-explicit-constructor)
  Text(const std::string& s) : m_a(s) {}  // NOLINT(google-explicit-constructor)
  Text(std::string_view a, std::string_view b, std::string_view c = {}, std::string_view d = {})
      : m_a(a), m_b(b), m_c(c), m_d(d) {}
  // This text with `prefix` in front ("B " + a tensor's name).
  Text prefixed(std::string_view prefix) const { return Text(prefix, m_a, m_b, m_c); }
  std::string str() const;
  bool empty() const { return m_a.empty() && m_b.empty() && m_c.empty() && m_d.empty(); }

 private:
  std::string_view m_a, m_b, m_c, m_d;
};

// One named input of a formula: its key (for JSON), value and the label printed after it.
// A term read from a plan input also names that key and where its value came from.
struct Term {
  std::string key;
  double value = 0;
  std::string label;
  std::string input;  // the plan key it was read from ("cluster.cuda_context"), or empty
  Source source = Source::default_value;
};

class Expr {
 public:
  // A named input, printed as "<value> <label>".
  static Expr term(Text key, double value, Text label);
  // A term read from the plan key `input`, whose value came from `source`.
  static Expr input(Text key, double value, Text label, std::string_view input, Source source);
  // A pure number that is not an input (e.g. the 2 of 2(n-1)/n); printed as the number.
  static Expr constant(double value);

  double value() const { return m_value; }
  const std::string& text() const { return m_text; }
  const std::vector<Term>& terms() const { return m_terms; }

  // The left operand is taken by value so that chains (a + b + c) extend one buffer.
  friend Expr operator+(Expr a, const Expr& b);
  friend Expr operator-(Expr a, const Expr& b);
  friend Expr operator*(Expr a, const Expr& b);
  friend Expr operator/(Expr a, const Expr& b);

  // Wraps the formula in a named function, e.g. min(a, b) or sqrt(a).
  static Expr min(const Expr& a, const Expr& b);
  static Expr sqrt(const Expr& a);

  // Gives the whole expression a label shown in parentheses after it, e.g. "(ZeRO-1 shard)".
  Expr note(std::string_view text) const;
  // The same with a note made only when the text is wanted (`make` returns a string).
  template <typename F>
  Expr note_with(F&& make) const {
    return note(make());
  }

  // Formulas are templates over their value type: Expr builds text and terms, Num only the
  // number (src/core/formula.hpp).
  static constexpr bool explained = true;

 private:
  enum class Prec { sum = 0, product = 1, atom = 2 };
  Expr(double value, std::string text, std::vector<Term> terms, Prec prec);
  static Expr combine(Expr a, const Expr& b, std::string_view op, double value, Prec prec);
  void append_wrapped(std::string& out, Prec needed) const;

  double m_value = 0;
  std::string m_text;
  std::vector<Term> m_terms;
  Prec m_prec = Prec::atom;
};

// Formats a number as formula text: integers with thousands separators, others with up to
// six significant digits.
std::string format_number(double v);

}  // namespace trainledger
