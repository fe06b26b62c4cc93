// What `trainledger search` prints (docs/cli.md#search): the table with why the best win and the
// Pareto front, JSON, CSV, or the SVG of peak memory against step time.
#include "search_output.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <ostream>

#include "trainledger/report.hpp"

namespace trainledger::cli {

std::string ms(double s) {
  return std::fabs(s) >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.0f} ms", s * 1e3);
}

namespace {

constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::string layout_text(const Layout& l) {
  std::string s = fmt::format("tp {} · pp {} · dp {}", l.tp, l.pp, l.dp);
  if (l.cp > 1) s += fmt::format(" · cp {}", l.cp);
  if (l.ep > 1) s += fmt::format(" · ep {}", l.ep);
  if (l.etp > 0 && l.etp != l.tp) s += fmt::format(" · etp {}", l.etp);
  s += fmt::format(" · ZeRO-{}", l.zero);
  if (l.shard > 0) s += fmt::format(" (HSDP shards of {})", l.shard);
  if (l.sequence_parallel) s += " · sp";
  if (l.overlap_tp) s += " · TP overlap";
  if (l.offload != Offload::none) s += fmt::format(" · offload {}", to_string(l.offload));
  s += fmt::format(" · recompute {} · micro-batch {}", to_string(l.recompute), l.micro_batch);
  if (l.pp > 1) {
    s += fmt::format(" · {}", to_string(l.schedule));
    if (l.schedule == Schedule::interleaved) s += fmt::format(" × {}", l.virtual_stages);
  }
  if (!l.stage_layers.empty()) s += " · uneven stages";
  if (l.placement == 1) s += " · pp inside dp";
  return s;
}

// A layout in a few characters, for a chart's point: the sizes that are not 1, the ZeRO stage,
// the micro-batch and the recomputation ("tp 4 dp 2 Z3 mb 2 full").
std::string layout_tag(const Layout& l) {
  std::string s = fmt::format("tp {}", l.tp);
  if (l.pp > 1) s += fmt::format(" pp {}", l.pp);
  s += fmt::format(" dp {}", l.dp);
  if (l.cp > 1) s += fmt::format(" cp {}", l.cp);
  if (l.ep > 1) s += fmt::format(" ep {}", l.ep);
  if (l.etp > 0 && l.etp != l.tp) s += fmt::format(" etp {}", l.etp);
  s += fmt::format(" Z{} mb {}", l.zero, l.micro_batch);
  if (l.recompute != Recompute::none) s += fmt::format(" {}", to_string(l.recompute));
  return s;
}

namespace {

// What makes `a` faster than `b`: the step's components that differ most.
std::string why(const Layout& a, const Layout& b) {
  struct Part {
    const char* name;
    double delta;
  };
  Part parts[] = {
      {"compute", a.compute_s - b.compute_s},         {"recompute", a.recompute_s - b.recompute_s},
      {"exposed communication", a.comm_s - b.comm_s}, {"bubble", a.bubble_s - b.bubble_s},
      {"optimizer", a.optimizer_s - b.optimizer_s},   {"host offload", a.offload_s - b.offload_s},
      {"host dispatch", a.host_s - b.host_s}};
  std::sort(std::begin(parts), std::end(parts),
            [](const Part& x, const Part& y) { return x.delta < y.delta; });
  std::string s;
  for (const Part& p : parts) {
    if (p.delta >= -1e-4 * std::max(a.step_s, 1e-9)) break;
    if (!s.empty()) s += ", ";
    s += fmt::format("{} less {}", ms(-p.delta), p.name);
  }
  const Part& worst = parts[4];
  if (worst.delta > 1e-4 * std::max(a.step_s, 1e-9))
    s += fmt::format("{}{} more {}", s.empty() ? "" : "; ", ms(worst.delta), worst.name);
  if (a.peak_bytes < b.peak_bytes)
    s += fmt::format("{}{:.1f} GiB less memory", s.empty() ? "" : "; ",
                     (b.peak_bytes - a.peak_bytes) / k_gib);
  return s.empty() ? "the same step time; listed first in the enumeration" : s;
}

}  // namespace

nlohmann::json layout_json(const Layout& l, const Band& band) {
  nlohmann::json j = {
      {"tp", l.tp},
      {"pp", l.pp},
      {"dp", l.dp},
      {"cp", l.cp},
      {"ep", l.ep},
      {"etp", l.etp > 0 ? l.etp : l.tp},
      {"zero", l.zero},
      {"sequence_parallel", l.sequence_parallel},
      {"overlap_tp", l.overlap_tp},
      {"offload", to_string(l.offload)},
      {"recompute", to_string(l.recompute)},
      {"micro_batch", l.micro_batch},
      {"grad_accum", l.grad_accum},
      {"schedule", to_string(l.schedule)},
      {"virtual_stages", l.virtual_stages},
      {"zero_shard_size", l.shard},
      {"placement", l.placement == 1 ? std::vector<std::string>{"tp", "cp", "pp", "dp"}
                                     : std::vector<std::string>{"tp", "cp", "dp", "pp"}},
      {"stage_layers", l.stage_layers},
      {"peak_bytes", std::llround(l.peak_bytes)},
      {"worst_stage", l.worst_stage},
      {"step_s", l.step_s},
      {"tokens_per_s_per_gpu", l.tokens_per_s_per_gpu},
      {"mfu", l.mfu},
      {"time_s",
       {{"compute", l.compute_s},
        {"recompute", l.recompute_s},
        {"comm_exposed", l.comm_s},
        {"bubble", l.bubble_s},
        {"optimizer", l.optimizer_s},
        {"offload", l.offload_s},
        {"host", l.host_s}}}};
  // The peak's band (docs/accuracy.md#bands), from the plan's family: null at --confidence off.
  j["peak_band_bytes"] = band.cases > 0
                             ? nlohmann::json{std::llround(l.peak_bytes * band.ratio_low),
                                              std::llround(l.peak_bytes * band.ratio_high)}
                             : nlohmann::json(nullptr);
  return j;
}

// The --set lines that give a layout (to paste into `trainledger plan`).
// The layout as --set options for the shell, the nodes it was searched on included.
std::string sets_of(const Layout& l, const ClusterSpec& c) {
  std::string s;
  for (const std::string& set : layout_settings(l, c.nodes, c.gpus_per_node)) {
    const bool quote = set.find_first_of("\"[]") != std::string::npos;
    s += (s.empty() ? "--set " : " --set ") + (quote ? "'" + set + "'" : set);
  }
  return s;
}

namespace {

void print_table(const SearchRun& run, const SearchOptions& so, const std::string& objective,
                 std::ostream& out) {
  const PlanInput& in = run.input;
  const SearchResult& r = run.result;
  const std::int64_t batch = in.training.global_batch;
  out << fmt::format("search: {} on {} × {} ({} node{} × {}) · global batch {} × {} tokens\n",
                     in.model.name, run.world, in.cluster.gpu.name, in.cluster.nodes,
                     in.cluster.nodes == 1 ? "" : "s", in.cluster.gpus_per_node, batch,
                     in.training.seq_len);
  out << fmt::format(
      "{} layouts · {} valid · {} fit within {:.2f} GiB ({:.0f} % headroom) · ranked by {} · "
      "{:.2f} s on {} job{}\n",
      r.enumerated, r.valid, r.fitting, r.limit_bytes / k_gib, 100 * so.headroom, objective,
      run.seconds, so.jobs, so.jobs == 1 ? "" : "s");
  if (r.offload_tried)
    out << "no layout fits with the plan's parallel.offload: searched again with every choice "
           "(the optimizer's state on the host from ZeRO-1 on, the parameters too at ZeRO-3, "
           "none)\n";
  if (r.band.cases > 0)
    out << fmt::format(
        "a layout fits when its peak's {:.0f} % band does: the estimate at most {:.2f} GiB "
        "(× {:.3f} at the upper end, family {}, {} reference cases; --confidence off judges the "
        "estimate alone)\n",
        100 * r.band.confidence, r.estimate_limit_bytes / k_gib, r.band.ratio_high, r.band.family,
        r.band.cases);
  if (r.top.empty()) {
    out << "no layout fits: try more GPUs (--gpus, --fewest), a smaller batch or sequence, or "
           "--allow more values\n";
    return;
  }
  out << fmt::format(
      "\n{:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>6} {:>3} {:>3} {:>10} {:>3} {:>5} "
      "{:<21} {:>9} {:>9} {:>10} {:>6}\n",
      "#", "tp", "pp", "dp", "cp", "ep", "zero", "sp", "ovl", "recompute", "mb", "accum",
      "schedule", "peak GiB", "step", "tok/s/GPU", "MFU");
  int rank = 0;
  for (const Layout& l : r.top) {
    std::string sched = l.pp > 1 ? std::string(to_string(l.schedule)) : "-";
    if (l.schedule == Schedule::interleaved) sched += fmt::format(" ×{}", l.virtual_stages);
    if (!l.stage_layers.empty()) sched += " uneven";
    if (l.placement == 1) sched += " pp<dp";
    out << fmt::format(
        "{:>3} {:>3} {:>3} {:>5} {:>3} {:>3} {:>6} {:>3} {:>3} {:>10} {:>3} {:>5} "
        "{:<21} {:>9.2f} {:>9} {:>10.0f} {:>5.1f}%\n",
        ++rank, l.tp, l.pp, l.dp, l.cp, l.ep,
        (l.shard > 0 ? fmt::format("{}/{}", l.zero, l.shard) : std::to_string(l.zero)) +
            (l.offload == Offload::optimizer          ? "+o"
             : l.offload == Offload::optimizer_params ? "+op"
                                                      : ""),
        l.sequence_parallel ? "y" : "n", l.tp > 1 ? (l.overlap_tp ? "y" : "n") : "-",
        to_string(l.recompute), l.micro_batch, l.grad_accum, sched, l.peak_bytes / k_gib,
        ms(l.step_s), l.tokens_per_s_per_gpu, 100 * l.mfu);
  }
  out << "\nWhy the best win:\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(3, r.top.size()); ++i) {
    const Layout& l = r.top[i];
    out << fmt::format(
        "  #{}: step {} = compute {} + recompute {} + exposed communication {} + "
        "bubble {} + optimizer {}{}{}\n",
        i + 1, ms(l.step_s), ms(l.compute_s), ms(l.recompute_s), ms(l.comm_s), ms(l.bubble_s),
        ms(l.optimizer_s), l.offload_s > 0 ? " + host offload " + ms(l.offload_s) : "",
        l.host_s > 0 ? " + host dispatch " + ms(l.host_s) : "");
    if (i + 1 < r.top.size()) out << fmt::format("      vs #{}: {}\n", i + 2, why(l, r.top[i + 1]));
  }
  out << fmt::format("\nPareto front, peak memory against step time ({} layout{}):\n",
                     r.pareto.size(), r.pareto.size() == 1 ? "" : "s");
  for (const Layout& l : r.pareto)
    out << fmt::format("  {:>8.2f} GiB  {:>9}  {}\n", l.peak_bytes / k_gib, ms(l.step_s),
                       layout_text(l));
  // Every candidate keeps the stack the plan named or the one inferred from the plan as given
  // (docs/formulas.md#frameworks): pasted with another layout, the plan alone could infer another.
  const std::string stack =
      in.training.framework_basis.empty()
          ? ""
          : fmt::format(" --set training.framework={}", to_string(in.training.framework));
  out << "\nThe best as plan settings:\n  trainledger plan ... "
      << sets_of(r.top.front(), in.cluster) << stack << "\n";
}

}  // namespace

