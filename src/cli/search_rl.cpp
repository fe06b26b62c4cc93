// `trainledger search` on a plan with an [rl] section (docs/rl.md#search): where the rollout
// runs, the engine's tensor parallelism and memory fraction, and the actor's training layout,
// ranked by the RL step; table, JSON, CSV or SVG.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <map>
#include <ostream>

#include "app.hpp"
#include "search_output.hpp"
#include "trainledger/report.hpp"
#include "trainledger/rl_search.hpp"
#include "trainledger/text.hpp"

namespace trainledger::cli {

namespace {

constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;

// One --fix or --allow of an rl.* key into the space: rl.placement (colocated, split),
// rl.rollout_gpus and rl.rollout_tp (whole numbers), rl.memory_fraction (0 < f <= 1).
void apply(RlSearchSpace& space, const std::string& option, const std::string& text,
           std::map<std::string, std::string>& seen) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    usage_error(option,
                fmt::format("\"{}\": expected KEY=VALUE[,VALUE...]", text::printable(text, 60)));
  const std::string key = text.substr(0, eq);
  const std::vector<std::string> values = split(text.substr(eq + 1), ',');
  if (option == "--fix" && values.size() != 1)
    usage_error(option, fmt::format("\"{}\": --fix holds a key at one value; several values are "
                                    "--allow {}",
                                    text::printable(text, 60), text::printable(text, 60)));
  if (const auto [it, fresh] = seen.emplace(key, option + " " + text::printable(text, 60)); !fresh)
    usage_error(option, fmt::format("{} is given twice ({} and {} {}): give its values once",
                                    text::printable(key, 40), it->second, option,
                                    text::printable(text, 60)));
  for (const std::string& v : values) {
    if (key == "rl.placement") {
      if (v != "colocated" && v != "split")
        usage_error(option, fmt::format("rl.placement: \"{}\" is not colocated or split",
                                        text::printable(v, 40)));
      space.placement.push_back(v == "split" ? RlPlacement::split : RlPlacement::colocated);
    } else if (key == "rl.rollout_gpus" || key == "rl.rollout_tp") {
      int n = 0;
      const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || ptr != v.data() + v.size() || n < 1 || n > 10000000)
        usage_error(option, fmt::format("{}: \"{}\" is not a whole number from 1 to 10000000", key,
                                        text::printable(v, 40)));
      (key == "rl.rollout_gpus" ? space.rollout_gpus : space.rollout_tp).push_back(n);
    } else if (key == "rl.memory_fraction") {
      double f = 0;
      const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), f);
      if (ec != std::errc() || ptr != v.data() + v.size() || !(f > 0) || f > 1)
        usage_error(option, fmt::format("rl.memory_fraction: \"{}\" is not a number above 0 and "
                                        "at most 1",
                                        text::printable(v, 40)));
      space.memory_fraction.push_back(f);
    } else {
      usage_error(option, fmt::format("unknown key \"{}\" (rl.placement, rl.rollout_gpus, "
                                      "rl.rollout_tp, rl.memory_fraction; the training layout's "
                                      "keys have no prefix)",
                                      text::printable(key, 40)));
    }
  }
}

std::string placement_text(const RlCandidate& c) {
  if (c.placement == RlPlacement::colocated) return fmt::format("colocated {}", c.train_gpus);
  return fmt::format("split {}+{}{}", c.rollout_gpus, c.train_gpus, c.off_policy ? " off" : "");
}

std::string sets_text(const RlCandidate& c) {
  std::string s;
  for (const std::string& set : rl_settings(c)) {
    const bool quote = set.find_first_of("\"[]") != std::string::npos;
    s += (s.empty() ? "--set " : " --set ") + (quote ? "'" + set + "'" : set);
  }
  return s;
}

nlohmann::json candidate_json(const RlCandidate& c) {
  nlohmann::json j = {
      {"placement", to_string(c.placement)},
      {"rollout_gpus", c.rollout_gpus},
      {"train_gpus", c.train_gpus},
      {"off_policy", c.off_policy},
      {"rollout_tp", c.rollout_tp},
      {"memory_fraction", c.memory_fraction},
      {"step_s", c.step_s},
      {"tokens_per_s_per_gpu", c.tokens_per_s_per_gpu},
      {"time_s", {{"rollout", c.rollout_s}, {"training_side", c.train_side_s}, {"sync", c.sync_s}}},
      {"training_mfu", c.training_mfu},
      {"peak_bytes", std::llround(c.peak_bytes)},
      {"worst_phase", c.worst_phase},
      {"concurrency", c.concurrency},
      {"settings", rl_settings(c)}};
  if (c.placement == RlPlacement::split) {
    j["rollout_idle"] = c.rollout_idle;
    j["training_idle"] = c.training_idle;
  }
  j["training"] = layout_json(c.layout, Band{});
  return j;
}

