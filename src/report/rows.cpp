#include "rows.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "format.hpp"

namespace trainledger::report {

namespace {

bool same_ledger(const StageMemory& a, const StageMemory& b) {
  if (a.items.size() != b.items.size() || a.role != b.role) return false;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    if (a.items[i].id != b.items[i].id || a.items[i].value != b.items[i].value) return false;
  return true;
}

std::string zero_text(const ParallelSpec& p) {
  if (p.zero == 0) return "DDP";
  std::string s = "ZeRO-" + std::to_string(p.zero);
  if (p.zero_shard_size > 0) s += fmt::format(" (HSDP, shard {})", p.zero_shard_size);
  return s;
}

// Display order: state, then what the step adds, then fixed overheads.
int row_rank(ItemId id) {
  switch (info(id).role) {
    case Role::activation:
      return 1;
    case Role::temporary:
      return 3;
    case Role::overhead:
      return 4;
    default:
      return 0;
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> measured_keys(const PlanSource& loaded) {
  std::vector<std::string> froms;
  for (const std::string& f : loaded.measured_from)
    if (std::find(froms.begin(), froms.end(), f) == froms.end()) froms.push_back(f);
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i < loaded.measured.size(); ++i)
    out.emplace_back(loaded.measured[i], froms.size() > 1 && i < loaded.measured_from.size()
                                             ? loaded.measured_from[i]
                                             : std::string());
  return out;
}

MemoryView memory_view(const PlanResult& plan, const std::vector<int>& only) {
  MemoryView v;
  for (const StageMemory& st : plan.stages) {
    if (!only.empty()) {
      if (std::find(only.begin(), only.end(), st.stage) == only.end()) continue;
    } else if (!v.columns.empty()) {
      StageColumn& last = v.columns.back();
      if (same_ledger(plan.stages[last.representative], st)) {
        last.stages.push_back(st.stage);
        last.title = fmt::format("stages {}-{}", last.stages.front(), st.stage);
        continue;
      }
    }
    v.columns.push_back(
        StageColumn{{st.stage}, fmt::format("stage {}", st.stage), st.role, st.stage});
  }
  for (std::size_t c = 0; c < v.columns.size(); ++c) {
    const StageMemory& st = plan.stages[v.columns[c].representative];
    for (const LineItem& item : st.items) {
      MemoryRow* row = nullptr;
      for (MemoryRow& r : v.rows)
        if (r.id == item.id) row = &r;
      if (!row) {
        v.rows.push_back(MemoryRow{item.item, item.id, item.label, {}});
        v.rows.back().values.resize(v.columns.size());
        row = &v.rows.back();
      }
      row->values[c] = item.value;
    }
  }
  std::stable_sort(v.rows.begin(), v.rows.end(), [](const MemoryRow& a, const MemoryRow& b) {
    return row_rank(a.item) < row_rank(b.item);
  });
  return v;
}

std::string plan_title(const PlanResult& plan) {
  const PlanInput& in = plan.input;
  const ParallelSpec& p = in.parallel;
  std::string s =
      fmt::format("{} · {} × {}", in.model.name, plan.derived.world_size, in.cluster.gpu.name);
  if (in.cluster.nodes > 1)
    s += in.cluster.domain() > in.cluster.gpus_per_node
             ? fmt::format(" ({} nodes × {}, NVLink domains of {})", in.cluster.nodes,
                           in.cluster.gpus_per_node, in.cluster.domain())
             : fmt::format(" ({} nodes × {})", in.cluster.nodes, in.cluster.gpus_per_node);
  s += fmt::format(" · tp {} · pp {} · dp {}", p.tp, p.pp, p.dp);
  if (p.cp > 1) s += fmt::format(" · cp {}", p.cp);
  if (p.ep > 1) s += fmt::format(" · ep {}", p.ep);
  s += " · " + zero_text(p);
  return s;
}

std::vector<std::pair<std::string, std::string>> derived_facts(const PlanResult& plan) {
  const Derived& d = plan.derived;
  const TrainingSpec& t = plan.input.training;
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("params", format_count(d.params));
  if (d.active_params != d.params) out.emplace_back("active params", format_count(d.active_params));
  if (d.trainable_params != d.params)
    out.emplace_back("trainable", format_count(d.trainable_params));
  out.emplace_back("precision", t.recipe == Recipe::none ? std::string(to_string(t.precision))
                                                         : fmt::format("{} ({})", precision_name(t),
                                                                       to_string(t.recipe)));
  out.emplace_back("conventions", t.framework_basis.empty()
                                      ? std::string(to_string(t.framework))
                                      : fmt::format("{} (inferred from the plan: {}; set "
                                                    "training.framework to choose)",
                                                    to_string(t.framework), t.framework_basis));
  out.emplace_back("global batch", fmt::format("{} × {} tokens", d.global_batch, t.seq_len));
  out.emplace_back("grad accum", std::to_string(d.grad_accum));
  return out;
}

std::vector<TimeRow> time_rows(const PlanResult& plan) {
  std::vector<TimeRow> rows;
  const LineItem* step = find_item(plan.time, ItemId::time_step);
  if (!step) return rows;
  for (ItemId id :
       {ItemId::time_compute, ItemId::time_recompute, ItemId::time_comm_exposed, ItemId::time_host,
        ItemId::time_bubble, ItemId::time_optimizer, ItemId::time_offload, ItemId::time_step}) {
    const LineItem* i = find_item(plan.time, id);
    if (!i) continue;
    rows.push_back(
        {i->item, i->id, i->label, i->value, step->value > 0 ? i->value / step->value : 0});
  }
  return rows;
}

std::string throughput_line(const PlanResult& plan) {
  auto v = [&](ItemId id) {
    const LineItem* i = find_item(plan.time, id);
    return i ? i->value : 0.0;
  };
  if (!find_item(plan.time, ItemId::time_step)) return "";
  std::string s = fmt::format(
      "throughput {} tokens/s ({} per GPU) · MFU {} · HFU {} · bubble {} of the pipeline",
      format_number(std::round(v(ItemId::throughput_tokens_per_s))),
      format_number(std::round(v(ItemId::throughput_tokens_per_s_per_gpu))),
      format_percent(v(ItemId::mfu)), format_percent(v(ItemId::hfu)),
      format_percent(v(ItemId::pipeline_bubble_fraction)));
  if (find_item(plan.time, ItemId::scaling_efficiency))
    s += " · scaling " + format_percent(v(ItemId::scaling_efficiency)) + " of one node";
  if (find_item(plan.time, ItemId::time_to_train))
    s += " · " + format_duration(v(ItemId::time_to_train)) + " to train";
  return s;
}

namespace {

// "90 % band: step 42.02 s (…) · 780 tokens/s per GPU (…) (docs/accuracy.md#bands: …)".
std::string band_line(const char* what, const char* cases, const Band& s, const Band& t,
                      const LineItem* step, const LineItem* tput) {
  if (!step || s.cases == 0) return "";
  std::string line =
      fmt::format("{:.0f} % band: {} {} ({}-{})", 100 * s.confidence, what,
                  format_duration(step->value), format_duration(s.low), format_duration(s.high));
  if (tput && t.cases > 0)
    line += fmt::format(" · {} tokens/s per GPU ({}-{})", format_number(std::round(tput->value)),
                        format_number(std::round(t.low)), format_number(std::round(t.high)));
  return line + fmt::format(" (docs/accuracy.md#bands: family {}, {} reference {})", s.family,
                            s.cases, cases);
}

}  // namespace

std::string time_band_line(const PlanResult& plan) {
  return band_line("step", "cases", plan.step_band, plan.throughput_band,
                   find_item(plan.time, ItemId::time_step),
                   find_item(plan.time, ItemId::throughput_tokens_per_s_per_gpu));
}

std::string rl_band_line(const PlanResult& plan) {
  return band_line("RL step", "runs", plan.rl.step_band, plan.rl.throughput_band,
                   find_item(plan.rl.time, ItemId::rl_time_step),
                   find_item(plan.rl.time, ItemId::rl_tokens_per_s_per_gpu));
}

std::string reliability_line(const PlanResult& plan, double unit_bytes, const std::string& unit) {
  auto v = [&](ItemId id) {
    const LineItem* i = find_item(plan.reliability, id);
    return i ? i->value : 0.0;
  };
  if (!find_item(plan.reliability, ItemId::checkpoint_size)) return "";
  std::string s = fmt::format(
      "checkpoint {:.1f} {} written in {} · MTBF {} · optimal interval {} (Young) / {} (Daly) · "
      "waste {}",
      v(ItemId::checkpoint_size) / unit_bytes, unit,
      format_duration(v(ItemId::checkpoint_write_time)), format_duration(v(ItemId::mtbf)),
      format_duration(v(ItemId::checkpoint_interval_young)),
      format_duration(v(ItemId::checkpoint_interval_daly)),
      format_percent(v(ItemId::checkpoint_waste)));
  if (find_item(plan.reliability, ItemId::checkpoint_waste_planned))
    s += " (" + format_percent(v(ItemId::checkpoint_waste_planned)) + " at checkpoint.interval)";
  if (find_item(plan.reliability, ItemId::reliability_time_lost))
    s += fmt::format(" · {:.1f} failures and {} lost over the run", v(ItemId::reliability_failures),
                     format_duration(v(ItemId::reliability_time_lost)));
  return s;
}

Comparable comparable(const StageMemory& stage) {
  Comparable c;
  double outside = 0, fragmentation = 0;
  for (const LineItem& i : stage.items) {
    if (info(i.item).role == Role::state) c.state += i.value;
    if (i.item == ItemId::overhead_cuda_context || i.item == ItemId::overhead_nccl)
      outside += i.value;
    if (i.item == ItemId::overhead_fragmentation) fragmentation += i.value;
  }
  c.device = stage.peak_bytes;
  c.reserved = c.device - outside;
  c.allocated = c.reserved - fragmentation;
  return c;
}

std::string host_remedy(const PlanResult& plan, ItemId id) {
  switch (id) {
    case ItemId::host_offload:
      return "offload less (parallel.offload), or shard it over more GPUs (more nodes, a higher "
             "ZeRO stage)";
    case ItemId::host_activations:
      return "offload fewer layers' activations (training.activation_offload_layers)";
    case ItemId::host_checkpoint_staging:
      return plan.input.checkpoint.format == CheckpointFormat::gathered
                 ? "save sharded (checkpoint.format = \"sharded\"): the first node no longer "
                   "gathers the whole checkpoint"
                 : "more nodes: each node stages its share of the checkpoint";
    case ItemId::host_data_workers:
      return "fewer or leaner data-loader workers (training.data_workers, "
             "training.data_worker_memory)";
    case ItemId::host_runtime:
      return "less per rank (cluster.host_process_memory)";
    default:
      return "more host memory per node (cluster.host_memory)";
  }
}

std::vector<std::string> fix_lines(const PlanResult& plan, const std::string& unit_name,
                                   double unit_bytes) {
  const Verdict& v = plan.verdict;
  std::vector<std::string> out;
  if (!needs_fixes(v)) return out;
  if (only_host_over(v)) {
    std::vector<LineItem> items = plan.host.items;
    std::stable_sort(items.begin(), items.end(),
                     [](const LineItem& a, const LineItem& b) { return a.value > b.value; });
    for (const LineItem& i : items)
      out.push_back(fmt::format("{} {:.2f} {} → {}", i.id, i.value / unit_bytes, unit_name,
                                host_remedy(plan, i.item)));
    out.push_back(
        fmt::format("or more host memory per node: cluster.host_memory = \"{:.0f} "
                    "GiB\" holds it",
                    std::ceil(plan.host.peak_bytes / (1024.0 * 1024 * 1024))));
    return out;
  }
  bool one_fits = false;
  for (const Fix& f : plan.fixes) {
    one_fits = one_fits || f.then_fits;
    out.push_back(f.change
                      ? fmt::format("{} {:.2f} {} → {} frees {:.2f} {} on stage {}{}",
                                    info(f.item).name, f.bytes / unit_bytes, unit_name,
                                    change_text(*f.change), f.freed_bytes / unit_bytes, unit_name,
                                    v.worst_stage, f.then_fits ? " (then it fits)" : "")
                      : fmt::format("{} {:.2f} {} → no single knob shrinks it", info(f.item).name,
                                    f.bytes / unit_bytes, unit_name));
  }
  if (!one_fits)
    out.push_back(
        "no single change fits: trainledger search, with this plan and its --set options, tries "
        "every layout on the cluster (--nodes N for more GPUs, --fewest for the fewest GPUs that "
        "fit)");
  if (!v.host_fits)
    out.push_back(fmt::format("and the host memory per node: {:.2f} of {:.2f} {}",
                              plan.host.peak_bytes / unit_bytes,
                              plan.host.capacity_bytes / unit_bytes, unit_name));
  return out;
}

std::string verdict_sentence(const PlanResult& plan, const std::string& unit_name,
                             double unit_bytes) {
  const Verdict& v = plan.verdict;
  const StageMemory& worst = plan.stages[v.worst_stage];
  const std::string where =
      (plan.stages.size() > 1 ? fmt::format("stage {} ({})", worst.stage, worst.role)
                              : std::string("every GPU")) +
      fmt::format(", {} phase,", to_string(worst.peak_phase));
  const Band& b = v.peak_band;
  const std::string band =
      b.cases > 0 ? fmt::format(
                        "; {:.0f} % band {:.2f}-{:.2f} {} (docs/accuracy.md#bands: family "
                        "{}, {} reference cases)",
                        100 * b.confidence, b.low / unit_bytes, b.high / unit_bytes, unit_name,
                        b.family, b.cases)
                  : "";
  if (v.fits && v.host_fits && !v.rl_fits) {
    return fmt::format(
               "does NOT fit: {}; the training phase alone fits: worst rank is {} at {:.2f} of "
               "{:.2f} {} ({} free)",
               plan.rl.problem, where, v.peak_bytes / unit_bytes, v.limit_bytes / unit_bytes,
               unit_name, format_percent(v.headroom)) +
           band;
  }
  if (v.fits && !v.host_fits) {
    const HostMemory& h = plan.host;
    return fmt::format(
               "does NOT fit: the host memory per node needs {:.2f} of {:.2f} {} ({:.2f} {} over; "
               "cluster.host_memory); the GPUs fit: worst rank is {} at {:.2f} of {:.2f} {} ({} "
               "free)",
               h.peak_bytes / unit_bytes, h.capacity_bytes / unit_bytes, unit_name,
               (h.peak_bytes - h.capacity_bytes) / unit_bytes, unit_name, where,
               v.peak_bytes / unit_bytes, v.limit_bytes / unit_bytes, unit_name,
               format_percent(v.headroom)) +
           band;
  }
  if (near_by_band(v)) {
    return fmt::format(
        "near: fits at the estimate, but not at its band's upper end (check fails it): worst rank "
        "is {} at {:.2f} of {:.2f} {} ({} free){}; over the limit of {:.2f} {} (capacity less "
        "the {} headroom)",
        where, v.peak_bytes / unit_bytes, v.limit_bytes / unit_bytes, unit_name,
        format_percent(v.headroom), band, v.limit_bytes * (1 - v.required_headroom) / unit_bytes,
        unit_name, format_percent(v.required_headroom));
  }
  if (v.fits && v.headroom < v.required_headroom) {
    return fmt::format(
               "fits, but by less than the {} headroom (check fails it): worst rank is {} at "
               "{:.2f} of "
               "{:.2f} {} ({} free)",
               format_percent(v.required_headroom), where, v.peak_bytes / unit_bytes,
               v.limit_bytes / unit_bytes, unit_name, format_percent(v.headroom)) +
           band;
  }
  if (v.fits) {
    return fmt::format("fits: worst rank is {} at {:.2f} of {:.2f} {} ({} free)", where,
                       v.peak_bytes / unit_bytes, v.limit_bytes / unit_bytes, unit_name,
                       format_percent(v.headroom)) +
           band;
  }
  const HostMemory& h = plan.host;
  const std::string host =
      v.host_fits
          ? ""
          : fmt::format("; the host memory per node too: {:.2f} of {:.2f} {}",
                        h.peak_bytes / unit_bytes, h.capacity_bytes / unit_bytes, unit_name);
  return fmt::format("does NOT fit: {} needs {:.2f} of {:.2f} {} ({:.2f} {} over)", where,
                     v.peak_bytes / unit_bytes, v.limit_bytes / unit_bytes, unit_name,
                     (v.peak_bytes - v.limit_bytes) / unit_bytes, unit_name) +
         band + host;
}

}  // namespace trainledger::report
