// `trainledger check PLAN...`: the CI gate. Exit 0 when every plan fits with the headroom,
// 1 when one does not (or fits by less than the headroom), 2 on invalid input.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <ostream>

#include "app.hpp"
#include "json_parts.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/text.hpp"
#include "trainledger/whatif.hpp"

namespace trainledger::cli {

namespace {

using report::xml_escape;

// ok: fits with the headroom; near: fits by less; over: does not fit; unsure (--strict):
// fits, but the estimate rests on a guess; invalid: the plan could not be read.
enum class Status { ok, near, over, unsure, invalid };

struct Checked {
  std::string name;
  std::vector<std::string> errors;            // invalid plans: every located error, as printed
  std::vector<config::Origin> error_origins;  // and each error's location and message
  std::vector<std::string> error_messages;
  config::LoadedPlan loaded;
  PlanResult plan;
  double limit = 0;
  double capacity = 0;
  Status status = Status::ok;
  std::vector<std::string> warnings;
  std::vector<std::string> guesses;  // of the warnings, what no input states
  bool strict = false;               // check --strict
};

Checked check_one(const CheckOptions& o, const std::string& name, double headroom,
                  double confidence) {
  PlanOptions po;
  po.plan = name;
  po.text = o.text;
  po.sets = o.sets;
  po.calibration = o.calibration;
  po.from = o.from;
  Checked c;
  c.strict = o.strict;
  // A file name is a pull request's text: printable (no newline, escape or invalid UTF-8) in
  // every report of the run.
  c.name = o.text         ? text::printable(o.text->name)
           : name.empty() ? "(default plan)"
           : name == "-"  ? "(stdin)"
                          : text::printable(name);
  c.loaded = load(po);
  // The gate needs the verdict, the worst stage and the fixes, not every stage's ledger: only
  // the stages that can hold the peak are evaluated (the same verdict, bit for bit), so a plan
  // of 65,536 stages is judged in a fraction of a second.
  PlanScope scope;
  scope.every_stage = false;
  c.plan = sound_plan(c.loaded, scope);
  c.capacity = o.capacity.empty() ? static_cast<double>(c.loaded.input.cluster.gpu.memory_bytes)
                                  : config::parse_size_option("--capacity", o.capacity);
  c.limit = c.capacity * (1 - headroom);
  // The verdict against this capacity, and the band's upper end (docs/accuracy.md#bands): a
  // plan fits only when the band does; one whose estimate alone fits is near.
  judge(c.plan, c.capacity, headroom, confidence);
  const double peak = c.plan.verdict.peak_bytes;
  const double high = c.plan.verdict.peak_band.cases > 0 ? c.plan.verdict.peak_band.high : peak;
  // A plan fits only when every GPU and every host does: the host memory per node over
  // cluster.host_memory is OVER, whatever the GPUs say.
  // An RL plan fits only when every phase of its step does (docs/rl.md): the rollout engine's
  // share and KV cache, the log-prob passes, the weight sync.
  c.status = peak > c.capacity || !c.plan.verdict.host_fits || !c.plan.verdict.rl_fits
                 ? Status::over
             : peak > c.limit || high > c.limit ? Status::near
                                                : Status::ok;
  // The GPU fixes, unless only the host is over (they would not help it: offloading more makes
  // it worse; print_details says what does).
  if (c.status != Status::ok && !only_host_over(c.plan.verdict))
    c.plan.fixes = find_fixes(c.plan, band_limit(c.plan.verdict.peak_band, c.limit));
  // The loader's warnings (a guessed architecture, a count that differs from the published
  // one) and the planner's (no activations for a count-only model, step time not computed).
  c.warnings = c.loaded.warnings;
  for (const std::string& w : c.plan.warnings) c.warnings.push_back(text::printable(w));
  c.guesses = c.loaded.guesses;
  for (const std::string& g : c.plan.guesses) c.guesses.push_back(text::printable(g));
  if (o.strict && c.status == Status::ok && !c.guesses.empty()) c.status = Status::unsure;
  // A count-only model has no activations, logits or working memory at all: its peak is the
  // training state alone, a lower bound, never a plain "ok" (--strict or not).
  if (c.status == Status::ok && c.loaded.input.model.count_only) c.status = Status::unsure;
  return c;
}

// The worst stage's ledger: `stages` holds the candidate stages only (PlanScope::every_stage).
const StageMemory& worst_stage(const PlanResult& plan) {
  for (const StageMemory& st : plan.stages)
    if (st.stage == plan.verdict.worst_stage) return st;
  return plan.stages.front();
}

std::string status_text(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::near:
      return "NEAR";
    case Status::over:
      return "OVER";
    case Status::unsure:
      return "UNSURE";
    case Status::invalid:
      return "ERROR";
  }
  return "ERROR";
}

// The exit code of the whole run: invalid input first, then a plan that does not fit, then
// one that rests on a guess (--strict).
int exit_code(const std::vector<Checked>& all) {
  bool invalid = false, failed = false, unsure = false;
  for (const Checked& c : all) {
    invalid = invalid || c.status == Status::invalid;
    failed = failed || c.status == Status::near || c.status == Status::over;
    unsure = unsure || c.status == Status::unsure;
  }
  if (invalid) return k_exit_invalid;
  if (failed) return k_exit_does_not_fit;
  if (unsure) return k_exit_unsure;
  return k_exit_ok;
}

// "4 plans: 2 ok, 1 NEAR, 1 OVER" (only the statuses that occur).
std::string summary_line(const std::vector<Checked>& all) {
  std::string line = fmt::format("{} plan{}:", all.size(), all.size() == 1 ? "" : "s");
  bool first = true;
  for (Status s : {Status::ok, Status::near, Status::over, Status::unsure, Status::invalid}) {
    const auto n =
        std::count_if(all.begin(), all.end(), [s](const Checked& c) { return c.status == s; });
    if (n == 0) continue;
    line += fmt::format("{} {} {}", first ? "" : ",", n, status_text(s));
    first = false;
  }
  return line;
}

// One line of what went wrong, for annotations and JUnit messages.
std::string headline(const Checked& c, double unit, const std::string& u) {
  const Verdict& v = c.plan.verdict;
  switch (c.status) {
    case Status::ok:
      return "fits";
    case Status::near:
      if (v.peak_bytes <= c.limit)
        return fmt::format(
            "fits at the estimate ({:.2f} {}), but its {:.0f} % band reaches {:.2f} {}, over the "
            "limit of {:.2f} {}",
            v.peak_bytes / unit, u, 100 * v.peak_band.confidence, v.peak_band.high / unit, u,
            c.limit / unit, u);
      return fmt::format(
          "fits by only {:.2f} {} ({:.1f} %), less than the headroom (limit {:.2f} {})",
          (c.capacity - v.peak_bytes) / unit, u, 100 * (c.capacity - v.peak_bytes) / c.capacity,
          c.limit / unit, u);
    case Status::over:
      if (!v.rl_fits && v.peak_bytes <= c.capacity && v.host_fits)
        return "does not fit: " + text::printable(c.plan.rl.problem);
      if (v.peak_bytes <= c.capacity)
        return fmt::format(
            "does not fit: the host memory per node needs {:.2f} {} of {:.2f} {} "
            "(cluster.host_memory); the GPUs fit",
            c.plan.host.peak_bytes / unit, u, c.plan.host.capacity_bytes / unit, u);
      return fmt::format("does not fit: stage {} needs {:.2f} {} of {:.2f} {}{}", v.worst_stage,
                         v.peak_bytes / unit, u, c.capacity / unit, u,
                         v.host_fits ? ""
                                     : fmt::format("; the host memory per node {:.2f} {} of "
                                                   "{:.2f} {}",
                                                   c.plan.host.peak_bytes / unit, u,
                                                   c.plan.host.capacity_bytes / unit, u));
    case Status::unsure:
      if (c.plan.input.model.count_only && !c.strict)
        return "fits, but only its training state is counted: a count-only model (model.params) "
               "has no activations; give its architecture (model.preset, model.hf_config or the "
               "shape keys)";
      return fmt::format("fits, but the estimate rests on {} (--strict fails it): {}",
                         c.guesses.size() == 1 ? "a guess" : "guesses", c.guesses.front());
    case Status::invalid:
      return c.errors.empty() ? "invalid plan" : c.errors.front();
  }
  return "";
}

void print_details(const Checked& c, double unit, const std::string& u, double headroom,
                   std::ostream& out) {
  const Verdict& v = c.plan.verdict;
  const StageMemory& st = worst_stage(c.plan);
  const std::string where =
      fmt::format("stage {} ({}), {} phase", st.stage, st.role, to_string(st.peak_phase));
  if (c.status == Status::over && !v.rl_fits && v.peak_bytes <= c.capacity && v.host_fits) {
    // The training phase fits; a phase around it does not (docs/rl.md).
    out << fmt::format("\n{}: does not fit: {}\n", c.name, text::printable(c.plan.rl.problem));
    out << "  memory per GPU by phase:\n";
    for (const RlPhase& ph : c.plan.rl.phases)
      out << fmt::format("    {} ({}): {:.2f} {} of {:.2f} {}{}\n", ph.name, ph.pool,
                         ph.peak_bytes / unit, u, ph.capacity_bytes / unit, u,
                         ph.fits ? "" : "  does NOT fit");
    return;
  }
  if (c.status == Status::over && v.peak_bytes <= c.capacity) {
    // The GPUs fit; the host memory per node does not.
    const HostMemory& h = c.plan.host;
    out << fmt::format(
        "\n{}: does not fit: the host memory per node needs {:.2f} {} of {:.2f} {} "
        "(cluster.host_memory): {:.2f} {} over; the GPUs fit ({:.2f} {} of {:.2f} {} on {})\n",
        c.name, h.peak_bytes / unit, u, h.capacity_bytes / unit, u,
        (h.peak_bytes - h.capacity_bytes) / unit, u, v.peak_bytes / unit, u, c.capacity / unit, u,
        where);
    out << "  host memory per node, largest first:\n";
    for (const std::string& line : report::fix_lines(c.plan, u, unit))
      out << "    " << line << "\n";
    return;
  }
  if (c.status == Status::over) {
    out << fmt::format("\n{}: does not fit: {} needs {:.2f} {} of {:.2f} {}: {:.2f} {} over\n",
                       c.name, where, v.peak_bytes / unit, u, c.capacity / unit, u,
                       (v.peak_bytes - c.capacity) / unit, u);
    if (!v.host_fits)
      out << fmt::format("  and the host memory per node needs {:.2f} {} of {:.2f} {}\n",
                         c.plan.host.peak_bytes / unit, u, c.plan.host.capacity_bytes / unit, u);
  } else if (v.peak_bytes <= c.limit) {
    out << fmt::format(
        "\n{}: fits at the estimate, {:.2f} {} on {}, but its {:.0f} % band ({:.2f}-{:.2f} {}, "
        "family {}, {} reference cases) reaches over the limit of {:.2f} {} "
        "(docs/accuracy.md#bands; --confidence off judges the estimate alone)\n",
        c.name, v.peak_bytes / unit, u, where, 100 * v.peak_band.confidence, v.peak_band.low / unit,
        v.peak_band.high / unit, u, v.peak_band.family, v.peak_band.cases, c.limit / unit, u);
  } else {
    out << fmt::format(
        "\n{}: fits by only {:.2f} {} ({:.1f} %) on {}, less than the {:.0f} % headroom "
        "(limit {:.2f} {})\n",
        c.name, (c.capacity - v.peak_bytes) / unit, u,
        100 * (c.capacity - v.peak_bytes) / c.capacity, where, headroom * 100, c.limit / unit, u);
  }
  out << fmt::format("  largest contributors on stage {}:\n", st.stage);
  for (const Fix& s : c.plan.fixes) {
    std::string advice = "no single knob shrinks it";
    if (s.change)
      advice = fmt::format("{} frees {:.2f} {} on stage {}{}", report::change_text(*s.change),
                           s.freed_bytes / unit, u, st.stage, s.then_fits ? " (then it fits)" : "");
    out << fmt::format("    {:<26} {:>9.2f} {}  → {}\n", info(s.item).name, s.bytes / unit, u,
                       advice);
  }
  // The same closing lines as the plan's reports: where to look when no single change fits.
  const std::vector<std::string> lines = report::fix_lines(c.plan, u, unit);
  for (std::size_t i = c.plan.fixes.size(); i < lines.size(); ++i) out << "  " << lines[i] << "\n";
}

nlohmann::ordered_json check_json(const std::vector<Checked>& all, double headroom) {
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  // Byte counts are whole bytes (the JSON contract, docs/json-schema.md).
  auto bytes = [](double b) { return static_cast<std::int64_t>(std::llround(b)); };
  for (const Checked& c : all) {
    if (c.status == Status::invalid) {
      // Each error located: the file (or the option), line and column, and the message; `text`
      // is the line as printed.
      nlohmann::ordered_json errors = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < c.errors.size(); ++i) {
        const bool located = i < c.error_origins.size();
        const config::Origin* at = located ? &c.error_origins[i] : nullptr;
        const auto or_null = [](int n) {
          return n > 0 ? nlohmann::ordered_json(n) : nlohmann::ordered_json(nullptr);
        };
        // An option's error (--set, --capacity) names the option, not a file.
        const bool option = at && (at->what == "option" || at->what == "--set");
        const auto name = [](const std::string& t) {
          return t.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t);
        };
        errors.push_back(
            {{"file", name(at && !option ? at->file : "")},
             {"option", name(option ? (at->what == "--set" ? "--set" : at->file) : "")},
             {"line", or_null(at ? at->line : 0)},
             {"column", or_null(at ? at->column : 0)},
             {"message", located ? c.error_messages[i] : c.errors[i]},
             {"text", c.errors[i]}});
      }
      plans.push_back({{"plan", c.name},
                       {"status", status_text(c.status)},
                       {"fits", false},
                       {"errors", errors}});
      continue;
    }
    const Verdict& v = c.plan.verdict;
    plans.push_back(
        {{"plan", c.name},
         {"status", status_text(c.status)},
         {"fits", c.status == Status::ok},
         {"worst_stage", v.worst_stage},
         {"phase", std::string(to_string(v.phase))},
         {"peak_bytes", bytes(v.peak_bytes)},
         {"capacity_bytes", bytes(c.capacity)},
         {"limit_bytes", bytes(c.limit)},
         {"host_peak_bytes", bytes(c.plan.host.peak_bytes)},
         {"host_capacity_bytes", c.plan.host.capacity_bytes > 0
                                     ? nlohmann::ordered_json(bytes(c.plan.host.capacity_bytes))
                                     : nlohmann::ordered_json(nullptr)},
         {"host_fits", v.host_fits},
         {"peak_band_bytes", v.peak_band.cases > 0 ? nlohmann::ordered_json{bytes(v.peak_band.low),
                                                                            bytes(v.peak_band.high)}
                                                   : nlohmann::ordered_json(nullptr)},
         {"confidence", v.peak_band.confidence},
         {"suggestions", report::fixes_json(c.plan.fixes)},
         {"warnings", c.warnings},
         {"guesses", c.guesses}});
  }
  return {{"schema", "trainledger.check/2"},
          {"headroom", headroom},
          {"summary", summary_line(all)},
          {"exit_code", exit_code(all)},
          {"plans", plans}};
}

