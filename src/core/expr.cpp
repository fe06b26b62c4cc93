#include "trainledger/expr.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

namespace trainledger {

namespace {

std::string with_separators(long long v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count > 0 && count % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return v < 0 ? "-" + out : out;
}

void merge_terms(std::vector<Term>& into, const std::vector<Term>& from) {
  for (const Term& t : from) {
    bool duplicate = false;
    int same_key = 0;
    for (const Term& have : into) {
      if (have.key == t.key && have.value == t.value) duplicate = true;
      if (have.key == t.key || have.key.rfind(t.key + "_", 0) == 0) ++same_key;
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

Expr Expr::term(std::string key, double value, std::string label) {
  std::string text = format_number(value);
  if (!label.empty()) text += " " + label;
  return Expr(value, std::move(text), {Term{std::move(key), value, std::move(label)}}, Prec::atom);
}

Expr Expr::constant(double value) { return Expr(value, format_number(value), {}, Prec::atom); }

std::string Expr::wrapped(Prec needed) const {
  if (static_cast<int>(m_prec) >= static_cast<int>(needed)) return m_text;
  return "(" + m_text + ")";
}

Expr Expr::combine(const Expr& a, const Expr& b, std::string_view op, double value, Prec prec) {
  Prec right_needed = prec;
  if (op == " - ") right_needed = Prec::product;
  if (op == " / ") right_needed = Prec::atom;
  std::string text = a.wrapped(prec) + std::string(op) + b.wrapped(right_needed);
  std::vector<Term> terms = a.m_terms;
  merge_terms(terms, b.m_terms);
  return Expr(value, std::move(text), std::move(terms), prec);
}

Expr operator+(const Expr& a, const Expr& b) {
  return Expr::combine(a, b, " + ", a.m_value + b.m_value, Expr::Prec::sum);
}
Expr operator-(const Expr& a, const Expr& b) {
  return Expr::combine(a, b, " - ", a.m_value - b.m_value, Expr::Prec::sum);
}
Expr operator*(const Expr& a, const Expr& b) {
  return Expr::combine(a, b, " × ", a.m_value * b.m_value, Expr::Prec::product);
}
Expr operator/(const Expr& a, const Expr& b) {
  double v = b.m_value == 0 ? 0 : a.m_value / b.m_value;
  return Expr::combine(a, b, " / ", v, Expr::Prec::product);
}

Expr Expr::max(const Expr& a, const Expr& b) {
  Expr e = combine(a, b, ", ", std::fmax(a.m_value, b.m_value), Prec::sum);
  return Expr(e.m_value, "max(" + e.m_text + ")", e.m_terms, Prec::atom);
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
  return Expr(m_value, wrapped(Prec::product) + " (" + std::string(text) + ")", m_terms,
              Prec::product);
}

}  // namespace trainledger
