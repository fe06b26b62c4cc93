// `trainledger search PLAN`: every valid layout of the plan on its cluster (or --gpus/--nodes),
// the ones that fit ranked by the objective, why the best win, and the Pareto front of peak
// memory against step time; --fewest answers the inverse question (docs/cli.md#search).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <ostream>
#include <thread>

#include "app.hpp"
#include "search_output.hpp"
#include "trainledger/layout_search.hpp"
#include "trainledger/report.hpp"

namespace trainledger::cli {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

[[noreturn]] void usage_error(const std::string& option, const std::string& message) {
  throw config::ConfigError({config::Diagnostic{config::Origin{option, 0, 0, "option"}, message}});
}

int to_int(const std::string& option, const std::string& text) {
  try {
    std::size_t used = 0;
    const long v = std::stol(text, &used);
    if (used == text.size() && v >= 0 && v <= 1000000) return static_cast<int>(v);
  } catch (const std::exception&) {
  }
  usage_error(option, fmt::format("\"{}\" is not a count", text));
}

// --fix KEY=V and --allow KEY=V1,V2 into the search space.
void restrict(SearchSpace& space, const std::string& option, const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    usage_error(option, fmt::format("\"{}\": expected KEY=VALUE[,VALUE...]", text));
  const std::string key = text.substr(0, eq);
  const std::vector<std::string> values = split(text.substr(eq + 1), ',');
  auto ints = [&](std::vector<int>& into) {
    for (const std::string& v : values) into.push_back(to_int(option, v));
  };
  if (key == "tp") {
    ints(space.tp);
  } else if (key == "pp") {
    ints(space.pp);
  } else if (key == "cp") {
    ints(space.cp);
  } else if (key == "ep") {
    ints(space.ep);
  } else if (key == "zero") {
    ints(space.zero);
  } else if (key == "micro_batch" || key == "mb") {
    ints(space.micro_batch);
  } else if (key == "virtual_stages" || key == "vs") {
    ints(space.virtual_stages);
  } else if (key == "sp" || key == "sequence_parallel") {
    for (const std::string& v : values) {
      if (v != "true" && v != "false" && v != "0" && v != "1")
        usage_error(option, fmt::format("{}: \"{}\" is not true or false", key, v));
      space.sequence_parallel.push_back(v == "true" || v == "1" ? 1 : 0);
    }
  } else if (key == "recompute") {
    for (const std::string& v : values) {
      const Recompute r = from_string(v, Recompute::none);
      if (to_string(r) != v)
        usage_error(option, fmt::format("recompute: \"{}\" is not none, selective, op or full", v));
      space.recompute.push_back(r);
    }
  } else if (key == "schedule") {
    for (const std::string& v : values) {
      const Schedule s = from_string(v, Schedule::one_f_one_b);
      if (to_string(s) != v)
        usage_error(option,
                    fmt::format("schedule: \"{}\" is not 1f1b, gpipe, interleaved or zb-h1", v));
      space.schedule.push_back(s);
    }
  } else if (key == "shard" || key == "zero_shard_size") {
    ints(space.shard);
  } else if (key == "placement") {
    for (const std::string& v : values) {
      if (v != "tp,cp,dp,pp" && v != "tp,cp,pp,dp" && v != "0" && v != "1")
        usage_error(option, "placement: 0 (tp, cp, dp, pp) or 1 (tp, cp, pp, dp)");
      space.placement.push_back(v == "1" || v == "tp,cp,pp,dp" ? 1 : 0);
    }
  } else if (key == "uneven") {
    space.uneven = values.front() == "true" || values.front() == "1";
  } else {
    usage_error(option,
                fmt::format("unknown key \"{}\" (tp, pp, cp, ep, zero, sp, recompute, "
                            "micro_batch, schedule, virtual_stages, shard, placement, uneven)",
                            key));
  }
}

Objective objective_of(const std::string& s) {
  if (s == "tokens-per-s") return Objective::tokens_per_s;
  if (s == "memory") return Objective::memory;
  if (s == "cost") return Objective::cost;
  return Objective::step_time;
}

SearchRun search_once(const PlanInput& base, const SearchOptions& so) {
  SearchRun r;
  r.input = base;
  r.world = base.cluster.nodes * base.cluster.gpus_per_node;
  const auto t0 = std::chrono::steady_clock::now();
  r.result = search_layouts(base, so);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Some layout fits and, with a target, the fastest that fits reaches it (the Pareto front ends
// with the fastest layout, whatever the objective ranks first).
bool meets(const SearchResult& r, double target_s) {
  return !r.top.empty() && (target_s <= 0 || r.pareto.back().step_s <= target_s);
}

}  // namespace

CLI::App* add_search_command(CLI::App& app, SearchCliOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "search",
      "Every valid layout of the plan on its cluster (tp, pp with even or uneven stages, dp, cp, "
      "ep, ZeRO stage, sequence parallel, recompute, micro-batch, schedule and virtual stages; "
      "the global batch held), those that fit ranked by step time, with the Pareto front of "
      "memory against time");
  add_plan_options(*sub, o.plan);
  sub->add_option("--gpus", o.gpus,
                  "search on this many GPUs (a multiple of gpus_per_node, or "
                  "fewer than one node)");
  sub->add_option("--nodes", o.nodes, "search on this many nodes");
  sub->add_option("--objective", o.objective,
                  "rank by step-time (default), tokens-per-s (per GPU), memory (the worst "
                  "stage's peak) or cost (GPU-seconds per step)")
      ->check(CLI::IsMember({"step-time", "tokens-per-s", "memory", "cost"}));
  sub->add_option("--top", o.top, "layouts to list (default 10)")->check(CLI::Range(1, 10000));
  sub->add_option("--fix", o.fix, "hold a knob at one value: --fix tp=8 (repeatable)")
      ->type_name("KEY=VALUE");
  sub->add_option("--allow", o.allow, "the values a knob may take: --allow zero=1,3 (repeatable)")
      ->type_name("KEY=V1,V2");
  sub->add_option("--jobs", o.jobs, "threads (default: every core)")->check(CLI::Range(1, 1024));
  sub->add_option("--headroom", o.headroom, "share of the GPU memory kept free (default 10%)");
  sub->add_flag("--fewest", o.fewest,
                "the inverse question: the fewest nodes (GPUs, below one node) on which some "
                "layout fits (and meets --target-step-time or --target-time-to-train), searched up "
                "to --nodes/--gpus or "
                "4096 nodes");
  sub->add_option("--target-step-time", o.target, "with --fewest: a step time to reach, e.g. 2s");
  sub->add_option("--target-time-to-train", o.target_train,
                  "with --fewest: a time to train training.tokens to reach, e.g. 30d (the global "
                  "batch is held, so it is a step time: time x tokens per step / tokens)");
  sub->add_option("--format", o.format,
                  "table (default), json, csv or svg (the Pareto front and the top layouts, peak "
                  "memory against step time)")
      ->check(CLI::IsMember({"table", "json", "csv", "svg"}));
  sub->add_flag("--no-progress", o.no_progress, "no progress line on a terminal");
  return sub;
}

int run_search(const SearchCliOptions& o, std::ostream& out, std::ostream& err) {
  const config::LoadedPlan loaded = load(o.plan);
  PlanInput base = loaded.input;
  if (base.model.count_only)
    usage_error("search",
                "a count-only model (model.params) has no layers to lay out: give its "
                "architecture (model.preset, model.hf_config or the shape keys)");
  SearchOptions so;
  for (const std::string& f : o.fix) restrict(so.space, "--fix", f);
  for (const std::string& a : o.allow) restrict(so.space, "--allow", a);
  so.objective = objective_of(o.objective);
  so.top = o.top;
  so.jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  so.headroom = config::parse_share_option("--headroom", o.headroom);
  double target = 0;
  if (o.gpus > 0 && o.nodes > 0) usage_error("--gpus", "give --gpus or --nodes, not both");
  if (base.training.global_batch <= 0)
    base.training.global_batch = base.training.micro_batch * base.parallel.dp;
  if (!o.target.empty() && !o.target_train.empty())
    usage_error("--target-step-time",
                "give --target-step-time or --target-time-to-train, not both");
  if ((!o.target.empty() || !o.target_train.empty()) && !o.fewest)
    usage_error(o.target.empty() ? "--target-time-to-train" : "--target-step-time",
                "a target applies to --fewest only");
  if (!o.target.empty()) target = config::parse_duration_option("--target-step-time", o.target);
  if (!o.target_train.empty()) {
    const double train = config::parse_duration_option("--target-time-to-train", o.target_train);
    if (!(base.training.tokens > 0))
      usage_error("--target-time-to-train",
                  "the plan has no training.tokens to train: set it, e.g. --set "
                  "training.tokens=\"15T\"");
    // Steps = tokens / (global batch x seq); time to train = steps x step time.
    const double per_step = static_cast<double>(base.training.global_batch) *
                            static_cast<double>(base.training.seq_len);
    target = train * per_step / base.training.tokens;
  }
  const int gpn = base.cluster.gpus_per_node;
  auto set_world = [&](PlanInput& in, int gpus) {
    if (gpus < gpn) {
      in.cluster.gpus_per_node = gpus;
      in.cluster.nodes = 1;
    } else {
      in.cluster.gpus_per_node = gpn;
      in.cluster.nodes = gpus / gpn;
    }
  };
  if (o.gpus > 0) {
    if (o.gpus >= gpn && o.gpus % gpn != 0)
      usage_error("--gpus", fmt::format("--gpus {} is not a multiple of cluster.gpus_per_node ({})",
                                        o.gpus, gpn));
    set_world(base, o.gpus);
  }
  if (o.nodes > 0) base.cluster.nodes = o.nodes;
  const bool tty = !o.no_progress && o.format == "table" && isatty(2) != 0;
  if (tty)
    so.progress = [&err](std::int64_t done, std::int64_t total) {
      err << fmt::format("\rsearching: {}/{} layouts ({:.0f} %)", done, total,
                         total > 0 ? 100.0 * done / total : 100.0)
          << std::flush;
    };
  SearchRun run;
  if (o.fewest) {
    // Powers of two up to the limit, then bisection between the last that failed and the
    // first that succeeded (more GPUs never make a layout that fit stop fitting).
    const int limit = o.gpus > 0 ? o.gpus : (o.nodes > 0 ? o.nodes : 4096) * gpn;
    auto at = [&](int gpus) {
      PlanInput in = base;
      set_world(in, gpus);
      return search_once(in, so);
    };
    int lo = 0, hi = -1;
    SearchRun found;
    for (int g = 1; g <= limit; g *= 2) {
      SearchRun r = at(g);
      if (meets(r.result, target)) {
        hi = g;
        found = std::move(r);
        break;
      }
      lo = g;
    }
    if (hi < 0) {
      if (tty) err << "\r\033[K";
      out << fmt::format("no layout on up to {} GPUs fits{}\n", limit,
                         target > 0 ? fmt::format(" and reaches a step of {}", ms(target)) : "");
      return k_exit_does_not_fit;
    }
    // Between lo and hi: whole nodes above one node.
    while (hi - lo > 1) {
      int mid = lo + (hi - lo) / 2;
      if (mid > gpn) mid -= mid % gpn;
      if (mid <= lo || mid >= hi) break;
      SearchRun r = at(mid);
      if (meets(r.result, target)) {
        hi = mid;
        found = std::move(r);
      } else {
        lo = mid;
      }
    }
    run = std::move(found);
    if (tty) err << "\r\033[K";
    if (o.format == "table")
      out << fmt::format(
          "fewest: {} GPUs ({} node{} × {}) fit{}\n\n", run.world, run.input.cluster.nodes,
          run.input.cluster.nodes == 1 ? "" : "s", run.input.cluster.gpus_per_node,
          target > 0
              ? fmt::format(" and reach a step of {}{}", ms(target),
                            o.target_train.empty() ? std::string()
                                                   : " (time to train " + o.target_train + ")")
              : "");
  } else {
    run = search_once(base, so);
    if (tty) err << "\r\033[K";
  }
  print_search(run, so, o.objective, o.format, out);
  return run.result.top.empty() ? k_exit_does_not_fit : k_exit_ok;
}

}  // namespace trainledger::cli