// JUnit XML: one test case per plan; a plan that does not fit (or rests on a guess under
// --strict) is a failure, one that could not be read an error.
void print_junit(const std::vector<Checked>& all, double unit, const std::string& u,
                 std::ostream& out) {
  int failures = 0, errors = 0;
  for (const Checked& c : all) {
    if (c.status == Status::invalid) ++errors;
    if (c.status == Status::near || c.status == Status::over || c.status == Status::unsure)
      ++failures;
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << fmt::format(
      "<testsuites name=\"trainledger check\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
      all.size(), failures, errors);
  out << fmt::format(
      "  <testsuite name=\"trainledger check\" tests=\"{}\" failures=\"{}\" errors=\"{}\">\n",
      all.size(), failures, errors);
  for (const Checked& c : all) {
    out << fmt::format("    <testcase classname=\"trainledger.check\" name=\"{}\" file=\"{}\">\n",
                       xml_escape(c.name), xml_escape(c.name));
    std::string details;
    for (const std::string& e : c.errors) details += e + "\n";
    for (const std::string& w : c.warnings) details += "warning: " + w + "\n";
    const std::string message = xml_escape(headline(c, unit, u));
    if (c.status == Status::invalid) {
      out << fmt::format("      <error message=\"{}\" type=\"invalid\">{}</error>\n", message,
                         xml_escape(details));
    } else if (c.status != Status::ok) {
      out << fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", message,
                         status_text(c.status), xml_escape(details));
    } else if (!c.warnings.empty()) {
      out << fmt::format("      <system-out>{}</system-out>\n", xml_escape(details));
    }
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

// GitHub Actions workflow commands: the runner shows them on the pull request's files.
std::string gh_escape(const std::string& text, bool property) {
  std::string out;
  for (char ch : text) {
    if (ch == '%') {
      out += "%25";
    } else if (ch == '\r') {
      out += "%0D";
    } else if (ch == '\n') {
      out += "%0A";
    } else if (property && ch == ':') {
      out += "%3A";
    } else if (property && ch == ',') {
      out += "%2C";
    } else {
      out += ch;
    }
  }
  return out;
}

void print_github(const std::vector<Checked>& all, double unit, const std::string& u,
                  std::ostream& out) {
  for (const Checked& c : all) {
    const std::string file = gh_escape(c.name, true);
    if (c.status == Status::invalid) {
      for (std::size_t i = 0; i < c.error_origins.size(); ++i) {
        const config::Origin& o = c.error_origins[i];
        std::string where = "file=" + gh_escape(o.file.empty() ? c.name : o.file, true);
        if (o.line > 0) where += fmt::format(",line={}", o.line);
        if (o.column > 0) where += fmt::format(",col={}", o.column);
        out << fmt::format("::error {},title=trainledger check: invalid plan::{}\n", where,
                           gh_escape(c.error_messages[i], false));
      }
      continue;
    }
    if (c.status != Status::ok)
      out << fmt::format("::error file={},title=trainledger check: {}::{}\n", file,
                         status_text(c.status), gh_escape(headline(c, unit, u), false));
    for (const std::string& w : c.warnings)
      out << fmt::format("::warning file={},title=trainledger check::{}\n", file,
                         gh_escape(w, false));
  }
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "check",
      "CI gate: exit 0 if every plan fits with headroom, 1 if one does not, 2 on bad input, "
      "4 when an estimate rests on a guess (--strict) or counts only the training state");
  sub->add_option("plans", o.plans,
                  "plan files, at least one (\"default\": the embedded default plan)");
  sub->add_option("--set", o.sets, "override a key in every plan (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);  // one value per --set: a plan file after it stays a plan
  sub->add_option("--calibration", o.calibration,
                  "a calibration profile (calibrate import): its measured bandwidths and "
                  "latencies replace assumed ones in every plan (repeatable: a later profile's "
                  "keys win)")
      ->type_name("PROFILE")
      ->allow_extra_args(false);
  add_from_option(*sub, o.from);
  add_color_option(*sub, o.color);
  sub->add_option("--capacity", o.capacity, "memory per GPU, e.g. \"80 GiB\" (default: the GPU's)");
  sub->add_option("--headroom", o.headroom,
                  "share of the capacity to keep free (default 10%); less is a near miss");
  sub->add_option("--confidence", o.confidence,
                  "confidence of the peak's band (default 90%; off: the estimate alone): a plan "
                  "whose band's upper end exceeds the limit is a near miss "
                  "(docs/accuracy.md#bands)");
  sub->add_flag("--strict", o.strict,
                "fail (status UNSURE, exit 4) a plan that fits but rests on a guess: a "
                "config.json of unknown model_type, a count-only model, a link with no bandwidth");
  sub->add_option("--format", o.format,
                  "table (default), json, junit (JUnit XML) or github (the table and GitHub "
                  "Actions annotations)")
      ->check(CLI::IsMember({"table", "json", "junit", "github"}));
  sub->add_option("--units", o.units, "gib (default) or gb")->check(CLI::IsMember({"gib", "gb"}));
  return sub;
}

int run_check(const CheckOptions& o, std::ostream& out, std::ostream& err) {
  const double headroom = config::parse_share_option("--headroom", o.headroom);
  const double confidence = config::parse_confidence_option(o.confidence);
  if (!o.capacity.empty()) config::parse_size_option("--capacity", o.capacity);
  if (o.plans.empty() && !o.text) {
    // A CI step whose glob matched nothing must not pass.
    err << "trainledger check: no plan files given (a glob that matched nothing?)\n"
           "usage: trainledger check PLAN... [--set ...] [--capacity SIZE] [--headroom 10%]\n"
           "       trainledger check default   checks the embedded default plan\n";
    return k_exit_invalid;
  }
  std::vector<Checked> all;
  // Every plan is checked and reported, broken ones included; their errors go to stderr.
  // A plan given as text (the Python module) is the one plan checked.
  const std::vector<std::string> names = o.text ? std::vector<std::string>{o.text->name} : o.plans;
  for (const std::string& given : names) {
    std::string name = given;
    if (!o.text && name == "default" && !std::filesystem::exists(name)) name.clear();
    try {
      all.push_back(check_one(o, name, headroom, confidence));
    } catch (const config::ConfigError& e) {
      Checked c;
      c.name = name.empty() ? "(default plan)" : text::printable(name);
      c.status = Status::invalid;
      for (const config::Diagnostic& d : e.diagnostics()) {
        c.errors.push_back(d.to_string());
        config::Origin where = d.origin;
        where.file = text::printable(where.file);
        c.error_origins.push_back(where);
        c.error_messages.push_back(text::printable(d.message));
        err << d.to_string() << "\n";
      }
      all.push_back(std::move(c));
    }
  }
  const bool gib = o.units != "gb";
  const double unit = gib ? k_gib : k_gb;
  const std::string u = gib ? "GiB" : "GB";
  const int code = exit_code(all);
  if (o.format == "json") {
    out << check_json(all, headroom).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    return code;
  }
  if (o.format == "junit") {
    print_junit(all, unit, u, out);
    return code;
  }
  std::size_t w = 4;
  for (const Checked& c : all) w = std::max(w, c.name.size());
  // The status in colour on a terminal (red OVER and ERROR, yellow NEAR and UNSURE, green ok),
  // padded before the escape codes so that the columns stay aligned.
  const bool color = use_color(o.color, o.format == "table");
  const auto status_cell = [&](Status s) {
    const std::string cell = fmt::format("{:<6}", status_text(s));
    if (!color) return cell;
    const char* escape = s == Status::ok                            ? "\033[32m"
                         : s == Status::near || s == Status::unsure ? "\033[33m"
                                                                    : "\033[1;31m";
    const std::string word = status_text(s);
    return escape + word + "\033[0m" + cell.substr(word.size());
  };
  out << fmt::format("{:<{}}  {:<6} {:<18} {:<10} {:>9} {:>9} {:>9}\n", "plan", w, "status",
                     "worst stage", "phase", "peak", "limit", "headroom");
  for (const Checked& c : all) {
    if (c.status == Status::invalid) {
      out << fmt::format("{:<{}}  {} {}\n", c.name, w, status_cell(c.status),
                         "invalid plan (errors on stderr)");
      continue;
    }
    const Verdict& v = c.plan.verdict;
    const StageMemory& st = worst_stage(c.plan);
    out << fmt::format("{:<{}}  {} {:<18} {:<10} {:>9.2f} {:>9.2f} {:>8.1f}%\n", c.name, w,
                       status_cell(c.status), fmt::format("stage {} ({})", st.stage, st.role),
                       to_string(v.phase), v.peak_bytes / unit, c.limit / unit,
                       100 * (c.capacity - v.peak_bytes) / c.capacity);
  }
  out << fmt::format("memory per GPU in {}; limit = capacity − {:.0f} % headroom\n", u,
                     headroom * 100);
  for (const Checked& c : all)
    if (c.status == Status::near || c.status == Status::over)
      print_details(c, unit, u, headroom, out);
  // Warnings follow, each plan's guesses marked as such (what --strict fails on).
  if (o.format != "github")
    for (const Checked& c : all)
      for (const std::string& text : c.warnings) {
        const bool guess = std::find(c.guesses.begin(), c.guesses.end(), text) != c.guesses.end();
        out << c.name << (guess ? ": warning (guess): " : ": warning: ") << text << "\n";
      }
  out << summary_line(all) << "\n";
  if (o.format == "github") print_github(all, unit, u, out);
  return code;
}

}  // namespace trainledger::cli
