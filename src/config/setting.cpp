#include "setting.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trainledger::config {

namespace {

class Converter {
 public:
  Converter(const KeySpec& spec, const Value& v, std::vector<Diagnostic>& errors)
      : m_spec(spec), m_v(v), m_errors(errors) {}

  std::optional<Setting> run() {
    Setting s;
    s.spec = &m_spec;
    s.origin = m_v.origin;
    s.display = m_v.to_text();
    if (!convert(s)) return std::nullopt;
    return s;
  }

 private:
  bool fail(const std::string& message) {
    m_errors.push_back(Diagnostic{m_v.origin, m_spec.full_name() + ": " + message});
    return false;
  }

  bool wrong_type() {
    return fail(fmt::format("expected {}, got {} ({})", type_description(m_spec), m_v.type_name(),
                            m_v.to_text()));
  }

  bool in_range(double x, const std::string& shown) {
    if (!std::isfinite(x)) return fail(fmt::format("{} is not a finite number", shown));
    const bool low = m_spec.min_exclusive ? x <= m_spec.min : x < m_spec.min;
    if (low) {
      return fail(fmt::format("{} must be {} {}", shown,
                              m_spec.min_exclusive ? "greater than" : "at least",
                              fmt::format("{:g}", m_spec.min)));
    }
    if (m_spec.max > 0 && x > m_spec.max)
      return fail(fmt::format("{} is out of range (at most {:g})", shown, m_spec.max));
    return true;
  }

  bool check_choice(const std::string& s) {
    for (std::string_view c : m_spec.choices)
      if (c == s) return true;
    std::vector<std::string> cands(m_spec.choices.begin(), m_spec.choices.end());
    std::string hint;
    if (auto best = closest(s, cands)) hint = fmt::format(" (did you mean \"{}\"?)", *best);
    return fail(fmt::format("\"{}\" is not {}{}", s, type_description(m_spec), hint));
  }

  bool quantity(const Value& v, QuantityKind kind, double& out) {
    if (v.type != Value::Type::string) {
      if (v.type == Value::Type::integer || v.type == Value::Type::floating)
        return fail(
            fmt::format("{} has no unit; write it as a string with one, e.g. {} (units: {})",
                        v.to_text(), example_quantity(kind), accepted_units(kind)));
      return wrong_type();
    }
    QuantityResult q = parse_quantity(v.string, kind);
    if (!q.value) return fail(q.error);
    out = *q.value;
    return in_range(out, v.to_text());
  }

  bool convert(Setting& s) {
    switch (m_spec.type) {
      case KeyType::integer:
        if (m_v.type != Value::Type::integer) return wrong_type();
        if (!in_range(static_cast<double>(m_v.integer), m_v.to_text())) return false;
        s.value = m_v.integer;
        return true;
      case KeyType::number: {
        double x = 0;
        if (m_v.type == Value::Type::integer)
          x = static_cast<double>(m_v.integer);
        else if (m_v.type == Value::Type::floating)
          x = m_v.floating;
        else
          return wrong_type();
        if (!in_range(x, m_v.to_text())) return false;
        s.value = x;
        return true;
      }
      case KeyType::boolean:
        if (m_v.type != Value::Type::boolean) return wrong_type();
        s.value = m_v.boolean;
        return true;
      case KeyType::text:
        if (m_v.type != Value::Type::string) return wrong_type();
        if (m_v.string.empty()) return fail("must not be empty");
        s.value = m_v.string;
        return true;
      case KeyType::choice:
        if (m_v.type != Value::Type::string) return wrong_type();
        if (!check_choice(m_v.string)) return false;
        s.value = m_v.string;
        return true;
      case KeyType::quantity: {
        double x = 0;
        if (!quantity(m_v, m_spec.quantity, x)) return false;
        s.value = x;
        return true;
      }
      case KeyType::count: {
        double x = 0;
        if (m_v.type == Value::Type::integer)
          x = static_cast<double>(m_v.integer);
        else if (m_v.type == Value::Type::floating)
          x = m_v.floating;
        else if (m_v.type == Value::Type::string) {
          QuantityResult q = parse_quantity(m_v.string, QuantityKind::count);
          if (!q.value) return fail(q.error);
          x = *q.value;
        } else {
          return wrong_type();
        }
        if (!in_range(x, m_v.to_text())) return false;
        s.value = x;
        return true;
      }
      case KeyType::int_list: {
        if (m_v.type != Value::Type::array) return wrong_type();
        std::vector<std::int64_t> out;
        for (const Value& item : m_v.items) {
          if (item.type != Value::Type::integer) return wrong_type();
          if (!in_range(static_cast<double>(item.integer), item.to_text())) return false;
          out.push_back(item.integer);
        }
        s.value = out;
        return true;
      }
      case KeyType::choice_list: {
        if (m_v.type != Value::Type::array) return wrong_type();
        std::vector<std::string> out;
        for (const Value& item : m_v.items) {
          if (item.type != Value::Type::string) return wrong_type();
          if (!check_choice(item.string)) return false;
          out.push_back(item.string);
        }
        if (out.empty()) return fail("must not be empty");
        s.value = out;
        return true;
      }
      case KeyType::flops_table:
        return flops_table(s);
      case KeyType::zero_stage:
        if (m_v.type == Value::Type::string && m_v.string == "fsdp") {
          s.value = std::int64_t{3};
          return true;
        }
        if (m_v.type != Value::Type::integer) return wrong_type();
        if (m_v.integer < 0 || m_v.integer > 3)
          return fail(fmt::format("{} is not a ZeRO stage (0, 1, 2, 3 or \"fsdp\")", m_v.integer));
        s.value = m_v.integer;
        return true;
    }
    return wrong_type();
  }

