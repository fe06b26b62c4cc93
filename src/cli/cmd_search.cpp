// `trainledger search PLAN`: every valid layout of the plan on its cluster (or --gpus/--nodes),
// the ones that fit ranked by the objective, why the best win, and the Pareto front of peak
// memory against step time; --fewest answers the inverse question (docs/cli.md#search).
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <thread>

#include "app.hpp"
#include "search_output.hpp"
#include "trainledger/layout_search.hpp"
#include "trainledger/report.hpp"
#include "trainledger/rules.hpp"
#include "trainledger/text.hpp"

namespace trainledger::cli {

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

namespace {

// The largest world a search takes: cluster.nodes and cluster.gpus_per_node at their limits.
constexpr long long k_max_nodes = 1000000;
constexpr long long k_max_gpus = 1 << 30;

// A whole number in [lo, hi], the whole text (std::from_chars: no sign, space or suffix).
std::optional<long long> whole_number(const std::string& text, long long lo, long long hi) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < lo || v > hi) return std::nullopt;
  return v;
}

// CLI11's check for a count option: the message names the option and the range.
CLI::Validator count_from(long long lo, long long hi, const char* what) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        if (whole_number(s, lo, hi)) return std::string();
        return fmt::format("\"{}\" is not {} (a whole number from {} to {})",
                           text::printable(s, 40), what, lo, hi);
      },
      fmt::format("INT in [{} - {}]", lo, hi));
}

// An option whose value may not be empty (an empty string is not "not given").
CLI::Validator non_empty(const char* example) {
  return CLI::Validator(
      [=](std::string& s) -> std::string {
        return s.empty() ? fmt::format("an empty value; give a duration, e.g. {}", example)
                         : std::string();
      },
      "DURATION");
}

// --fix KEY=V and --allow KEY=V1,V2, checked and with the key's canonical name and its values
// normalised ("mb" → micro_batch, "true" → 1), so that two of them can be compared.
struct Restriction {
  std::string option;  // --fix or --allow
  std::string text;    // as given
  std::string key;
  std::vector<std::string> values;
};

Restriction parse_restriction(const std::string& option, const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    usage_error(option, fmt::format("\"{}\": expected KEY=VALUE[,VALUE...]", text));
  Restriction r{option, text, text.substr(0, eq), {}};
  std::string& key = r.key;
  if (key == "mb") key = "micro_batch";
  if (key == "vs") key = "virtual_stages";
  if (key == "sp") key = "sequence_parallel";
  if (key == "ovl") key = "overlap_tp";
  if (key == "zero_shard_size") key = "shard";
  const std::string rest = text.substr(eq + 1);
  // A placement is itself a comma-separated list.
  const std::vector<std::string> values =
      key == "placement" && (rest == "tp,cp,dp,pp" || rest == "tp,cp,pp,dp")
          ? std::vector<std::string>{rest}
          : split(rest, ',');
  auto ints = [&](long long lo, long long hi) {
    for (const std::string& v : values) {
      const auto n = whole_number(v, lo, hi);
      if (!n)
        usage_error(option,
                    fmt::format("{}: \"{}\" is not a whole number from {} to {}", key, v, lo, hi));
      r.values.push_back(std::to_string(*n));
    }
  };
  auto flags = [&] {
    for (const std::string& v : values) {
      if (v != "true" && v != "false" && v != "0" && v != "1")
        usage_error(option, fmt::format("{}: \"{}\" is not true or false", key, v));
      r.values.push_back(v == "true" || v == "1" ? "1" : "0");
    }
  };
  if (key == "tp" || key == "pp" || key == "cp" || key == "ep") {
    ints(1, 65536);
  } else if (key == "micro_batch" || key == "virtual_stages" || key == "shard") {
    ints(1, 1000000);
  } else if (key == "zero") {
    ints(0, 3);
  } else if (key == "sequence_parallel" || key == "uneven" || key == "overlap_tp") {
    flags();
  } else if (key == "recompute") {
    for (const std::string& v : values) {
      if (to_string(from_string(v, Recompute::none)) != v)
        usage_error(option, fmt::format("recompute: \"{}\" is not none, selective, op or full", v));
      r.values.push_back(v);
    }
  } else if (key == "schedule") {
    for (const std::string& v : values) {
      if (to_string(from_string(v, Schedule::one_f_one_b)) != v)
        usage_error(option,
                    fmt::format("schedule: \"{}\" is not 1f1b, gpipe, interleaved, zb-h1 or "
                                "dualpipev",
                                v));
      r.values.push_back(v);
    }
  } else if (key == "offload") {
    for (const std::string& v : values) {
      if (to_string(from_string(v, Offload::none)) != v)
        usage_error(option,
                    fmt::format("offload: \"{}\" is not none, optimizer or optimizer+params", v));
      r.values.push_back(v);
    }
  } else if (key == "placement") {
    for (const std::string& v : values) {
      if (v != "tp,cp,dp,pp" && v != "tp,cp,pp,dp" && v != "0" && v != "1")
        usage_error(option, "placement: 0 (tp, cp, dp, pp) or 1 (tp, cp, pp, dp)");
      r.values.push_back(v == "1" || v == "tp,cp,pp,dp" ? "1" : "0");
    }
  } else {
    usage_error(option,
                fmt::format("unknown key \"{}\" (tp, pp, cp, ep, zero, sp, recompute, "
                            "micro_batch, schedule, virtual_stages, shard, placement, uneven, "
                            "overlap_tp, offload)",
                            key));
  }
  if (option == "--fix" && r.values.size() != 1)
    usage_error(option, fmt::format("\"{}\": --fix holds a key at one value; several values are "
                                    "--allow {}",
                                    text, text));
  if (key == "uneven" && r.values.size() != 1)
    usage_error(option, fmt::format("\"{}\": uneven is true or false", text));
  return r;
}

