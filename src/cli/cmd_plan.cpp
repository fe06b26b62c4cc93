// `trainledger plan`: the ledger of one plan as a table, JSON or Markdown; with --max, the
// largest micro-batch or sequence length that fits.
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>

#include "app.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/search.hpp"
#include "trainledger/text.hpp"
#include "trainledger/whatif.hpp"

namespace trainledger::cli {

namespace {

bool utf8_locale() {
  for (const char* var : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    std::string s(v);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos;
  }
  return false;
}

report::Format format_of(const std::string& f) {
  if (f == "json") return report::Format::json;
  if (f == "markdown") return report::Format::markdown;
  if (f == "html") return report::Format::html;
  if (f == "svg") return report::Format::svg;
  return report::Format::table;
}

int run_max(const PlanOptions& o, const config::LoadedPlan& loaded, std::ostream& out) {
  const MaxKnob knob = o.max == "seq_len" ? MaxKnob::seq_len : MaxKnob::micro_batch;
  const MaxKeep keep = o.keep == "accum" ? MaxKeep::accum : MaxKeep::global_batch;
  const double headroom = config::parse_share_option("--headroom", o.headroom);
  const double limit = static_cast<double>(loaded.input.cluster.gpu.memory_bytes) * (1 - headroom);
  const auto max_value =
      static_cast<std::int64_t>(config::key_max(std::string("training.") + o.max));
  // The band's upper end must fit: the estimate is held to the limit the band leaves.
  const double confidence = config::parse_confidence_option(o.confidence);
  const double held = band_limit(memory_band(loaded.input, 1.0, 0.0, confidence), limit);
  MaxFit fit = find_max(loaded.input, knob, held, keep, max_value);
  judge(fit.plan, 0, headroom, confidence);
  require_sound(fit.plan, loaded);
  const report::Options ro = report_options(o);
  const double unit = ro.units == report::MemUnits::gib ? k_gib : k_gb;
  const std::string u = ro.units == report::MemUnits::gib ? "GiB" : "GB";
  const Verdict& v = fit.plan.verdict;
  std::string line;
  if (fit.found) {
    line = fmt::format("largest {} that fits: {} (peak {:.2f} of {:.2f} {} on stage {}, {} phase",
                       o.max, fit.value, v.peak_bytes / unit, limit / unit, u, v.worst_stage,
                       to_string(v.phase));
    if (fit.next_value > 0)
      line += fmt::format("; {} = {} needs {:.2f} {}", o.max, fit.next_value,
                          fit.next_peak_bytes / unit, u);
    line += fmt::format("; {} plans evaluated)", fit.evaluations);
    // Say what the micro-batch changed and what it kept.
    if (knob == MaxKnob::micro_batch) {
      const TrainingSpec& t = loaded.input.training;
      const std::int64_t per_pass = t.micro_batch * loaded.input.parallel.dp;
      const std::int64_t global = t.global_batch > 0 ? t.global_batch : per_pass;
      const Derived& after = fit.plan.derived;
      line += fit.keep == MaxKeep::global_batch
                  ? fmt::format("\nglobal batch kept at {}: grad accum {} → {}", after.global_batch,
                                global / per_pass, after.grad_accum)
                  : fmt::format("\ngrad accum kept at {}: global batch {} → {}", after.grad_accum,
                                global, after.global_batch);
    }
    line += fmt::format("\nlimit = capacity − {:.0f} % headroom", 100 * headroom);
    if (confidence > 0)
      line +=
          fmt::format("; the {:.0f} % band's upper end within it (the estimate at most {:.2f} {})",
                      100 * confidence, held / unit, u);
  } else {
    line = fmt::format("no {} fits: {} = {} already needs {:.2f} of {:.2f} {}", o.max, o.max,
                       fit.value, v.peak_bytes / unit, limit / unit, u);
    if (confidence > 0 && v.peak_band.cases > 0)
      line += fmt::format(" (its {:.0f} % band reaches {:.2f})", 100 * confidence,
                          v.peak_band.high / unit);
  }
  if (o.format == "json") {
    auto j = nlohmann::ordered_json::parse(report::render_json(fit.plan, loaded.plan_source()));
    j["search"] = {
        {"knob", o.max},
        {"keep",
         knob == MaxKnob::micro_batch && fit.keep == MaxKeep::accum ? "accum" : "global_batch"},
        {"found", fit.found},
        {"value", fit.value},
        {"step", fit.step},
        {"headroom", headroom},
        {"limit_bytes", static_cast<std::int64_t>(std::llround(limit))},
        {"confidence", confidence},
        {"estimate_limit_bytes", static_cast<std::int64_t>(std::llround(held))},
        {"next_value", fit.next_value},
        {"next_peak_bytes", static_cast<std::int64_t>(std::llround(fit.next_peak_bytes))},
        {"evaluations", fit.evaluations}};
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    out << line << "\n\n"
        << report::render(format_of(o.format), fit.plan, loaded.plan_source(), ro);
  }
  return fit.found ? k_exit_ok : k_exit_does_not_fit;
}

}  // namespace

// The terminal's width in columns ($COLUMNS when the terminal does not say; 80 otherwise).
std::size_t terminal_width() {
  winsize ws{};
  if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    std::size_t n = 0;
    const char* end = c + std::strlen(c);
    const auto [ptr, ec] = std::from_chars(c, end, n);
    if (ec == std::errc() && ptr == end && n > 0 && n < 100000) return n;
  }
  return 80;
}

