// `trainledger sweep PLAN --vary KEY=V1,V2,... [--vary ...]`: the plan at every point of a grid
// of one or more knobs, each point loaded and validated like `plan --set KEY=V`, with the
// quantities asked for (docs/cli.md#sweep).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <ostream>

#include "app.hpp"
#include "format.hpp"
#include "items_cli.hpp"
#include "trainledger/report.hpp"

namespace trainledger::cli {

namespace {

// A CSV field (RFC 4180): as is, quoted only when it holds a comma, a quote or a line break, a
// TOML string's own quotes dropped ("full" is full), so numbers stay numbers in a spreadsheet.
std::string csv_field(std::string v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// A quantity in its base unit, as a plain number: bytes whole, no exponent.
std::string csv_number(const Quantity& item) {
  const double v = item.value;
  if (!std::isfinite(v)) return "";
  if (item.unit == Unit::bytes || (v == std::floor(v) && std::fabs(v) < 9e15))
    return fmt::format("{:.0f}", std::round(v));
  std::string s = fmt::format("{:.9g}", v);
  if (s.find('e') == std::string::npos) return s;
  s = fmt::format("{:.15f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

struct Axis {
  std::string key;
  std::vector<std::string> values;
};

// KEY=V1,V2,...: commas split the values outside brackets and quotes.
Axis axis_of(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw config::ConfigError({config::Diagnostic{config::Origin{"--vary", 0, 0, "option"},
                                                  "\"" + text + "\": expected KEY=V1,V2,..."}});
  Axis a{text.substr(0, eq), {}};
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (const char c : text.substr(eq + 1)) {
    if (c == '"') quoted = !quoted;
    if (!quoted && c == '[') ++depth;
    if (!quoted && c == ']') --depth;
    if (c == ',' && depth == 0 && !quoted) {
      a.values.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  a.values.push_back(cur);
  return a;
}

struct Point {
  std::vector<std::string> values;  // one per axis
  std::optional<PlanResult> plan;
  std::string error;  // the loader's first message when the point is not a valid plan
  std::vector<std::optional<Quantity>> shown;
};

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "sweep", "The plan over a grid of one or more knobs: chosen quantities at every point");
  add_plan_options(*sub, o.plan);
  sub->add_option("--vary", o.vary,
                  "a knob and its values: --vary training.seq_len=2048,4096,8192 (repeatable: "
                  "the grid is every combination)")
      ->type_name("KEY=V1,V2")
      ->required();
  sub->add_option("--show", o.show,
                  "quantities, comma-separated: peak, fits, or item ids (default: peak, fits, "
                  "time.step, throughput.tokens_per_s_per_gpu, mfu)");
  sub->add_option("--format", o.format,
                  "table (default), json, csv or svg (the first quantity against the first knob, "
                  "one line per value of the second)")
      ->check(CLI::IsMember({"table", "json", "csv", "svg"}));
  return sub;
}

int run_sweep(const SweepOptions& o, std::ostream& out, std::ostream& err) {
  std::vector<Axis> axes;
  for (const std::string& v : o.vary) {
    axes.push_back(axis_of(v));
    // One axis per key: a key varied twice would set it twice at each point, the last --set
    // winning, and the grid would repeat itself.
    for (std::size_t a = 0; a + 1 < axes.size(); ++a)
      if (axes[a].key == axes.back().key)
        throw config::ConfigError({config::Diagnostic{
            config::Origin{"--vary", 0, 0, "option"},
            fmt::format("{} is varied twice (--vary {}=... and --vary {}): list its values in one "
                        "--vary",
                        axes.back().key, axes[a].key, v)}});
  }
  std::vector<std::string> show;
  {
    std::string cur;
    for (const char c : o.show + ",") {
      if (c == ',') {
        if (!cur.empty()) show.push_back(cur);
        cur.clear();
      } else if (c != ' ') {
        cur += c;
      }
    }
  }
  if (show.empty()) show = {"peak", "fits", "time.step", "throughput.tokens_per_s_per_gpu", "mfu"};
  for (const std::string& s : show)
    if (s != "peak" && s != "fits" && !item_by_name(s))
      throw config::ConfigError(
          {config::Diagnostic{config::Origin{"--show", 0, 0, "option"},
                              "unknown quantity \"" + s +
                                  "\" (peak, fits, or an item id: trainledger plan --format "
                                  "json lists them)"}});
  // The grid's size, checked as it grows: many axes of many values overflow a size_t.
  std::size_t total = 1;
  for (const Axis& a : axes)
    if (__builtin_mul_overflow(total, a.values.size(), &total) || total > 10000)
      throw config::ConfigError({config::Diagnostic{
          config::Origin{"--vary", 0, 0, "option"},
          "more than 10000 points (the product of the values of every --vary): at most 10000"}});
  std::vector<Point> points;
  for (std::size_t n = 0; n < total; ++n) {
    Point p;
    PlanOptions po = o.plan;
    std::size_t rest = n;
    for (std::size_t a = axes.size(); a-- > 0;) {
      const std::string& v = axes[a].values[rest % axes[a].values.size()];
      rest /= axes[a].values.size();
      p.values.insert(p.values.begin(), v);
    }
    for (std::size_t a = 0; a < axes.size(); ++a)
      po.sets.push_back(axes[a].key + "=" + p.values[a]);
    try {
      const config::LoadedPlan loaded = load(po);
      p.plan = sound_plan(loaded);
      for (const std::string& s : show) p.shown.push_back(quantity(*p.plan, s));
    } catch (const config::ConfigError& e) {
      p.error = e.diagnostics().empty() ? "invalid" : e.diagnostics().front().to_string();
      const std::string prefix = "trainledger: error: ";
      if (p.error.rfind(prefix, 0) == 0) p.error = p.error.substr(prefix.size());
    }
    points.push_back(std::move(p));
  }
  int invalid = 0;
  for (const Point& p : points) invalid += p.plan ? 0 : 1;
  if (o.format == "json") {
    nlohmann::json j;
    j["schema"] = "trainledger.sweep/1";
    j["vary"] = nlohmann::json::array();
    for (const Axis& a : axes) j["vary"].push_back({{"key", a.key}, {"values", a.values}});
    j["show"] = show;
    j["points"] = nlohmann::json::array();
    for (const Point& p : points) {
      nlohmann::json q;
      for (std::size_t a = 0; a < axes.size(); ++a) q["set"][axes[a].key] = p.values[a];
      if (!p.plan) {
        q["error"] = p.error;
      } else {
        for (std::size_t s = 0; s < show.size(); ++s) q["values"][show[s]] = p.shown[s]->value;
      }
      j["points"].push_back(q);
    }
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (o.format == "svg") {
    // The first quantity against the first knob's values (their numbers, else their rank), one
    // line per value of the second knob; bytes in GiB.
    auto number = [](const std::string& v, double fallback) {
      try {
        std::size_t used = 0;
        const double d = std::stod(v, &used);
        return used == v.size() ? d : fallback;
      } catch (const std::exception&) {
        return fallback;
      }
    };
    std::map<std::string, report::Series> lines;
    std::vector<std::string> order;
    for (std::size_t n = 0; n < points.size(); ++n) {
      const Point& p = points[n];
      const std::string name = axes.size() > 1 ? axes[1].key + " = " + p.values[1] : show.front();
      if (!lines.count(name)) order.push_back(name);
      report::Series& se = lines[name];
      se.name = name;
      se.x.push_back(number(p.values[0], static_cast<double>(se.x.size())));
      double y = std::numeric_limits<double>::quiet_NaN();
      if (p.plan) {
        y = p.shown.front()->value;
        if (p.shown.front()->unit == Unit::bytes) y /= 1024.0 * 1024.0 * 1024.0;
      }
      se.y.push_back(y);
    }
    std::vector<report::Series> series;
    for (const std::string& name : order) series.push_back(lines[name]);
    std::string y_label = show.front();
    for (const Point& p : points)
      if (p.plan) {
        if (p.shown.front()->unit == Unit::bytes) y_label += " (GiB)";
        if (p.shown.front()->unit == Unit::seconds) y_label += " (s)";
        break;
      }
    // Peak memory against the capacity (one line when every point has the same GPU).
    std::vector<report::Guide> guides;
    if (show.front() == "peak") {
      std::optional<double> capacity;
      bool one = true;
      for (const Point& p : points)
        if (p.plan) {
          const double c = static_cast<double>(p.plan->input.cluster.gpu.memory_bytes);
          one = one && (!capacity || *capacity == c);
          capacity = c;
        }
      if (capacity && one)
        guides.push_back(
            {*capacity / (1024.0 * 1024.0 * 1024.0),
             fmt::format("capacity {:.1f} GiB", *capacity / (1024.0 * 1024.0 * 1024.0)), false});
    }
    out << report::lines_svg("chart-sweep",
                             fmt::format("{} over {}", show.front(), axes.front().key),
                             axes.front().key, y_label, series, guides);
  } else if (o.format == "csv") {
    std::vector<std::string> head;
    for (const Axis& a : axes) head.push_back(a.key);
    for (const std::string& s : show) head.push_back(s);
    head.push_back("error");
    out << fmt::format("{}\n", fmt::join(head, ","));
    for (const Point& p : points) {
      std::vector<std::string> row;
      for (const std::string& v : p.values) row.push_back(csv_field(v));
      for (std::size_t s = 0; s < show.size(); ++s)
        row.push_back(p.plan ? csv_number(*p.shown[s]) : "");
      row.push_back(p.plan ? "" : csv_field(p.error));
      out << fmt::format("{}\n", fmt::join(row, ","));
    }
  } else {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head;
    for (const Axis& a : axes) head.push_back(a.key);
    for (const std::string& s : show) head.push_back(s);
    rows.push_back(head);
    for (const Point& p : points) {
      std::vector<std::string> row = p.values;
      for (std::size_t s = 0; s < show.size(); ++s) {
        if (!p.plan) {
          row.push_back(s == 0 ? "invalid" : "");
        } else if (show[s] == "fits") {
          row.push_back(p.shown[s]->value > 0 ? "yes" : "NO");
        } else {
          row.push_back(quantity_text(*p.shown[s]));
        }
      }
      rows.push_back(row);
    }
    std::vector<std::size_t> width(head.size(), 0);
    for (const auto& r : rows)
      for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    for (const auto& r : rows) {
      std::string line;
      for (std::size_t c = 0; c < r.size(); ++c)
        line += c < axes.size() ? fmt::format("{:<{}}  ", r[c], width[c])
                                : fmt::format("{:>{}}  ", r[c], width[c]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
    for (const Point& p : points)
      if (!p.plan)
        err << fmt::format("trainledger: sweep: {}: {}\n", fmt::join(p.values, ", "), p.error);
  }
  return invalid == static_cast<int>(points.size()) ? k_exit_invalid : k_exit_ok;
}

}  // namespace trainledger::cli
