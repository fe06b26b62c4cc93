#include "format.hpp"
#include "trainledger/text.hpp"

#include <fmt/format.h>

#include <cmath>

namespace trainledger::report {

std::string memory_unit_name(MemUnits u) { return u == MemUnits::gib ? "GiB" : "GB"; }

std::string format_memory(double bytes, MemUnits u) {
  const double v = bytes / (u == MemUnits::gib ? k_gib : k_gb);
  return fmt::format("{:.2f}", v);
}

std::string memory_with_unit(double bytes, MemUnits u) {
  return format_memory(bytes, u) + " " + memory_unit_name(u);
}

std::string format_count(double n) {
  const double a = std::fabs(n);
  if (a >= 1e12) return fmt::format("{:.2f} T", n / 1e12);
  if (a >= 1e9) return fmt::format("{:.2f} B", n / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f} M", n / 1e6);
  if (a >= 1e4) return fmt::format("{:.1f} K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

std::string format_percent(double fraction) { return fmt::format("{:.1f} %", fraction * 100.0); }

std::string format_duration(double s) {
  if (s == 0) return "0 s";
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.2f} s", s);
  if (s < 7200) return fmt::format("{:.1f} min", s / 60);
  if (s < 3 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::string format_item_value(const LineItem& item, MemUnits u) {
  switch (item.unit) {
    case Unit::bytes:
      return memory_with_unit(item.value, u);
    case Unit::seconds:
      return format_duration(item.value);
    case Unit::fraction:
      return format_percent(item.value);
    case Unit::flop:
      return fmt::format("{:.3g} FLOP", item.value);
    case Unit::flop_per_s:
      return fmt::format("{:.1f} TFLOP/s", item.value / 1e12);
    case Unit::bytes_per_s:
      return fmt::format("{:.1f} GB/s", item.value / 1e9);
    case Unit::count:
      return format_count(item.value);
    case Unit::tokens_per_s:
      return fmt::format("{:.0f} tokens/s", item.value);
  }
  return "?";
}

std::string change_text(const Change& c) {
  std::string out;
  for (const Edit& e : c) {
    const std::string_view key = key_of(e.knob);
    const std::string name(key.substr(key.find('.') + 1));
    const bool numeric = knob_is_count(e.knob);
    if (!out.empty()) out += ", ";
    out += numeric ? fmt::format("{} {} → {}", name, e.from, e.to)
                   : fmt::format("{} = {}", name, knob_text(e.knob, e.to));
  }
  return out;
}

std::string lever_effect(const Lever& l, MemUnits u) {
  std::string s;
  bool sets_batch = false;
  for (const Edit& e : l.change) sets_batch = sets_batch || e.knob == Knob::global_batch;
  if (l.global_batch_after != l.global_batch_before && !sets_batch)
    s += fmt::format("global batch {} → {}, ", l.global_batch_before, l.global_batch_after);
  if (l.grad_accum_after != l.grad_accum_before)
    s += fmt::format("grad accum {} → {}, ", l.grad_accum_before, l.grad_accum_after);
  if (l.bubble_after < l.bubble_before - 0.001)
    s += fmt::format("bubble {:.1f} % → {:.1f} %, ", 100 * l.bubble_before, 100 * l.bubble_after);
  bool numerics = false;
  for (const Edit& e : l.change) numerics = numerics || e.knob == Knob::precision;
  return s + fmt::format("{:.0f} → {:.0f} tokens/s per GPU (+{:.1f} %), peak {}{}",
                         l.throughput_before, l.throughput_after,
                         100 * (l.throughput_after / l.throughput_before - 1),
                         memory_with_unit(l.peak_bytes, u),
                         numerics ? "; the GEMMs' numerics change (docs/formulas.md#recipes)" : "");
}

std::string xml_escape(const std::string& text) { return text::xml(text); }

}  // namespace trainledger::report