// plan --stage N,M,...: stages of this plan (0 to pp - 1), each once.
std::vector<int> stages_option(const std::string& text, int pp) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string part = text.substr(start, comma - start);
    int n = -1;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || n < 0 || n >= pp)
      throw config::ConfigError({config::Diagnostic{
          config::Origin{"--stage", 0, 0, "option"},
          fmt::format("\"{}\" is not a stage of this plan: give N from 0 to {}, a list N,M, worst "
                      "or all",
                      text::printable(part), pp - 1)}});
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    start = comma + 1;
  }
  return out;
}

CLI::App* add_plan_command(CLI::App& app, PlanOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Per-GPU memory ledger of a plan, stage by stage and phase by phase, with the verdict");
  add_plan_options(*sub, o);
  sub->add_option("--format", o.format,
                  "table (default), json, markdown, html (one self-contained file with charts) "
                  "or svg (one chart: --chart)")
      ->check(CLI::IsMember({"table", "json", "markdown", "html", "svg"}));
  sub->add_flag("--ascii", o.ascii,
                "plain ASCII bars in the table (also when the terminal's locale is not UTF-8); "
                "their colour: --color");
  add_color_option(*sub, o.color);
  sub->add_option("--chart", o.chart,
                  "with --format svg: memory (default), phases (the worst stage at each phase), "
                  "schedule, step, comm, checkpoint; RL plans: rl-timeline (one step lane by "
                  "lane), rl-memory (memory per GPU at each phase)")
      ->check(CLI::IsMember({"memory", "phases", "schedule", "step", "comm", "checkpoint",
                             "rl-timeline", "rl-memory"}));
  sub->add_option("--emit", o.emit,
                  "print the settings that realise the plan in a training stack: a Megatron-LM "
                  "argument list, a DeepSpeed JSON or a torchtitan TOML (the importers read them "
                  "back)")
      ->check(CLI::IsMember({"megatron", "deepspeed", "torchtitan"}));
  sub->add_option("--max", o.max,
                  "find the largest micro_batch or seq_len that fits (bisection over the ledger)")
      ->check(CLI::IsMember({"micro_batch", "seq_len"}));
  sub->add_option("--phase", o.phase,
                  "show every stage's ledger in this phase (init, forward, backward, optimizer, "
                  "checkpoint) instead of at its peak")
      ->check(CLI::IsMember({"init", "forward", "backward", "optimizer", "checkpoint"}));
  sub->add_option("--stage", o.stage,
                  "the memory table of these pipeline stages only: N, N,M,..., worst (the stage "
                  "of the peak) or all (every stage, never folded); by default a pipeline wider "
                  "than the terminal folds to its first, last and worst stages and the range of "
                  "the others");
  sub->add_option("--width", o.width,
                  "the table's width in columns (default: the terminal's, when the output is "
                  "one; 0: no limit)")
      ->check(CLI::Range(0, 100000));
  sub->add_option("--keep", o.keep,
                  "with --max micro_batch: keep the global_batch (default; the accumulation "
                  "follows) or the accum steps (the global batch grows)")
      ->check(CLI::IsMember({"global_batch", "accum"}));
  sub->add_option("--headroom", o.headroom,
                  "share of the GPU memory to keep free (default 10%, as check): the verdict, "
                  "the levers and --max keep it");
  sub->add_option("--confidence", o.confidence,
                  "confidence of the bands on the peak and the step time, and an RL plan's RL step "
                  "(default 90%; off: "
                  "the estimate alone): the verdict fits only when the band's upper end does "
                  "(docs/accuracy.md#bands), and --max holds it");
  return sub;
}