// The search space from every --fix and --allow: a key fixed twice to different values, allowed
// twice, or fixed to a value its --allow excludes is a contradiction (exit 2), not a guess.
void restrict(SearchSpace& space, const std::vector<std::string>& fixes,
              const std::vector<std::string>& allows) {
  std::map<std::string, Restriction> fixed, allowed;
  for (const std::string& f : fixes) {
    Restriction r = parse_restriction("--fix", f);
    const auto [it, fresh] = fixed.emplace(r.key, r);
    if (!fresh && it->second.values != r.values)
      usage_error("--fix", fmt::format("{} is fixed twice to different values (--fix {} and --fix "
                                       "{})",
                                       r.key, it->second.text, r.text));
  }
  for (const std::string& a : allows) {
    Restriction r = parse_restriction("--allow", a);
    const auto [it, fresh] = allowed.emplace(r.key, r);
    if (!fresh)
      usage_error("--allow", fmt::format("{} is given twice (--allow {} and --allow {}): list its "
                                         "values in one --allow",
                                         r.key, it->second.text, r.text));
    if (const auto f = fixed.find(r.key);
        f != fixed.end() &&
        std::find(r.values.begin(), r.values.end(), f->second.values.front()) == r.values.end())
      usage_error("--fix", fmt::format("--fix {} contradicts --allow {}: its value is not among "
                                       "those allowed",
                                       f->second.text, r.text));
  }
  for (const auto& [key, r] : fixed) allowed.erase(key);
  auto apply = [&space](const Restriction& r) {
    auto ints = [&](std::vector<int>& into) {
      for (const std::string& v : r.values) into.push_back(std::stoi(v));
    };
    const std::string& key = r.key;
    if (key == "tp") ints(space.tp);
    if (key == "pp") ints(space.pp);
    if (key == "cp") ints(space.cp);
    if (key == "ep") ints(space.ep);
    if (key == "zero") ints(space.zero);
    if (key == "micro_batch") ints(space.micro_batch);
    if (key == "virtual_stages") ints(space.virtual_stages);
    if (key == "shard") ints(space.shard);
    if (key == "sequence_parallel") ints(space.sequence_parallel);
    if (key == "overlap_tp") ints(space.overlap_tp);
    if (key == "placement") ints(space.placement);
    if (key == "uneven") space.uneven = r.values.front() == "1";
    for (const std::string& v : r.values) {
      if (key == "recompute") space.recompute.push_back(from_string(v, Recompute::none));
      if (key == "schedule") space.schedule.push_back(from_string(v, Schedule::one_f_one_b));
      if (key == "offload") space.offload.push_back(from_string(v, Offload::none));
    }
  };
  for (const auto& [key, r] : fixed) apply(r);
  for (const auto& [key, r] : allowed) apply(r);
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
      "ep with experts split over tp or whole (etp), ZeRO stage, sequence parallel, TP overlap, "
      "recompute, micro-batch, schedule and virtual "
      "stages; "
      "the global batch held), those that fit ranked by step time, with the Pareto front of "
      "memory against time; on a plan with an [rl] section: placements (colocated, split), "
      "the rollout engine's tp and memory fraction with the training layouts, ranked by the RL "
      "step (docs/rl.md#search)");
  add_plan_options(*sub, o.plan);
  sub->add_option("--gpus", o.gpus,
                  "search on this many GPUs (a multiple of gpus_per_node, or "
                  "fewer than one node)")
      ->check(count_from(1, k_max_gpus, "a GPU count"));
  sub->add_option("--nodes", o.nodes, "search on this many nodes")
      ->check(count_from(1, k_max_nodes, "a node count"));
  sub->add_option("--objective", o.objective,
                  "rank by step-time (default), tokens-per-s (per GPU), memory (the worst "
                  "stage's peak) or cost (GPU-seconds per step)")
      ->check(CLI::IsMember({"step-time", "tokens-per-s", "memory", "cost"}));
  sub->add_option("--top", o.top, "layouts to list (default 10)")->check(CLI::Range(1, 10000));
  sub->add_option("--fix", o.fix,
                  "hold a knob at one value: --fix tp=8 (repeatable; RL plans also take "
                  "rl.placement, rl.rollout_gpus, rl.rollout_tp, rl.memory_fraction)")
      ->type_name("KEY=VALUE");
  sub->add_option("--allow", o.allow, "the values a knob may take: --allow zero=1,3 (repeatable)")
      ->type_name("KEY=V1,V2");
  sub->add_option("--jobs", o.jobs, "threads (default: every core)")->check(CLI::Range(1, 1024));
  sub->add_option("--headroom", o.headroom, "share of the GPU memory kept free (default 10%)");
  sub->add_option("--confidence", o.confidence,
                  "a layout fits when the upper end of its peak's band at this confidence does "
                  "(default 90%; off: the estimate alone); layouts are ranked by the estimate");
  sub->add_flag("--fewest", o.fewest,
                "the inverse question: the fewest nodes (GPUs, below one node) on which some "
                "layout fits (and meets --target-step-time or --target-time-to-train), searched up "
                "to --nodes/--gpus or "
                "4096 nodes");
  sub->add_option("--target-step-time", o.target, "with --fewest: a step time to reach, e.g. 2s")
      ->check(non_empty("2s"));
  sub->add_option("--target-time-to-train", o.target_train,
                  "with --fewest: a time to train training.tokens to reach, e.g. 30d (the global "
                  "batch is held, so it is a step time: time x tokens per step / tokens)")
      ->check(non_empty("30d"));
  sub->add_option("--format", o.format,
                  "table (default), json, csv or svg (the Pareto front and the top layouts, peak "
                  "memory against step time)")
      ->check(CLI::IsMember({"table", "json", "csv", "svg"}));
  sub->add_flag("--no-progress", o.no_progress, "no progress line on a terminal");
  return sub;
}