void print_search(const SearchRun& run, const SearchOptions& so, const std::string& objective,
                  const std::string& format, std::ostream& out) {
  const SearchResult& r = run.result;
  if (format == "json") {
    nlohmann::json j;
    j["schema"] = "trainledger.search/1";
    j["search"] = {{"model", run.input.model.name},
                   {"gpu", run.input.cluster.gpu.name},
                   {"gpus", run.world},
                   {"nodes", run.input.cluster.nodes},
                   {"gpus_per_node", run.input.cluster.gpus_per_node},
                   {"objective", objective},
                   {"enumerated", r.enumerated},
                   {"valid", r.valid},
                   {"fitting", r.fitting},
                   {"offload_tried", r.offload_tried},
                   {"limit_bytes", std::llround(r.limit_bytes)},
                   {"confidence", r.band.confidence},
                   {"estimate_limit_bytes", std::llround(r.estimate_limit_bytes)},
                   {"seconds", run.seconds},
                   {"jobs", so.jobs}};
    j["top"] = nlohmann::json::array();
    for (const Layout& l : r.top) j["top"].push_back(layout_json(l, r.band));
    j["pareto"] = nlohmann::json::array();
    for (const Layout& l : r.pareto) j["pareto"].push_back(layout_json(l, r.band));
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (format == "svg") {
    std::vector<report::ChartPoint> points;
    for (const Layout& l : r.pareto)
      points.push_back({l.peak_bytes / k_gib, l.step_s, layout_text(l), true, layout_tag(l)});
    for (const Layout& l : r.top)
      points.push_back({l.peak_bytes / k_gib, l.step_s, layout_text(l), false, ""});
    // The capacity and the limit every point was held to (less with a band).
    const double capacity = static_cast<double>(run.input.cluster.gpu.memory_bytes) / k_gib;
    std::vector<report::Guide> guides = {
        {capacity, fmt::format("capacity {:.1f} GiB", capacity), false},
        {r.limit_bytes / k_gib,
         fmt::format("limit {:.1f} GiB ({:.0f} % headroom)", r.limit_bytes / k_gib,
                     100 * so.headroom),
         true}};
    if (r.estimate_limit_bytes < r.limit_bytes * (1 - 1e-9))
      guides.push_back({r.estimate_limit_bytes / k_gib,
                        fmt::format("estimate limit {:.1f} GiB ({:.0f} % band)",
                                    r.estimate_limit_bytes / k_gib, 100 * r.band.confidence),
                        true});
    out << report::scatter_svg(
        "chart-search",
        fmt::format("{} on {} GPUs: peak memory against step time ({} fitting layouts; the "
                    "Pareto front joined)",
                    run.input.model.name, run.world, r.fitting),
        "peak memory per GPU (GiB)", "step time (s)", points, guides);
  } else if (format == "csv") {
    out << "rank,tp,pp,dp,cp,ep,zero,zero_shard_size,placement,sequence_parallel,recompute,"
           "micro_batch,grad_accum,schedule,virtual_stages,stage_layers,peak_bytes,step_s,"
           "tokens_per_s_per_gpu,mfu,overlap_tp,offload\n";
    int rank = 0;
    for (const Layout& l : r.top)
      out << fmt::format(
          "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\",{},{:.9g},{:.9g},"
          "{:.6g},{},{}\n",
          ++rank, l.tp, l.pp, l.dp, l.cp, l.ep, l.zero, l.shard,
          l.placement == 1 ? "tp cp pp dp" : "tp cp dp pp", l.sequence_parallel ? "true" : "false",
          to_string(l.recompute), l.micro_batch, l.grad_accum, to_string(l.schedule),
          l.virtual_stages, fmt::join(l.stage_layers, " "), std::llround(l.peak_bytes), l.step_s,
          l.tokens_per_s_per_gpu, l.mfu, l.overlap_tp ? "true" : "false", to_string(l.offload));
  } else {
    print_table(run, so, objective, out);
  }
}

}  // namespace trainledger::cli