void print_table(const PlanInput& in, const RlSearchResult& r, const RlSearchOptions& ro,
                 const std::string& objective, double seconds, std::ostream& out) {
  const SearchOptions& so = ro.layout;
  const RlSpec& rl = in.rl;
  out << fmt::format(
      "search (RL): {} · {} on {} × {} · {} prompts × {} samples, prompts ≤ {} (mean {:.0f}), "
      "responses ≤ {} (mean {:.0f})\n",
      to_string(rl.algorithm), in.model.name, r.total_gpus, in.cluster.gpu.name, rl.prompts,
      rl.samples, rl.prompt_length, rl.mean_prompt_length, rl.response_length,
      rl.mean_response_length);
  out << fmt::format(
      "{} placement{} · {} training layouts (of {} enumerated) · {} RL configurations judged, {} "
      "fit · ranked by {} · {:.2f} s on {} job{}\n",
      r.pools, r.pools == 1 ? "" : "s", r.layouts, r.enumerated, r.evaluated, r.fitting, objective,
      seconds, so.jobs, so.jobs == 1 ? "" : "s");
  out << fmt::format(
      "training layouts fit within {:.0f} % headroom at the longest samples (the layout search's "
      "{} fastest per placement and its Pareto front); every RL phase within the GPU's memory\n",
      100 * so.headroom, ro.layouts_per_pool);
  if (r.top.empty()) {
    out << "no configuration fits"
        << (r.closest_problem.empty() ? std::string(": no training layout fits either")
                                      : ": the closest fails at " + r.closest_problem)
        << "; try more GPUs (--gpus), shorter responses or fewer samples per step\n";
    return;
  }
  out << fmt::format("\n{:>3} {:<16} {:>8} {:>5} {:>10} {:>10} {:>10} {:>9} {:>10} {:>14}  {}\n",
                     "#", "placement", "engines", "mem", "step", "generate", "train", "sync",
                     "tok/s/GPU", "worst phase", "training layout");
  int rank = 0;
  for (const RlCandidate& c : r.top) {
    const int engines = (c.placement == RlPlacement::split ? c.rollout_gpus : c.train_gpus) /
                        std::max(1, c.rollout_tp);
    out << fmt::format(
        "{:>3} {:<16} {:>8} {:>5.2f} {:>10} {:>10} {:>10} {:>9} {:>10.0f} {:>14}  {}\n", ++rank,
        placement_text(c), fmt::format("{}×tp{}", engines, c.rollout_tp), c.memory_fraction,
        ms(c.step_s), ms(c.rollout_s), ms(c.train_side_s), ms(c.sync_s), c.tokens_per_s_per_gpu,
        fmt::format("{} {:.1f}", c.worst_phase, c.peak_bytes / k_gib), layout_text(c.layout));
  }
  const RlCandidate& best = r.top.front();
  out << fmt::format(
      "\nThe best: {} = generation {} {} training side {} + sync and host transfers {}; {:.0f} "
      "sequences at once per engine; training MFU {:.1f} %{}\n",
      ms(best.step_s), ms(best.rollout_s),
      best.placement == RlPlacement::split && best.off_policy ? "overlapping the" : "+",
      ms(best.train_side_s), ms(best.sync_s), best.concurrency, 100 * best.training_mfu,
      best.placement == RlPlacement::split
          ? fmt::format("; idle: rollout GPUs {:.0f} %, training GPUs {:.0f} %",
                        100 * best.rollout_idle, 100 * best.training_idle)
          : "");
  out << fmt::format("\nPareto front, the worst phase's memory against step time ({}):\n",
                     r.pareto.size());
  for (const RlCandidate& c : r.pareto)
    out << fmt::format("  {:>8.2f} GiB  {:>10}  {} · {}×tp{} · fraction {:.2f} · {}\n",
                       c.peak_bytes / k_gib, ms(c.step_s), placement_text(c),
                       (c.placement == RlPlacement::split ? c.rollout_gpus : c.train_gpus) /
                           std::max(1, c.rollout_tp),
                       c.rollout_tp, c.memory_fraction, layout_text(c.layout));
  const std::string stack =
      in.training.framework_basis.empty()
          ? ""
          : fmt::format(" --set training.framework={}", to_string(in.training.framework));
  out << "\nThe best as plan settings:\n  trainledger plan ... " << sets_text(best) << stack
      << "\n";
}

}  // namespace