// A --fix or --allow whose values no layout of this model on this world can take is refused
// with the reason and the values that can, instead of an empty search ("no layout fits").
// `world` is 0 when the search varies it (--fewest): only the model's rules apply then.
void refuse_impossible(const PlanInput& base, int world, const std::vector<std::string>& fixes,
                       const std::vector<std::string>& allows) {
  std::vector<Restriction> all;
  for (const std::string& f : fixes) all.push_back(parse_restriction("--fix", f));
  for (const std::string& a : allows) all.push_back(parse_restriction("--allow", a));
  for (const Restriction& r : all) {
    if (r.key != "tp" && r.key != "pp" && r.key != "cp" && r.key != "ep") continue;
    // The rules are the core's (check_rules): what the knob's value breaks by itself.
    std::vector<std::string> bad, why;
    for (const std::string& v : r.values) {
      const std::vector<RuleViolation> broken =
          knob_violations(base, r.key, static_cast<int>(std::stoll(v)), world);
      if (broken.empty()) continue;
      bad.push_back(v);
      for (const RuleViolation& b : broken)
        if (std::find(why.begin(), why.end(), b.message) == why.end()) why.push_back(b.message);
    }
    if (bad.size() < r.values.size()) continue;  // some value can be taken
    // The values that can be taken: a value divides the world (tp, pp, cp split it; ep divides
    // dp × cp), so only its divisors are tried (at most 1,344 below 2^30), or 1-1024 for any world.
    std::vector<int> candidates;
    if (world > 0) {
      std::vector<int> high;
      for (int v = 1; static_cast<long long>(v) * v <= world; ++v)
        if (world % v == 0) {
          candidates.push_back(v);
          if (v != world / v) high.push_back(world / v);
        }
      candidates.insert(candidates.end(), high.rbegin(), high.rend());
    } else {
      for (int v = 1; v <= 1024; ++v) candidates.push_back(v);
    }
    std::vector<std::string> can;
    for (int v : candidates) {
      if (can.size() >= 12) break;
      if (knob_violations(base, r.key, v, world).empty()) can.push_back(std::to_string(v));
    }
    usage_error(r.option,
                fmt::format("{} = {}: no layout can take it: {} (possible: {})", r.key,
                            fmt::join(bad, ","), fmt::join(why, "; "), fmt::join(can, ", ")));
  }
}

