#include "trainledger/expr.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

namespace trainledger {

namespace {

std::string with_separators(long long v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3 + 1);
  if (v < 0) out += '-';
  const std::size_t first = digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  out.append(digits, 0, first);
  for (std::size_t i = first; i < digits.size(); i += 3) {
    out += ',';
    out.append(digits, i, 3);
  }
  return out;
}

void merge_terms(std::vector<Term>& into, const std::vector<Term>& from) {
  for (const Term& t : from) {
    bool duplicate = false;
    int same_key = 0;
    for (const Term& have : into) {
      if (have.key == t.key && have.value == t.value) duplicate = true;
      const bool numbered = have.key.size() > t.key.size() &&
                            have.key.compare(0, t.key.size(), t.key) == 0 &&
                            have.key[t.key.size()] == '_';
      if (have.key == t.key || numbered) ++same_key;
    }
    if (duplicate) continue;
    Term copy = t;
    if (same_key > 0) copy.key += "_" + std::to_string(same_key + 1);
    into.push_back(std::move(copy));
  }
}

}  // namespace

std::string format_number(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return with_separators(static_cast<long long>(v));
  std::string s = fmt::format("{:.6g}", v);
  return s;
}

Expr::Expr(double value, std::string text, std::vector<Term> terms, Prec prec)
    : m_value(value), m_text(std::move(text)), m_terms(std::move(terms)), m_prec(prec) {}

std::string Text::str() const {
  std::string out;
  out.reserve(m_a.size() + m_b.size() + m_c.size() + m_d.size());
  out.append(m_a).append(m_b).append(m_c).append(m_d);
  return out;
}

Expr Expr::term(Text key, double value, Text label) {
  std::string text = format_number(value);
  std::string label_text = label.str();
  if (!label_text.empty()) text += " " + label_text;
  return Expr(value, std::move(text),
              {Term{key.str(), value, std::move(label_text), {}, Source::default_value}},
              Prec::atom);
}

Expr Expr::input(Text key, double value, Text label, std::string_view input, Source source) {
  Expr e = term(key, value, label);
  e.m_terms.front().input = std::string(input);
  e.m_terms.front().source = source;
  return e;
}

Expr Expr::constant(double value) { return Expr(value, format_number(value), {}, Prec::atom); }

void Expr::append_wrapped(std::string& out, Prec needed) const {
  if (static_cast<int>(m_prec) >= static_cast<int>(needed)) {
    out += m_text;
    return;
  }
  out += '(';
  out += m_text;
  out += ')';
}

Expr Expr::combine(Expr a, const Expr& b, std::string_view op, double value, Prec prec) {
  Prec right_needed = prec;
  if (op == " - ") right_needed = Prec::product;
  if (op == " / ") right_needed = Prec::atom;
  if (static_cast<int>(a.m_prec) < static_cast<int>(prec)) {
    a.m_text.insert(a.m_text.begin(), '(');
    a.m_text += ')';
  }
  a.m_text.reserve(a.m_text.size() + op.size() + b.m_text.size() + 2);
  a.m_text += op;
  b.append_wrapped(a.m_text, right_needed);
  merge_terms(a.m_terms, b.m_terms);
  a.m_value = value;
  a.m_prec = prec;
  return a;
}

Expr operator+(Expr a, const Expr& b) {
  const double v = a.m_value + b.m_value;
  return Expr::combine(std::move(a), b, " + ", v, Expr::Prec::sum);
}
Expr operator-(Expr a, const Expr& b) {
  const double v = a.m_value - b.m_value;
  return Expr::combine(std::move(a), b, " - ", v, Expr::Prec::sum);
}
Expr operator*(Expr a, const Expr& b) {
  const double v = a.m_value * b.m_value;
  return Expr::combine(std::move(a), b, " × ", v, Expr::Prec::product);
}
Expr operator/(Expr a, const Expr& b) {
  const double v = b.m_value == 0 ? 0 : a.m_value / b.m_value;
  return Expr::combine(std::move(a), b, " / ", v, Expr::Prec::product);
}

Expr Expr::min(const Expr& a, const Expr& b) {
  Expr e = combine(a, b, ", ", std::fmin(a.m_value, b.m_value), Prec::sum);
  return Expr(e.m_value, "min(" + e.m_text + ")", e.m_terms, Prec::atom);
}

Expr Expr::sqrt(const Expr& a) {
  double v = a.m_value > 0 ? std::sqrt(a.m_value) : 0;
  return Expr(v, "√(" + a.m_text + ")", a.m_terms, Prec::atom);
}

Expr Expr::note(std::string_view text) const {
  std::string out;
  out.reserve(m_text.size() + text.size() + 5);
  append_wrapped(out, Prec::product);
  out += " (";
  out += text;
  out += ')';
  return Expr(m_value, std::move(out), m_terms, Prec::product);
}

}  // namespace trainledger