int run_rl_search(const SearchCliOptions& o, const PlanInput& given, const SearchOptions& so,
                  const std::vector<std::string>& fix, const std::vector<std::string>& allow,
                  std::ostream& out, std::ostream& /*err*/) {
  if (o.fewest || !o.target.empty() || !o.target_train.empty())
    usage_error("--fewest",
                "an RL plan is searched on its own GPUs (or --gpus N / --nodes N): "
                "--fewest and its targets are for training plans");
  RlSearchOptions ro;
  ro.layout = so;
  std::map<std::string, std::string> seen;
  for (const std::string& f : fix) apply(ro.space, "--fix", f, seen);
  for (const std::string& a : allow) apply(ro.space, "--allow", a, seen);
  PlanInput base = given;
  // --gpus / --nodes: the job's GPUs in all (generation and training), searched as one cluster.
  const int gpn = base.cluster.gpus_per_node;
  int total = 0;
  if (o.gpus > 0) total = o.gpus;
  if (o.nodes > 0) total = o.nodes * gpn;
  if (total > 0) {
    if (total >= gpn && total % gpn != 0)
      usage_error("--gpus", fmt::format("--gpus {} is not a multiple of cluster.gpus_per_node ({})",
                                        total, gpn));
    base.cluster.nodes = std::max(1, total / gpn);
    if (total < gpn) base.cluster.gpus_per_node = total;
    base.rl.placement = RlPlacement::colocated;
    base.rl.rollout_gpus = 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const RlSearchResult r = search_rl(base, ro);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.format == "json") {
    nlohmann::json j;
    j["schema"] = "trainledger.search/1";
    j["search"] = {{"kind", "rl"},
                   {"model", base.model.name},
                   {"gpu", base.cluster.gpu.name},
                   {"gpus", r.total_gpus},
                   {"algorithm", to_string(base.rl.algorithm)},
                   {"objective", o.objective},
                   {"placements", r.pools},
                   {"training_layouts", r.layouts},
                   {"enumerated", r.enumerated},
                   {"evaluated", r.evaluated},
                   {"fitting", r.fitting},
                   {"closest_problem", r.closest_problem},
                   {"seconds", seconds},
                   {"jobs", so.jobs}};
    j["top"] = nlohmann::json::array();
    for (const RlCandidate& c : r.top) j["top"].push_back(candidate_json(c));
    j["pareto"] = nlohmann::json::array();
    for (const RlCandidate& c : r.pareto) j["pareto"].push_back(candidate_json(c));
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (o.format == "csv") {
    out << "rank,placement,rollout_gpus,train_gpus,off_policy,rollout_tp,memory_fraction,step_s,"
           "rollout_s,training_side_s,sync_s,tokens_per_s_per_gpu,peak_bytes,worst_phase,tp,pp,"
           "dp,cp,ep,zero,recompute,micro_batch\n";
    int rank = 0;
    for (const RlCandidate& c : r.top)
      out << fmt::format(
          "{},{},{},{},{},{},{:g},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g},{},{},{},{},{},"
          "{},{},{},{},{}\n",
          ++rank, to_string(c.placement), c.rollout_gpus, c.train_gpus,
          c.off_policy ? "true" : "false", c.rollout_tp, c.memory_fraction, c.step_s, c.rollout_s,
          c.train_side_s, c.sync_s, c.tokens_per_s_per_gpu, std::llround(c.peak_bytes),
          c.worst_phase, c.layout.tp, c.layout.pp, c.layout.dp, c.layout.cp, c.layout.ep,
          c.layout.zero, to_string(c.layout.recompute), c.layout.micro_batch);
  } else if (o.format == "svg") {
    std::vector<report::ChartPoint> points;
    auto label = [](const RlCandidate& c) {
      return fmt::format("{} · tp{} · {:.2f} · {}", placement_text(c), c.rollout_tp,
                         c.memory_fraction, layout_text(c.layout));
    };
    for (const RlCandidate& c : r.pareto)
      points.push_back({c.peak_bytes / k_gib, c.step_s, label(c), true, placement_text(c)});
    for (const RlCandidate& c : r.top)
      points.push_back({c.peak_bytes / k_gib, c.step_s, label(c), false, ""});
    const double capacity = static_cast<double>(base.cluster.gpu.memory_bytes) / k_gib;
    out << report::scatter_svg(
        "chart-search",
        fmt::format("{} {} on {} GPUs: the worst phase's memory against the RL step ({} fitting)",
                    to_string(base.rl.algorithm), base.model.name, r.total_gpus, r.fitting),
        "worst phase's memory per GPU (GiB)", "RL step time (s)", points,
        {{capacity, fmt::format("capacity {:.1f} GiB", capacity), false}});
  } else {
    print_table(base, r, ro, o.objective, seconds, out);
  }
  return r.top.empty() ? k_exit_does_not_fit : k_exit_ok;
}

}  // namespace trainledger::cli