int run_plan(const PlanOptions& o, std::ostream& out, std::ostream& /*err*/) {
  const config::LoadedPlan loaded = load(o);
  if (!o.max.empty()) return run_max(o, loaded, out);
  PlanResult plan = sound_plan(loaded);
  if (!o.emit.empty()) {
    out << report::emit_config(loaded.input, o.emit,
                               fmt::format("{} ({})", loaded.input.model.name, loaded.source));
    return out ? k_exit_ok : k_exit_runtime;
  }
  judge(plan, 0, config::parse_share_option("--headroom", o.headroom),
        config::parse_confidence_option(o.confidence));
  report::Options ro = report_options(o);
  if (!o.phase.empty()) {
    // Every stage's ledger in that phase instead of at its peak; the verdict stays the peak's.
    for (Phase ph :
         {Phase::init, Phase::forward, Phase::backward, Phase::optimizer, Phase::checkpoint}) {
      if (to_string(ph) != o.phase) continue;
      for (StageMemory& st : plan.stages) {
        st.items = phase_ledger(loaded.input, st.stage, ph);
        for (const PhaseTotal& pt : st.phases)
          if (pt.phase == ph) st.peak_bytes = pt.bytes;
        st.fits = st.peak_bytes <= static_cast<double>(loaded.input.cluster.gpu.memory_bytes);
      }
    }
    ro.phase = o.phase;
  }
  plan.levers = find_levers(plan);
  // A plan that does not fit with its headroom (or not at its band's upper end) gets check's
  // fixes; when only the host is over, the reports list the host's items instead.
  const Verdict& v = plan.verdict;
  if (needs_fixes(v) && !only_host_over(v)) {
    const double limit = v.limit_bytes * (1 - std::max(0.0, v.required_headroom));
    plan.fixes = find_fixes(plan, band_limit(v.peak_band, limit));
  }
  ro.chart = o.chart;
  // Bars: Unicode unless asked or the terminal's locale is not UTF-8; colour on a terminal
  // only, and never with NO_COLOR (no-color.org).
  const bool tty = isatty(1) != 0;
  ro.width = o.width >= 0 ? static_cast<std::size_t>(o.width) : tty ? terminal_width() : 0;
  if (o.stage == "all") {
    ro.width = 0;
  } else if (o.stage == "worst") {
    ro.stages = {v.worst_stage};
  } else if (!o.stage.empty()) {
    ro.stages = stages_option(o.stage, loaded.input.parallel.pp);
  }
  ro.ascii = o.ascii || (tty && !utf8_locale());
  ro.color = use_color(o.color, o.format == "table");
  out << report::render(format_of(o.format), plan, loaded.plan_source(), ro);
  return k_exit_ok;
}

}  // namespace trainledger::cli
