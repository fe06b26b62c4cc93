// `trainledger check PLAN...`: the CI gate. Exit 0 when every plan fits with the headroom,
// 1 when one does not (or fits by less than the headroom), 2 on invalid input.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <ostream>

#include "app.hpp"
#include "trainledger/plan.hpp"

namespace trainledger::cli {

namespace {

enum class Status { ok, near, over };

struct Knob {
  std::string set;   // "training.recompute=full"
  std::string text;  // "recompute = full"
};

struct Suggestion {
  std::string id;
  double bytes = 0;
  std::string knob;  // "" when no knob helps
  double freed = 0;
  bool then_fits = false;
};

struct Checked {
  std::string name;
  config::LoadedPlan loaded;
  PlanResult plan;
  double limit = 0;
  double capacity = 0;
  Status status = Status::ok;
  std::vector<Suggestion> suggestions;
};

Knob knob(const std::string& key, const std::string& value, bool quoted = false) {
  const std::string name = key.substr(key.find('.') + 1);
  return {key + "=" + (quoted ? "\"" + value + "\"" : value), name + " = " + value};
}

// Knobs that shrink an item, in the order they are tried.
std::vector<Knob> knobs_for(const std::string& id, const PlanInput& in, const StageMemory& st) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  std::vector<Knob> k;
  if (id.rfind("activations", 0) == 0) {
    if (t.recompute != Recompute::full) k.push_back(knob("training.recompute", "full", true));
    if (t.recompute == Recompute::none) k.push_back(knob("training.recompute", "selective", true));
    if (t.attention == Attention::eager) k.push_back(knob("training.attention", "flash", true));
    if (p.tp > 1 && !p.sequence_parallel) k.push_back(knob("parallel.sequence_parallel", "true"));
    if (t.micro_batch > 1 && t.micro_batch % 2 == 0)
      k.push_back(knob("training.micro_batch", std::to_string(t.micro_batch / 2)));
  } else if (id == "logits") {
    k.push_back(knob("training.loss", "chunked", true));
  } else if (id.rfind("optimizer.", 0) == 0 || id == "master") {
    if (p.zero < 1) k.push_back(knob("parallel.zero", "1"));
    if (t.optimizer == Optimizer::adamw)
      k.push_back(knob("training.optimizer", "adamw-8bit", true));
    if (p.zero >= 1 && p.offload == Offload::none)
      k.push_back(knob("parallel.offload", "optimizer", true));
  } else if (id == "grads") {
    if (p.zero < 2) k.push_back(knob("parallel.zero", "2"));
  } else if (id == "params") {
    if (p.zero < 3) k.push_back(knob("parallel.zero", "3"));
  } else if (id == "temporaries") {
    if (st.role == "last" || st.role == "only") k.push_back(knob("training.loss", "chunked", true));
    if (p.zero == 0 && !p.gradient_as_bucket_view)
      k.push_back(knob("parallel.gradient_as_bucket_view", "true"));
    if (p.grad_sync == GradSync::last_micro_batch)
      k.push_back(knob("parallel.grad_sync", "every_micro_batch", true));
  } else if (id == "overhead.nccl") {
    if (in.cluster.nccl_channels > 8) k.push_back(knob("cluster.nccl_channels", "8"));
  }
  return k;
}

std::vector<Suggestion> suggest(const CheckOptions& o, const Checked& c) {
  const StageMemory& st = c.plan.stages[c.plan.worst_stage];
  std::vector<LineItem> items = st.items;
  std::sort(items.begin(), items.end(),
            [](const LineItem& a, const LineItem& b) { return a.value > b.value; });
  std::vector<Suggestion> out;
  for (const LineItem& item : items) {
    if (out.size() == 3) break;
    Suggestion s{item.id, item.value, "", 0, false};
    for (const Knob& k : knobs_for(item.id, c.loaded.input, st)) {
      PlanOptions po;
      po.plan = c.name == "(default plan)" ? "" : c.name;
      po.sets = o.sets;
      po.sets.push_back(k.set);
      try {
        const PlanResult r = compute_plan(load(po).input);
        const double after = r.stages[st.stage].peak_bytes;
        if (st.peak_bytes - after > s.freed) {
          s.freed = st.peak_bytes - after;
          s.knob = k.text;
          s.then_fits = r.verdict.peak_bytes <= c.limit;
        }
      } catch (const config::ConfigError&) {
        // The knob is not valid for this plan (e.g. a divisibility rule); try the next.
      }
    }
    out.push_back(s);
  }
  return out;
}

Checked check_one(const CheckOptions& o, const std::string& name, double headroom) {
  PlanOptions po;
  po.plan = name;
  po.sets = o.sets;
  Checked c;
  c.name = name.empty() ? "(default plan)" : name;
  c.loaded = load(po);
  c.plan = compute_plan(c.loaded.input);
  c.capacity = o.capacity.empty() ? static_cast<double>(c.loaded.input.cluster.gpu.memory_bytes)
                                  : config::parse_size_option("--capacity", o.capacity);
  c.limit = c.capacity * (1 - headroom);
  const double peak = c.plan.verdict.peak_bytes;
  c.status = peak > c.capacity ? Status::over : peak > c.limit ? Status::near : Status::ok;
  if (c.status != Status::ok) c.suggestions = suggest(o, c);
  return c;
}

std::string status_text(Status s) {
  return s == Status::ok ? "ok" : s == Status::near ? "NEAR" : "OVER";
}

void print_details(const Checked& c, double unit, const std::string& u, double headroom,
                   std::ostream& out) {
  const Verdict& v = c.plan.verdict;
  const StageMemory& st = c.plan.stages[v.worst_stage];
  const std::string where =
      fmt::format("stage {} ({}), {} phase", st.stage, st.role, to_string(st.peak_phase));
  if (c.status == Status::over) {
    out << fmt::format("\n{}: does not fit: {} needs {:.2f} {} of {:.2f} {}: {:.2f} {} over\n",
                       c.name, where, v.peak_bytes / unit, u, c.capacity / unit, u,
                       (v.peak_bytes - c.capacity) / unit, u);
  } else {
    out << fmt::format(
        "\n{}: fits by only {:.2f} {} ({:.1f} %) on {}, less than the {:.0f} % headroom "
        "(limit {:.2f} {})\n",
        c.name, (c.capacity - v.peak_bytes) / unit, u,
        100 * (c.capacity - v.peak_bytes) / c.capacity, where, headroom * 100, c.limit / unit, u);
  }
  out << fmt::format("  largest contributors on stage {}:\n", st.stage);
  for (const Suggestion& s : c.suggestions) {
    std::string advice = "no single knob shrinks it";
    if (!s.knob.empty())
      advice = fmt::format("{} frees {:.2f} {} on stage {}{}", s.knob, s.freed / unit, u, st.stage,
                           s.then_fits ? " (then it fits)" : "");
    out << fmt::format("    {:<26} {:>9.2f} {}  → {}\n", s.id, s.bytes / unit, u, advice);
  }
}

nlohmann::ordered_json check_json(const std::vector<Checked>& all, double headroom) {
  nlohmann::ordered_json plans = nlohmann::ordered_json::array();
  for (const Checked& c : all) {
    const Verdict& v = c.plan.verdict;
    nlohmann::ordered_json suggestions = nlohmann::ordered_json::array();
    for (const Suggestion& s : c.suggestions)
      suggestions.push_back({{"id", s.id},
                             {"bytes", s.bytes},
                             {"knob", s.knob},
                             {"freed_bytes", s.freed},
                             {"then_fits", s.then_fits}});
    plans.push_back({{"plan", c.name},
                     {"status", status_text(c.status)},
                     {"fits", c.status == Status::ok},
                     {"worst_stage", v.worst_stage},
                     {"phase", std::string(to_string(v.phase))},
                     {"peak_bytes", v.peak_bytes},
                     {"capacity_bytes", c.capacity},
                     {"limit_bytes", c.limit},
                     {"suggestions", suggestions}});
  }
  return {{"schema", "trainledger.check/1"}, {"headroom", headroom}, {"plans", plans}};
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "check",
      "CI gate: exit 0 if every plan fits with headroom, 1 if one does not, 2 on bad input");
  sub->add_option("plans", o.plans, "plan files (default: the embedded default plan)");
  sub->add_option("--set", o.sets, "override a key in every plan (repeatable)")
      ->type_name("KEY=VALUE");
  sub->add_option("--capacity", o.capacity, "memory per GPU, e.g. \"80 GiB\" (default: the GPU's)");
  sub->add_option("--headroom", o.headroom,
                  "share of the capacity to keep free (default 10%); less is a near miss");
  sub->add_option("--format", o.format, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  sub->add_option("--units", o.units, "gib (default) or gb")->check(CLI::IsMember({"gib", "gb"}));
  return sub;
}

int run_check(const CheckOptions& o, std::ostream& out, std::ostream& err) {
  const double headroom = config::parse_share_option("--headroom", o.headroom);
  if (!o.capacity.empty()) config::parse_size_option("--capacity", o.capacity);
  std::vector<std::string> names = o.plans;
  if (names.empty()) names.push_back("");
  std::vector<Checked> all;
  bool invalid = false;
  for (const std::string& name : names) {
    try {
      all.push_back(check_one(o, name, headroom));
    } catch (const config::ConfigError& e) {
      for (const config::Diagnostic& d : e.diagnostics()) err << d.to_string() << "\n";
      invalid = true;
    }
  }
  if (invalid) return k_exit_invalid;
  const bool gib = o.units != "gb";
  const double unit = gib ? k_gib : k_gb;
  const std::string u = gib ? "GiB" : "GB";
  bool failed = false;
  for (const Checked& c : all) failed = failed || c.status != Status::ok;
  if (o.format == "json") {
    out << check_json(all, headroom).dump(2) << "\n";
    return failed ? k_exit_does_not_fit : k_exit_ok;
  }
  std::size_t w = 4;
  for (const Checked& c : all) w = std::max(w, c.name.size());
  out << fmt::format("{:<{}}  {:<6} {:<18} {:<10} {:>9} {:>9} {:>9}\n", "plan", w, "status",
                     "worst stage", "phase", "peak", "limit", "headroom");
  for (const Checked& c : all) {
    const Verdict& v = c.plan.verdict;
    const StageMemory& st = c.plan.stages[v.worst_stage];
    out << fmt::format("{:<{}}  {:<6} {:<18} {:<10} {:>9.2f} {:>9.2f} {:>8.1f}%\n", c.name, w,
                       status_text(c.status), fmt::format("stage {} ({})", st.stage, st.role),
                       to_string(v.phase), v.peak_bytes / unit, c.limit / unit,
                       100 * (c.capacity - v.peak_bytes) / c.capacity);
  }
  out << fmt::format("memory per GPU in {}; limit = capacity − {:.0f} % headroom\n", u,
                     headroom * 100);
  for (const Checked& c : all)
    if (c.status != Status::ok) print_details(c, unit, u, headroom, out);
  return failed ? k_exit_does_not_fit : k_exit_ok;
}

}  // namespace trainledger::cli