  bool flops_table(Setting& s) {
    if (m_v.type != Value::Type::table) return wrong_type();
    PeakFlops pf;
    bool ok = true;
    for (std::size_t i = 0; i < m_v.fields.size(); ++i) {
      const auto& [name, value] = m_v.fields[i];
      double x = 0;
      double* slot = name == "fp32"   ? &pf.fp32
                     : name == "tf32" ? &pf.tf32
                     : name == "bf16" ? &pf.bf16
                     : name == "fp16" ? &pf.fp16
                     : name == "fp8"  ? &pf.fp8
                     : name == "fp6"  ? &pf.fp6
                     : name == "fp4"  ? &pf.fp4
                                      : nullptr;
      if (!slot) {
        m_errors.push_back(Diagnostic{
            m_v.key_origins[i],
            fmt::format("{}: unknown dtype \"{}\" (expected fp32, tf32, bf16, fp16, fp8, fp6, fp4)",
                        m_spec.full_name(), name)});
        ok = false;
        continue;
      }
      Converter inner(m_spec, value, m_errors);
      if (!inner.quantity(value, QuantityKind::flops, x)) {
        ok = false;
        continue;
      }
      if (x <= 0) {
        inner.fail(fmt::format("{} must be greater than 0", value.to_text()));
        ok = false;
        continue;
      }
      *slot = x;
    }
    s.value = pf;
    return ok;
  }

  const KeySpec& m_spec;
  const Value& m_v;
  std::vector<Diagnostic>& m_errors;
};

// Parses a default literal from the key table (a tiny subset of TOML).
Value literal(const KeySpec& spec) {
  Value v;
  v.origin = Origin{"", 0, 0, "default"};
  const std::string text(spec.default_text);
  if (text == "true" || text == "false") {
    v.type = Value::Type::boolean;
    v.boolean = text == "true";
  } else if (text.front() == '"') {
    v.type = Value::Type::string;
    v.string = text.substr(1, text.size() - 2);
  } else if (text.front() == '[') {
    v.type = Value::Type::array;
    std::size_t pos = 1;
    while ((pos = text.find('"', pos)) != std::string::npos) {
      const std::size_t end = text.find('"', pos + 1);
      Value item;
      item.type = Value::Type::string;
      item.string = text.substr(pos + 1, end - pos - 1);
      item.origin = v.origin;
      v.items.push_back(item);
      pos = end + 1;
    }
  } else if (text.find_first_of(".eE") != std::string::npos) {
    v.type = Value::Type::floating;
    v.floating = std::stod(text);
  } else {
    v.type = Value::Type::integer;
    v.integer = std::stoll(text);
  }
  return v;
}

}  // namespace

std::optional<Setting> to_setting(const KeySpec& spec, const Value& v,
                                  std::vector<Diagnostic>& errors) {
  return Converter(spec, v, errors).run();
}

std::optional<Setting> default_setting(const KeySpec& spec) {
  if (spec.default_text.empty()) return std::nullopt;
  std::vector<Diagnostic> errors;
  std::optional<Setting> s = to_setting(spec, literal(spec), errors);
  if (s) s->origin = Origin{"", 0, 0, "default"};
  return s;
}

}  // namespace trainledger::config
