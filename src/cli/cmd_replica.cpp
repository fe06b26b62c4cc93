// `calibrate replica` (the script) and `calibrate compare --replica` (its result against the
// planner): docs/calibration.md#replica.
#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "app.hpp"
#include "files.hpp"
#include "profile_io.hpp"
#include "rows.hpp"
#include "trainledger/report.hpp"
#include "trainledger/rules.hpp"
#include "trainledger/text.hpp"
#include "value.hpp"

namespace trainledger::cli {

namespace {

constexpr double k_gib = 1024.0 * 1024 * 1024;
constexpr const char* k_phases[] = {"forward", "backward", "optimizer"};

struct ReplicaRun {
  int layers = 0;
  double step_s = 0, forward_s = 0, backward_s = 0, optimizer_s = 0;
  bool memory = false;                 // measured on a GPU
  double allocated = 0, reserved = 0;  // the largest of the phases' peaks
  double phase_allocated[3] = {};      // each phase's allocated peak (k_phases)
  // After the run: the device's used memory and the allocator's reserve (0: not recorded).
  double device_used = 0, reserved_now = 0;
};

struct Replica {
  std::string file, device;
  bool tiny = false;
  std::int64_t micro_batch = 0, seq_len = 0;
  std::vector<ReplicaRun> runs;
};

config::Origin origin(const std::string& file, int line = 0) {
  return config::Origin{file, line, line > 0 ? 1 : 0, "replica"};
}

int line_of(const std::string& text, const std::string& key) {
  const std::size_t at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

Replica read_replica(const std::string& file) {
  std::string buffer;
  const nlohmann::json j =
      read_json_file(file, "replica", "a result of the script calibrate replica writes", buffer);
  auto fail = [&](const std::string& m, const std::string& key = "") {
    throw config::ConfigError(
        {config::Diagnostic{origin(file, key.empty() ? 0 : line_of(buffer, key)), m}});
  };
  if (!j.is_object() || !j.contains("format") || j["format"] != "trainledger.replica/1")
    fail("not a replica result: \"format\" must be \"trainledger.replica/1\"", "format");
  Replica r;
  r.file = file;
  if (j.contains("device") && j["device"].is_string())
    r.device = text::printable(j["device"].get<std::string>(), 80);
  r.tiny = j.value("tiny", false);
  auto count = [&](const nlohmann::json& o, const char* key, double lo, double hi) {
    if (!o.contains(key) || !o[key].is_number_integer())
      fail(fmt::format("\"{}\" must be an integer", key), key);
    const double v = o[key].get<double>();
    if (v < lo || v > hi)
      fail(fmt::format("\"{}\": {:g} is out of range ({:g} to {:g})", key, v, lo, hi), key);
    return v;
  };
  auto seconds = [&](const nlohmann::json& o, const char* key) {
    if (!o.contains(key) || !o[key].is_number() || !std::isfinite(o[key].get<double>()) ||
        o[key].get<double>() < 0 || o[key].get<double>() > 1e6)
      fail(fmt::format("\"{}\" must be a number of seconds from 0 to 1e6", key), key);
    return o[key].get<double>();
  };
  auto bytes = [&](const nlohmann::json& o, const char* key) {
    if (!o.contains(key) || !o[key].is_number() || !std::isfinite(o[key].get<double>()) ||
        o[key].get<double>() < 0 || o[key].get<double>() > 9007199254740992.0)
      fail(fmt::format("\"{}\" must be a byte count from 0 to 2^53", key), key);
    return o[key].get<double>();
  };
  r.micro_batch = static_cast<std::int64_t>(count(j, "micro_batch", 1, 1e7));
  r.seq_len = static_cast<std::int64_t>(count(j, "seq_len", 1, 1e9));
  if (!j.contains("runs") || !j["runs"].is_array() || j["runs"].empty() || j["runs"].size() > 64)
    fail("\"runs\" must be an array of 1 to 64 runs (one per depth)", "runs");
  for (const auto& run : j["runs"]) {
    if (!run.is_object()) fail("each of \"runs\" must be an object", "runs");
    ReplicaRun x;
    x.layers = static_cast<int>(count(run, "layers", 1, 1024));
    x.forward_s = seconds(run, "forward_s");
    x.backward_s = seconds(run, "backward_s");
    x.optimizer_s = seconds(run, "optimizer_s");
    x.step_s = x.forward_s + x.backward_s + x.optimizer_s;
    if (run.contains("peak_allocated")) {
      const auto& a = run["peak_allocated"];
      const auto& rs = run.contains("peak_reserved") ? run["peak_reserved"] : nlohmann::json();
      if (!a.is_object() || !rs.is_object())
        fail("\"peak_allocated\" and \"peak_reserved\" must be objects of the phases' peaks",
             "peak_allocated");
      for (int k = 0; k < 3; ++k) {
        const char* ph = k_phases[k];
        const double allocated = bytes(a, ph), reserved = bytes(rs, ph);
        x.phase_allocated[k] = allocated;
        // The caching allocator never holds less than it has handed out.
        if (reserved < allocated)
          fail(fmt::format("the {} phase's reserved peak is below its allocated peak: not one "
                           "run's measurement",
                           ph),
               "peak_reserved");
        x.allocated = std::max(x.allocated, allocated);
        x.reserved = std::max(x.reserved, reserved);
      }
      x.memory = true;
      if (run.contains("device_used") && run.contains("memory_stats") &&
          run["memory_stats"].is_object() &&
          run["memory_stats"].contains("reserved_bytes.all.current")) {
        x.device_used = bytes(run, "device_used");
        x.reserved_now = bytes(run["memory_stats"], "reserved_bytes.all.current");
      }
    }
    for (const ReplicaRun& y : r.runs)
      if (y.layers == x.layers) fail(fmt::format("depth {} is measured twice", x.layers), "layers");
    r.runs.push_back(x);
  }
  std::sort(r.runs.begin(), r.runs.end(),
            [](const ReplicaRun& a, const ReplicaRun& b) { return a.layers < b.layers; });
  const bool memory = r.runs.front().memory;
  for (const ReplicaRun& x : r.runs)
    if (x.memory != memory) fail("some runs have memory peaks and some not: one device per result");
  return r;
}

// A least-squares line through (layers, value): the fixed part and the part per layer.
struct Line {
  double fixed = 0, per_layer = 0;
  double at(double layers) const { return fixed + per_layer * layers; }
};
Line fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  Line l;
  const double d = n * sxx - sx * sx;
  l.per_layer = d != 0 ? (n * sxy - sx * sy) / d : 0;
  l.fixed = (sy - l.per_layer * sx) / n;
  return l;
}

// The plan as its replica runs: `layers` layers on one GPU, one micro-batch per step, no
// model parallelism; ZeRO/FSDP stays (FSDP2 on one rank).
PlanInput replica_input(const PlanInput& base, int layers) {
  PlanInput in = base;
  in.model.layers = layers;
  ParallelSpec& p = in.parallel;
  p.tp = p.pp = p.cp = p.ep = p.dp = 1;
  p.sequence_parallel = false;
  p.stage_layers.clear();
  p.virtual_stages = 1;
  p.schedule = Schedule::one_f_one_b;
  p.zero_shard_size = 0;
  p.offload = Offload::none;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 1;
  in.training.global_batch = in.training.micro_batch;
  return in;
}

struct Predicted {
  double allocated = 0, reserved = 0, step_s = 0;
  double dynamic = 0;  // activations, logits and temporaries: what the allocator's reserve scales
  double activations = 0;        // the layers' saved activations at the peak
  bool activation_peak = false;  // the peak is in forward or backward (activations held)
};

Predicted predict(const PlanInput& in) {
  if (const auto errors = check_rules(in); !errors.empty())
    throw config::ConfigError(
        {config::Diagnostic{config::Origin{"--replica", 0, 0, "option"},
                            "the plan's replica breaks a rule: " + errors.front().message}});
  const PlanResult r = compute_plan(in);
  Predicted out;
  for (const StageMemory& s : r.stages) {
    const report::Comparable c = report::comparable(s);
    if (c.allocated <= out.allocated) continue;
    out.allocated = c.allocated;
    out.reserved = std::max(out.reserved, c.reserved);
    out.dynamic = 0;
    for (const LineItem& i : s.items)
      if (info(i.item).role == Role::activation || info(i.item).role == Role::temporary)
        out.dynamic += i.value;
    out.activations = value_of(s.items, ItemId::activations);
    out.activation_peak = s.peak_phase == Phase::forward || s.peak_phase == Phase::backward;
  }
  if (const LineItem* t = find_item(r.time, ItemId::time_step)) out.step_s = t->value;
  return out;
}

}  // namespace

int compare_replica(const CalibrateOptions& o, const config::LoadedPlan& loaded,
                    std::ostream& out) {
  const PlanInput& base = loaded.input;
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  // What a GPU replica measures, for a calibration profile (--output).
  calibrate::Profile profile;
  profile.tool = "trainledger " + report::version();
  profile.method = "calibrate compare --replica";
  profile.created = utc_now();
  std::string table =
      fmt::format("{} · replica results against the plan at their depths\n", loaded.source);
  for (const std::string& f : o.replica) {
    const Replica r = read_replica(f);
    if (!r.tiny &&
        (r.micro_batch != base.training.micro_batch || r.seq_len != base.training.seq_len))
      throw config::ConfigError({config::Diagnostic{
          origin(f), fmt::format("ran micro-batch {} × {} tokens, the plan {} × {}: the replica "
                                 "of another plan (write it again with calibrate replica)",
                                 r.micro_batch, r.seq_len, base.training.micro_batch,
                                 base.training.seq_len)}});
    std::vector<double> depth, m_alloc, m_res, m_step, p_alloc, p_res, p_step;
    double deepest_dynamic = 0;  // the plan's dynamic memory at the deepest run
    // The planner's activations per layer at the deepest run, and whether every run (planned
    // and measured) peaks where activations are held: then the per-layer slopes compare them.
    double deepest_activations = 0;
    bool activation_peaks = true;
    nlohmann::ordered_json runs = nlohmann::ordered_json::array();
    const std::string name = text::printable(f.substr(f.find_last_of('/') + 1), 64);
    table += fmt::format("{} ({}{})\n", name, r.device.empty() ? "device not named" : r.device,
                         r.tiny ? ", tiny: a structural test, not the plan's sizes" : "");
    table += fmt::format("  {:>6}  {:>24}  {:>24}  {:>24}\n", "layers", "allocated GiB (plan/run)",
                         "reserved GiB (plan/run)", "step s (plan/run)");
    for (const ReplicaRun& x : r.runs) {
      const Predicted p = predict(replica_input(base, x.layers));
      depth.push_back(x.layers);
      m_alloc.push_back(x.allocated);
      m_res.push_back(x.reserved);
      m_step.push_back(x.step_s);
      p_alloc.push_back(p.allocated);
      p_res.push_back(p.reserved);
      p_step.push_back(p.step_s);
      deepest_dynamic = p.dynamic;
      deepest_activations = p.activations / x.layers;
      const double* peak =
          std::max_element(std::begin(x.phase_allocated), std::end(x.phase_allocated));
      activation_peaks = activation_peaks && p.activation_peak && x.memory &&
                         peak != std::end(x.phase_allocated) - 1;  // not the optimizer's
      auto pair = [&](double plan, double run, bool have, double unit) {
        return have ? fmt::format("{:>9.3f} / {:<9.3f} {:>+4.0f}%", plan / unit, run / unit,
                                  run > 0 ? 100 * (plan - run) / run : 0.0)
                    : fmt::format("{:>9.3f} / {:<14}", plan / unit, "—");
      };
      table += fmt::format("  {:>6}  {:>24}  {:>24}  {:>24}\n", x.layers,
                           pair(p.allocated, x.allocated, x.memory, k_gib),
                           pair(p.reserved, x.reserved, x.memory, k_gib),
                           pair(p.step_s, x.step_s, !r.tiny, 1));
      nlohmann::ordered_json row = {{"layers", x.layers},
                                    {"predicted",
                                     {{"allocated_bytes", p.allocated},
                                      {"reserved_bytes", p.reserved},
                                      {"step_s", p.step_s}}}};
      nlohmann::ordered_json measured = {{"step_s", x.step_s}};
      if (x.memory) {
        measured["allocated_bytes"] = x.allocated;
        measured["reserved_bytes"] = x.reserved;
      }
      row["measured"] = measured;
      runs.push_back(row);
    }
    // Fixed and per-layer parts, and both extrapolated to the plan's depth on one GPU.
    // Fixed and per-layer parts from two depths or more, and the plan's depth on one GPU: the
    // planner's own estimate there against the measured lines extrapolated. A memory peak is
    // extrapolated phase by phase and the largest taken: the phase that peaks can change with
    // depth (the optimizer step's state grows faster per layer than one micro-batch's
    // activations under recompute).
    const double full = base.model.layers;
    const bool fitted = r.runs.size() >= 2;
    const Predicted at_full =
        fitted ? predict(replica_input(base, base.model.layers)) : Predicted{};
    nlohmann::ordered_json parts = fitted ? nlohmann::ordered_json::object() : nullptr;
    auto peak_at = [&]() {
      std::pair<double, const char*> best{0, ""};
      for (int k = 0; k < 3; ++k) {
        std::vector<double> y;
        for (const ReplicaRun& x : r.runs) y.push_back(x.phase_allocated[k]);
        const double v = fit(depth, y).at(full);
        if (v > best.first) best = {v, k_phases[k]};
      }
      return best;
    };
    auto part = [&](const char* what, const std::vector<double>& plan,
                    const std::vector<double>& run, bool have, double unit, const char* unit_name,
                    double planned_at_full) {
      const Line lp = fit(depth, plan), lr = fit(depth, run);
      const bool step = std::string(what) == "step";
      nlohmann::ordered_json measured = nullptr;
      double run_at_full = lr.at(full);
      std::string phase;
      if (have) {
        measured = {{"fixed", lr.fixed}, {"per_layer", lr.per_layer}};
        if (!step) {
          // The allocator's cache does not grow along a line with depth (it follows the sizes of
          // the blocks freed and asked for, and can shrink from one depth to the next): the
          // reserved peak is the allocated one plus the deepest run's slack.
          const auto [v, ph] = peak_at();
          const ReplicaRun& last = r.runs.back();
          run_at_full = std::string(what) == "reserved" ? v + (last.reserved - last.allocated) : v;
          phase = ph;
        }
        measured["at_plan_depth"] = run_at_full;
        if (!phase.empty()) measured["peak_phase"] = phase;
      }
      parts[what] = {
          {"predicted",
           {{"fixed", lp.fixed}, {"per_layer", lp.per_layer}, {"at_plan_depth", planned_at_full}}},
          {"measured", measured}};
      if (!have) return;
      table += fmt::format(
          "  {:<10} per layer {:.4g} / {:.4g} {}, fixed {:.4g} / {:.4g} {}; at {} layers on one "
          "GPU {:.4g} / {:.4g} {}{}\n",
          what, lp.per_layer / unit, lr.per_layer / unit, unit_name, lp.fixed / unit,
          lr.fixed / unit, unit_name, base.model.layers, planned_at_full / unit, run_at_full / unit,
          unit_name, phase.empty() ? "" : " (peak in the " + phase + ")");
      // Where a part is under-predicted by more than 5 %, what it holds.
      std::vector<std::string> causes;
      if (lr.per_layer > 1.05 * lp.per_layer)
        causes.push_back(step ? "the layers run slower than assumed: cluster.matmul_efficiency, "
                                "attention_efficiency, host dispatch (write a profile with -o)"
                              : "per layer under-predicted: the activations a layer saves "
                                "(training.framework conventions, recompute, attention)");
      if (lr.fixed > 1.05 * lp.fixed + (step ? 0.0 : 0.05 * k_gib))
        causes.push_back(step ? "the fixed part is slower: the LM head and loss, the optimizer "
                                "step, host dispatch"
                              : "fixed part under-predicted: the CUDA context, the embedding's "
                                "and head's state, the loss's logits (cluster.cuda_context, "
                                "training.loss)");
      for (const std::string& c : causes) table += "    likely cause: " + c + "\n";
      parts[what]["causes"] = causes;
    };
    const bool memory = r.runs.front().memory;
    // A replica holds the whole embedding, head and their optimizer state on one GPU.
    const double capacity = static_cast<double>(base.cluster.gpu.memory_bytes);
    nlohmann::ordered_json notes = nlohmann::ordered_json::array();
    if (capacity > 0 && !p_res.empty() && p_res.back() > capacity) {
      notes.push_back(fmt::format(
          "the plan's replica at {} layers needs {:.1f} GiB on one GPU, over its {:.1f} GiB: "
          "the embedding, the head and their optimizer state are whole on it; run fewer layers "
          "(--layers), a smaller micro-batch, or ZeRO (parallel.zero = 3 runs FSDP2 on one rank)",
          r.runs.back().layers, p_res.back() / k_gib, capacity / k_gib));
      table += "  note: " + notes.back().get<std::string>() + "\n";
    }
    if (!fitted) {
      notes.push_back(fmt::format(
          "one depth measured ({} layers): predicted against measured there, no fixed and "
          "per-layer parts (two depths or more separate them)",
          r.runs.front().layers));
      table += "  note: " + notes.back().get<std::string>() + "\n";
    }
    if (fitted) {
      part("allocated", p_alloc, m_alloc, memory, k_gib, "GiB", at_full.allocated);
      part("reserved", p_res, m_res, memory, k_gib, "GiB", at_full.reserved);
      part("step", p_step, m_step, !r.tiny, 1, "s", at_full.step_s);
    }
    if (!memory) table += "  (no GPU: memory was not measured; the times are the device's own)\n";
    if (memory && !r.tiny) {
      profile.sources.push_back(f);
      if (profile.gpu_name.empty()) profile.gpu_name = r.device;
      // The CUDA context and the kernels loaded: what the device uses beyond the allocator.
      const ReplicaRun& last = r.runs.back();
      const double context = last.device_used - last.reserved_now;
      if (last.device_used > 0 && context > 0 && context < 16 * k_gib)
        profile.cluster.push_back(
            {"cuda_context", fmt::format("\"{:.3f} GiB\"", context / k_gib),
             fmt::format("device used {:.2f} GiB - allocator reserved {:.2f} GiB after the "
                         "{}-layer replica ({})",
                         last.device_used / k_gib, last.reserved_now / k_gib, last.layers,
                         text::printable(name, 64))});
      // The activations a layer really saves: the measured per-layer slope of the peak over the
      // planned one, where both peak in forward or backward (the state per layer is exact).
      // Written only where it raises them: with fewer activations the whole-depth reserve came
      // out optimistic (-7.5 and -8.5 % on the grid's 1B and Gemma 3 1B at 1 x 2,048), since
      // the allocator's slack grows with depth faster than 2-3 layers show.
      double factor = 1;
      if (fitted && activation_peaks && deepest_activations > 0) {
        const Line la = fit(depth, p_alloc), lm = fit(depth, m_alloc);
        // Outside 0.1-10 the difference is not the activations' (the order of the backward
        // pass, the state): no factor, no note.
        const double measured = 1 + (lm.per_layer - la.per_layer) / deepest_activations;
        const std::string how = fmt::format(
            "1 + ({:.4g} measured - {:.4g} planned GiB per layer at the forward or backward "
            "peak) / the ledger's {:.4g} GiB of activations per layer",
            lm.per_layer / k_gib, la.per_layer / k_gib, deepest_activations / k_gib);
        const bool theirs = measured >= 0.1 && measured <= 10;
        if (theirs && measured > 1) {
          factor = measured;
          profile.cluster.push_back({"activation_factor", fmt::format("{:.3f}", factor),
                                     how + " (" + text::printable(name, 64) + ")"});
        } else if (theirs) {
          notes.push_back(fmt::format(
              "the layers save {:.2f}x the ledger's activations ({}); a profile does not lower "
              "them (the allocator's reserve at the whole depth would come out optimistic)",
              measured, how));
          table += "  note: " + notes.back().get<std::string>() + "\n";
        }
      }
      // The allocator's reserve over what it handed out, as a share of the dynamic memory (with
      // the activations the profile's factor gives, so that the two apply together).
      const double dynamic = deepest_dynamic - (1 - factor) * deepest_activations * last.layers;
      if (dynamic > 0 && last.reserved >= last.allocated) {
        const double frag = std::min(1.0, (last.reserved - last.allocated) / dynamic);
        const double kept = std::max(frag, base.cluster.fragmentation);
        profile.cluster.push_back(
            {"fragmentation", fmt::format("{:.3f}", kept),
             fmt::format("reserved {:.2f} GiB - allocated {:.2f} GiB at the peak over the plan's "
                         "{:.2f} GiB of activations, logits and temporaries ({} layers, {}): "
                         "{:.3f}{}",
                         last.reserved / k_gib, last.allocated / k_gib, dynamic / k_gib,
                         last.layers, text::printable(name, 64), frag,
                         kept > frag ? fmt::format(", below the plan's {:.3g}, which is kept (the "
                                                   "reserve grows with depth faster than 2-3 "
                                                   "layers show)",
                                                   kept)
                                     : "")});
      }
      // The GEMMs' efficiency from the step's part per layer (a layer's time is its GEMMs,
      // attention and element-wise kernels, all scaled alike).
      const Line lp = fit(depth, p_step), lr = fit(depth, m_step);
      if (fitted && lp.per_layer > 0 && lr.per_layer > 0) {
        const double e =
            std::clamp(base.cluster.matmul_efficiency * lp.per_layer / lr.per_layer, 0.01, 1.0);
        profile.cluster.push_back(
            {"matmul_efficiency", fmt::format("{:.3f}", e),
             fmt::format("{:.3g} x the plan's {:.4g} s per layer / the {:.4g} s measured ({})",
                         base.cluster.matmul_efficiency, lp.per_layer, lr.per_layer,
                         text::printable(name, 64))});
      }
    }
    results.push_back({{"file", f},
                       {"device", r.device},
                       {"tiny", r.tiny},
                       {"runs", runs},
                       {"parts", parts},
                       {"notes", notes}});
  }
  table += "(plan / run; error = (plan − run) / run: positive is the safe side)\n";
  if (!o.output.empty()) {
    if (profile.cluster.empty())
      throw config::ConfigError({config::Diagnostic{
          config::Origin{"-o", 0, 0, "option"},
          "nothing measured to write: a profile needs a replica result from a GPU, not a tiny "
          "or CPU run"}});
    // One value per key: the last result's.
    std::vector<calibrate::Profile::Value> unique;
    for (auto it = profile.cluster.rbegin(); it != profile.cluster.rend(); ++it)
      if (std::none_of(unique.begin(), unique.end(),
                       [&](const auto& v) { return v.key == it->key; }))
        unique.push_back(*it);
    profile.cluster.assign(unique.rbegin(), unique.rend());
    write_atomically(o.output, calibrate::render_profile(profile));
    table += fmt::format("wrote {}: {} measured key(s) for plan --calibration\n",
                         text::printable(o.output, 200), profile.cluster.size());
  }
  if (o.plan.format == "json") {
    nlohmann::ordered_json doc = {{"schema", "trainledger.replica_compare/1"},
                                  {"plan", loaded.source},
                                  {"replicas", results}};
    out << doc.dump(2) << "\n";
  } else {
    out << table;
  }
  return k_exit_ok;
}

}  // namespace trainledger::cli