// The plan to search from. Its layout is what the search varies: when that layout is not valid
// for the plan (a model given with --set on the default plan's layout), the plan is read
// without it (LoadOptions::free_layout) rather than refused, and the note says why.
config::LoadedPlan load_for_search(const PlanOptions& given, std::ostream& err) {
  PlanOptions o = given;
  o.choose_layout = false;
  try {
    return load(o);
  } catch (const config::ConfigError& e) {
    PlanOptions free = o;
    free.free_layout = true;
    config::LoadedPlan loaded = load(free);  // an error outside the layout is still refused
    err << "trainledger search: note: the plan's own layout is not valid for it ("
        << e.diagnostics().front().message << "); every layout is searched\n";
    return loaded;
  }
}

int run_search(const SearchCliOptions& o, std::ostream& out, std::ostream& err) {
  const config::LoadedPlan loaded = load_for_search(o.plan, err);
  PlanInput base = loaded.input;
  if (base.model.count_only)
    usage_error("search",
                "a count-only model (model.params) has no layers to lay out: give its "
                "architecture (model.preset, model.hf_config or the shape keys)");
  // rl.* restrictions are the RL search's (search_rl.cpp); the others the training layout's.
  std::vector<std::string> fix, allow, rl_fix, rl_allow;
  for (const std::string& f : o.fix) (f.rfind("rl.", 0) == 0 ? rl_fix : fix).push_back(f);
  for (const std::string& a : o.allow) (a.rfind("rl.", 0) == 0 ? rl_allow : allow).push_back(a);
  if ((!rl_fix.empty() || !rl_allow.empty()) && !base.rl.enabled)
    usage_error(rl_fix.empty() ? "--allow" : "--fix",
                "rl.* keys are searched only for a plan with an [rl] section");
  SearchOptions so;
  restrict(so.space, fix, allow);
  so.objective = objective_of(o.objective);
  so.top = o.top;
  so.jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  so.headroom = config::parse_share_option("--headroom", o.headroom);
  so.confidence = config::parse_confidence_option(o.confidence);
  double target = 0;
  if (o.gpus > 0 && o.nodes > 0) usage_error("--gpus", "give --gpus or --nodes, not both");
  if (base.rl.enabled) {
    refuse_impossible(base, 0, fix, allow);
    return run_rl_search(o, base, so, rl_fix, rl_allow, out, err);
  }
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
  refuse_impossible(base, o.fewest ? 0 : base.cluster.nodes * base.cluster.gpus_per_node, fix,
                    allow);
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
      if (o.format == "json") {
        // The same document as a search that found layouts, with none in it.
        const nlohmann::json j = {
            {"schema", "trainledger.search/1"},
            {"search",
             {{"model", base.model.name},
              {"gpu", base.cluster.gpu.name},
              {"fewest", true},
              {"found", false},
              {"limit_gpus", limit},
              {"target_step_s", target > 0 ? nlohmann::json(target) : nlohmann::json(nullptr)}}},
            {"top", nlohmann::json::array()},
            {"pareto", nlohmann::json::array()}};
        out << j.dump(2) << "\n";
        return k_exit_does_not_fit;
      }
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
