// `trainledger calibrate import LOG...` (nccl-tests logs), `calibrate compare` (memory stats
// against the plan) and `calibrate probe` (measure the cluster): calibration profiles
// (docs/calibration.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "app.hpp"
#include "calibration_detail.hpp"
#include "files.hpp"
#include "probe.hpp"
#include "profile_io.hpp"
#include "rows.hpp"
#include "trainledger/calibrate.hpp"
#include "trainledger/text.hpp"
#include "value.hpp"

#include <unistd.h>

namespace trainledger::cli {

// Shared with cmd_probe.cpp (profile_io.hpp).

// UTC now, or SOURCE_DATE_EPOCH when set (reproducible profiles).
std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    char* end = nullptr;
    const long long v = std::strtoll(epoch, &end, 10);
    if (end != epoch && *end == '\0' && v >= 0) t = static_cast<std::time_t>(v);
  }
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Writes `text` to `path` atomically (config::write_file_atomically): never over a device, a
// FIFO, a directory or a symbolic link; nothing is left behind when it fails.
void write_atomically(const std::string& path, const std::string& text) {
  config::write_file_atomically(path, text);
}

// What a written profile holds, for the terminal.
void print_summary(std::ostream& out, const std::string& path, const calibrate::Profile& profile) {
  // Names from the command line and the logs (files, GPUs, hosts): printable on the terminal.
  using text::printable;
  out << fmt::format("wrote {} ({}{} sweep{})\n", printable(path),
                     profile.gpu_name.empty() ? "" : printable(profile.gpu_name) + ", ",
                     profile.sweeps.size(), profile.sweeps.size() == 1 ? "" : "s");
  for (const calibrate::Fit& f : profile.fits)
    out << fmt::format(
        "  {} ({}): {} ranks on {} node{}: α {}, B {:.2f} GB/s (largest message "
        "{:.2f} GB/s), worst fit error {:.0f} %\n",
        printable(f.source.substr(f.source.find_last_of('/') + 1)), to_string(f.kind), f.ranks,
        f.nodes, f.nodes == 1 ? "" : "s",
        !f.alpha_measured ? "not measured (no message ≤ 4 MiB)"
                          : fmt::format("{:.2f} us{}", f.alpha_s * 1e6,
                                        f.alpha_extrapolated ? " (extrapolated)" : ""),
        f.busbw / 1e9, f.largest_busbw / 1e9, 100 * f.worst_error);
  for (const calibrate::Profile::Value& v : profile.cluster)
    out << fmt::format("  cluster.{} = {}   ({})\n", v.key, printable(v.value), printable(v.why));
  for (const std::string& n : profile.notes) out << "  note: " << printable(n) << "\n";
  for (const calibrate::Measurement& m : profile.measurements)
    out << fmt::format("  measured {} = {:.4g} {}   ({})\n", m.name, m.value, m.unit,
                       printable(m.why));
}

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& o, CLI::App*& import,
                                CLI::App*& compare, CLI::App*& probe, CLI::App*& replica) {
  CLI::App* sub =
      app.add_subcommand("calibrate",
                         "Measured numbers in place of assumed ones: probe the GPUs and links, or "
                         "fit nccl-tests logs, into a calibration profile for plan --calibration");
  sub->require_subcommand(1);
  import = sub->add_subcommand(
      "import",
      "Fit nccl-tests logs (text output of all_reduce_perf, all_gather_perf, "
      "reduce_scatter_perf, alltoall_perf, sendrecv_perf) into a profile: latency α and bus "
      "bandwidth B per collective and link");
  import->add_option("logs", o.logs, "nccl-tests logs, one test per file")->required();
  import->add_option("-o,--output", o.output,
                     "write the profile here (atomically); default: print it");
  // --collective, --ranks and --nodes: one value for every log, or a comma-separated value per
  // log (an intra-node and a multi-node log in one profile).
  import
      ->add_option("--collective", o.collective,
                   "the collective, when the log does not name its X_perf command: "
                   "all_reduce, all_gather, reduce_scatter, alltoall or sendrecv (one for every "
                   "log, or one per log: all_reduce,all_gather)")
      ->delimiter(',')
      ->allow_extra_args(false);
  import
      ->add_option("--ranks", o.ranks,
                   "ranks in the test, when the log lists no devices (default: from its "
                   "busbw/algbw ratio); one for every log, or one per log: 8,16")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::Range(1, 1 << 20));
  import
      ->add_option("--nodes", o.nodes,
                   "nodes the ranks ran on, when the log lists no devices (1: one node); one "
                   "for every log, or one per log: 1,2")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::Range(1, 1 << 20));
  compare = sub->add_subcommand(
      "compare",
      "Estimate against measurement: torch.cuda.memory_stats() dumps (one per rank) and the "
      "measured step time, per stage, with the error and the likely cause of a gap");
  add_plan_options(*compare, o.plan);
  compare->add_option(
      "--memory-stats", o.memory_stats,
      "JSON dumps of torch.cuda.memory_stats(), one per rank (docs/calibration.md)");
  compare->add_option("--replica", o.replica,
                      "results of the calibrate replica script (its --out): measured peaks and "
                      "times per depth against the plan's replica, their fixed and per-layer "
                      "parts (docs/calibration.md#replica)");
  compare->add_option("--step-time", o.step_time, "measured seconds per optimizer step")
      ->check(CLI::PositiveNumber);
  compare->add_option("-o,--output", o.output,
                      "with --replica: write a calibration profile of what a GPU replica "
                      "measured (cuda_context, fragmentation, matmul_efficiency), atomically");
  compare->add_option("--format", o.plan.format, "table (default) or json")
      ->check(CLI::IsMember({"table", "json"}));
  replica = sub->add_subcommand(
      "replica",
      "Write a PyTorch script that runs the plan's model at full width and 2-3 layers on one "
      "GPU (random weights, the plan's precision, attention, recompute, loss, optimizer and "
      "micro-batch) and writes peak memory per phase, memory_stats() and times "
      "(docs/calibration.md#replica)");
  add_plan_options(*replica, o.plan);
  replica->add_option("-o,--output", o.output,
                      "write the script here (atomically); default: print it");
  replica
      ->add_option("--layers", o.replica_layers,
                   "the depths to run, comma-separated (default: 2,3; past a MoE model's dense "
                   "first layers)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::Range(1, 1024));
  probe = sub->add_subcommand(
      "probe",
      "Measure the cluster: run one process per GPU under mpirun, srun or torchrun "
      "(--no-python); sweeps all-reduce, all-gather, reduce-scatter, all-to-all and send/recv "
      "on the world, one node and one GPU per node, measures memory and GEMM/HBM rates, and "
      "rank 0 writes the profile. Exit 3 on any failure (no GPU, a dead or hung rank)");
  probe->add_option("plan", o.plan.plan,
                    "a plan whose matmul shapes the GEMM probe times (default: 8192³)");
  probe->add_option("--set", o.plan.sets, "override a key of the plan: --set section.key=value")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);  // one value per --set: a plan file after it stays a plan
  probe->add_option("-o,--output", o.output,
                    "write the profile here (rank 0, atomically); default: print it");
  const std::vector<std::string> built = probe::available_backends();
  probe
      ->add_option("--backend", o.backend,
                   fmt::format("nccl (GPUs), mpi (CPUs, MPI collectives) or auto: NCCL when a GPU "
                               "answers (this build has: {})",
                               built.empty() ? "none" : fmt::format("{}", fmt::join(built, ", "))))
      ->check(CLI::IsMember({"auto", "nccl", "mpi"}));
  probe->add_option("--min-bytes", o.min_bytes, "smallest message (default 8 B)");
  probe->add_option("--max-bytes", o.max_bytes,
                    "largest message (default 1 GiB with NCCL, 64 MiB with MPI)");
  probe->add_option("--step-factor", o.step_factor, "size multiplier between messages (2)")
      ->check(CLI::Range(1.01, 1024.0));
  probe->add_option("--warmup", o.warmup, "untimed calls per size (5)")->check(CLI::Range(0, 1000));
  probe->add_option("--iters", o.iters, "timed calls per size (20)")->check(CLI::Range(1, 100000));
  probe
      ->add_option("--timeout", o.timeout,
                   "seconds a collective or rendezvous may take before every rank ends with "
                   "exit 3 (300)")
      ->check(CLI::Range(0.1, 86400.0));
  probe
      ->add_option("--startup-timeout", o.startup_timeout,
                   "seconds the start-up may take (the plan, MPI_Init, the first rendezvous: "
                   "every rank must start) before every rank ends with exit 3 (30)")
      ->check(CLI::Range(0.1, 86400.0));
  probe
      ->add_option("--collectives", o.probe_collectives,
                   "the collectives to sweep (default all): all_reduce, all_gather, "
                   "reduce_scatter, alltoall, sendrecv")
      ->delimiter(',');
  probe->add_flag("--no-progress", o.no_progress, "no progress line on a terminal");
  import->add_option("--nic-rate", o.nic_rate,
                     "the network's line rate per GPU (e.g. \"200 Gb/s\"): an all-reduce across "
                     "nodes whose busbw per GPU exceeds it ran as a tree, and inter_node_bandwidth "
                     "is capped at it");
  import->add_option("--gpu-name", o.gpu_name,
                     "the GPUs' name as the driver reports it (e.g. \"NVIDIA H100 80GB HBM3\"), "
                     "when the log lists no devices");
  return sub;
}

int run_calibrate_import(const CalibrateOptions& o, std::ostream& out, std::ostream& /*err*/) {
  // A per-log option has one value for every log or one per log.
  const auto per_log = [&](const char* option, std::size_t given) {
    if (given > 1 && given != o.logs.size())
      throw config::ConfigError({config::Diagnostic{
          config::Origin{option, 0, 0, "option"},
          fmt::format("{} values for {} logs: give one value for every log, or one per log in "
                      "the logs' order",
                      given, o.logs.size())}});
  };
  per_log("--collective", o.collective.size());
  per_log("--ranks", o.ranks.size());
  per_log("--nodes", o.nodes.size());
  const auto pick = [](const auto& values, std::size_t i, auto none) {
    return values.empty() ? none : values.size() == 1 ? values.front() : values[i];
  };
  std::vector<calibrate::Sweep> sweeps;
  std::vector<config::Diagnostic> errors;
  for (std::size_t i = 0; i < o.logs.size(); ++i) {
    const std::string& log = o.logs[i];
    calibrate::ImportHints hints;
    hints.collective = pick(o.collective, i, std::string());
    hints.ranks = pick(o.ranks, i, 0);
    hints.nodes = pick(o.nodes, i, 0);
    hints.gpu_name = o.gpu_name;
    std::string why;
    const auto text = config::read_regular_file(log, config::k_max_log_bytes, why);
    if (!text) {
      errors.push_back(
          config::Diagnostic{config::Origin{log, 0, 0, "log"}, "cannot read it: " + why});
      continue;
    }
    try {
      sweeps.push_back(calibrate::parse_nccl_tests(*text, log, hints));
    } catch (const config::ConfigError& e) {
      for (const config::Diagnostic& d : e.diagnostics()) errors.push_back(d);
    }
  }
  if (!errors.empty()) throw config::ConfigError(errors);
  const double nic_rate =
      o.nic_rate.empty() ? 0 : config::parse_bandwidth_option("--nic-rate", o.nic_rate);
  const calibrate::Profile profile =
      calibrate::build_profile(std::move(sweeps), "trainledger " + report::version(),
                               "calibrate import (nccl-tests logs)", utc_now(), nic_rate);
  const std::string text = calibrate::render_profile(profile);
  if (o.output.empty() || o.output == "-") {
    out << text;
    return out ? k_exit_ok : k_exit_runtime;
  }
  write_atomically(o.output, text);
  print_summary(out, o.output, profile);
  return out ? k_exit_ok : k_exit_runtime;
}

namespace {

// A measured step time, in seconds (the file's "step_time" or --step-time): a microsecond to
// about 31.7 years; outside it the relative error is meaningless.
constexpr double k_min_step_s = 1e-6;
constexpr double k_max_step_s = 1e9;

struct Measured {
  std::string file;
  int stage = -1;
  int rank = -1;
  double allocated = 0, reserved = 0;
  double retries = 0, ooms = 0;
  double step_time = 0;  // the file's "step_time", when it has one
};

// The largest byte count or counter a memory_stats() file may hold: 2^53, the largest whole
// number a double holds exactly (8 PiB), so every value converts to an integer exactly.
constexpr double k_max_stat = 9007199254740992.0;

// Where a memory-stats file's problem is: file:line:column.
config::Origin stats_origin(const std::string& file, int line = 0, int column = 0) {
  return config::Origin{file, line, line > 0 ? std::max(column, 1) : 0, "memory-stats"};
}

// The line of the first "key" in `text` (0 when it is not there): locates a key's problem.
int line_of_key(const std::string& text, const std::string& key) {
  const std::size_t at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

double stat(const nlohmann::json& stats, const char* key, const std::string& file,
            const std::string& text, const std::string& path, bool required) {
  const auto it = stats.find(key);
  auto fail = [&](const std::string& m) {
    throw config::ConfigError({config::Diagnostic{stats_origin(file, line_of_key(text, key), 1),
                                                  fmt::format("{}{}: {}", path, key, m)}});
  };
  if (it == stats.end()) {
    if (!required) return 0;
    fail("missing: expected the JSON of torch.cuda.memory_stats()");
  }
  if (!it->is_number()) fail(fmt::format("a {}, not a number", it->type_name()));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) fail(fmt::format("{:g} is negative", v));
  if (v != std::floor(v)) fail(fmt::format("{:g} is not a whole number", v));
  if (v > k_max_stat) fail(fmt::format("{:g} is out of range (at most 2^53)", v));
  return v;
}

// The file's text around a parse error: one line, printable, at most 40 characters.
std::string excerpt(const std::string& text, std::size_t line_start, std::size_t column) {
  const std::size_t line_end = std::min(text.find('\n', line_start), text.size());
  const std::size_t from = line_start + (column > 20 ? column - 20 : 0);
  if (from >= line_end) return "";
  return text::printable(std::string_view(text).substr(from, line_end - from), 40);
}

}  // namespace

nlohmann::json read_json_file(const std::string& file, const char* kind, const char* what,
                              std::string& text) {
  std::string why;
  const auto read = config::read_regular_file(file, config::k_max_hf_config_bytes, why);
  const config::Origin origin{file, 0, 0, kind};
  if (!read) throw config::ConfigError({config::Diagnostic{origin, "cannot read it: " + why}});
  text = *read;
  // Bounded before the parser builds a tree.
  config::check_json_structure(text, file, kind, 100000, what);
  try {
    return nlohmann::json::parse(text, nullptr, true, false);
  } catch (const nlohmann::json::parse_error& e) {
    // Located by the byte the parser stopped at; the reason without the parser's own echo of
    // the bytes it read ("last read: ..."), the text there quoted printable and bounded.
    const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const std::size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t begin = line_start == std::string::npos || at == 0 ? 0 : line_start + 1;
    const int line = 1 + static_cast<int>(std::count(
                             text.begin(), text.begin() + static_cast<long>(begin), '\n'));
    std::string reason = e.what();
    if (const std::size_t colon = reason.find(": ", reason.find("column"));
        colon != std::string::npos)
      reason = reason.substr(colon + 2);
    if (const std::size_t last = reason.find("; last read"); last != std::string::npos)
      reason.resize(last);
    const std::string near = excerpt(text, begin, at - begin);
    throw config::ConfigError({config::Diagnostic{
        config::Origin{file, line, std::max(1, static_cast<int>(at - begin) + 1), kind},
        fmt::format("not JSON: {}{}", text::printable(reason, 120),
                    near.empty() ? "" : fmt::format(" (near \"{}\")", near))}});
  } catch (const nlohmann::json::exception&) {
    throw config::ConfigError({config::Diagnostic{origin, "not JSON"}});
  }
}

namespace {

Measured read_stats(const std::string& file, const PlanInput& in) {
  std::string text_buffer;
  const nlohmann::json j =
      read_json_file(file, "memory-stats", "any torch.cuda.memory_stats() dump", text_buffer);
  const std::string* text = &text_buffer;
  auto fail = [&](const std::string& m) {
    throw config::ConfigError({config::Diagnostic{stats_origin(file), m}});
  };
  if (!j.is_object()) fail("expected a JSON object (torch.cuda.memory_stats())");
  Measured m;
  m.file = file;
  const nlohmann::json* stats = &j;
  std::string path;
  auto fail_at = [&](const char* key, const std::string& message) {
    throw config::ConfigError(
        {config::Diagnostic{stats_origin(file, line_of_key(*text, key), 1), message}});
  };
  if (j.contains("memory_stats")) {
    stats = &j["memory_stats"];
    path = "memory_stats/";
    if (!stats->is_object()) fail_at("memory_stats", "\"memory_stats\" must be an object");
    auto index = [&](const char* key) {
      if (!j.contains(key)) return -1;
      if (!j[key].is_number_integer() || j[key].get<long long>() < 0 ||
          j[key].get<long long>() > 1 << 24)
        fail_at(key, fmt::format("\"{}\" must be an integer from 0 to {}", key, 1 << 24));
      return static_cast<int>(j[key].get<long long>());
    };
    m.rank = index("rank");
    m.stage = index("stage");
    if (j.contains("step_time")) {
      if (!j["step_time"].is_number() || !std::isfinite(j["step_time"].get<double>()) ||
          j["step_time"].get<double>() < k_min_step_s ||
          j["step_time"].get<double>() > k_max_step_s)
        fail_at("step_time",
                fmt::format("\"step_time\" must be a number of seconds from {:g} to {:g}",
                            k_min_step_s, k_max_step_s));
      m.step_time = j["step_time"].get<double>();
    }
  }
  m.allocated = stat(*stats, "allocated_bytes.all.peak", file, *text, path, true);
  m.reserved = stat(*stats, "reserved_bytes.all.peak", file, *text, path, true);
  m.retries = stat(*stats, "num_alloc_retries", file, *text, path, false);
  m.ooms = stat(*stats, "num_ooms", file, *text, path, false);
  if (m.allocated < 1)
    fail_at("allocated_bytes.all.peak",
            path + "allocated_bytes.all.peak is 0: the stats were taken before any training step");
  // The caching allocator never holds less than it has handed out, so neither do the peaks.
  if (m.reserved < m.allocated)
    fail_at("reserved_bytes.all.peak",
            fmt::format("{}reserved_bytes.all.peak ({:.0f}) is below allocated_bytes.all.peak "
                        "({:.0f}): not the memory_stats() of one run",
                        path, m.reserved, m.allocated));
  const ParallelSpec& p = in.parallel;
  // A rank is one of the plan's: 0 to world − 1 (a dump of another run is not mapped to a stage).
  const long long world = static_cast<long long>(in.cluster.nodes) * in.cluster.gpus_per_node;
  if (m.rank >= world)
    fail_at("rank", fmt::format("\"rank\": {} is not a rank of the plan, which has {} (0 to {}): "
                                "a dump of another run, or the plan's cluster is not the one "
                                "measured",
                                m.rank, world, world - 1));
  if (m.stage >= 0 && m.rank >= 0 && stage_of_rank(in, m.rank) != m.stage)
    fail_at("stage", fmt::format("\"stage\": {} but rank {} is on stage {} under the plan's "
                                 "parallel.placement",
                                 m.stage, m.rank, stage_of_rank(in, m.rank)));
  if (m.stage < 0 && m.rank >= 0) m.stage = stage_of_rank(in, m.rank);
  if (m.stage < 0) {
    if (p.pp > 1)
      fail("the plan has pipeline stages: give \"rank\" or \"stage\" beside \"memory_stats\"");
    m.stage = 0;
  }
  if (m.stage >= p.pp)
    fail_at("stage", fmt::format("\"stage\": {} is not a stage of the plan, which has {} (0 to {})",
                                 m.stage, p.pp, p.pp - 1));
  return m;
}

// A relative error for the table: "+12.3%", or ">+999%" beyond ten times (a prediction for
// a rank that hardly allocated anything).
std::string error_text(double e) {
  if (e > 9.99) return ">+999%";
  return fmt::format("{:+.1f}%", 100 * e);
}

// Bytes as a JSON integer; a value beyond 2^53 (a prediction far past any GPU) as a number,
// never through an llround that overflows.
nlohmann::ordered_json whole_bytes(double v) {
  if (std::isfinite(v) && std::fabs(v) <= k_max_stat)
    return static_cast<std::int64_t>(std::llround(v));
  return v;
}

// The item that most likely explains a gap on a stage: the largest of those whose size the
// inputs do not pin down (activations, temporaries, logits, fragmentation, overheads).
std::string suspect(const StageMemory& st) {
  const LineItem* best = nullptr;
  for (const LineItem& i : st.items) {
    if (i.unit != Unit::bytes) continue;
    if (!best || i.value > best->value) best = &i;
  }
  return best ? fmt::format("{} ({:.2f} GiB, the stage's largest item)", best->id,
                            best->value / k_gib)
              : std::string("(no items)");
}

}  // namespace

int run_calibrate_replica(const CalibrateOptions& o, std::ostream& out, std::ostream& /*err*/) {
  const config::LoadedPlan loaded = load(o.plan);
  const PlanInput& in = loaded.input;
  if (in.model.count_only)
    throw config::ConfigError({config::Diagnostic{
        config::Origin{loaded.source, 0, 0, "model"},
        "a count-only model has no architecture to replicate: give its layers, hidden size "
        "and heads (or a preset or config.json)"}});
  std::vector<int> layers =
      o.replica_layers.empty() ? report::replica_layers(in) : o.replica_layers;
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  if (layers.size() < 2)
    throw config::ConfigError({config::Diagnostic{
        config::Origin{"--layers", 0, 0, "option"},
        "give at least two different depths: the fixed part and the per-layer part are "
        "fitted from their difference"}});
  const std::string script = report::replica_script(in, layers);
  if (o.output.empty() || o.output == "-") {
    out << script;
    return k_exit_ok;
  }
  write_atomically(o.output, script);
  out << fmt::format("wrote {} (depths {}): run it with python3 {} --out replica.json\n",
                     text::printable(o.output), fmt::join(layers, ", "), text::printable(o.output));
  return k_exit_ok;
}

int run_calibrate_compare(const CalibrateOptions& o, std::ostream& out, std::ostream& /*err*/) {
  if (o.memory_stats.empty() == o.replica.empty())
    throw config::ConfigError({config::Diagnostic{
        config::Origin{"--memory-stats", 0, 0, "option"},
        "give --memory-stats (a run's torch.cuda.memory_stats() dumps) or --replica (the "
        "calibrate replica script's results), one of them"}});
  if (!o.output.empty() && o.replica.empty())
    throw config::ConfigError({config::Diagnostic{
        config::Origin{"-o", 0, 0, "option"},
        "a profile (-o) is written from --replica results; --memory-stats compares only"}});
  const config::LoadedPlan loaded = load(o.plan);
  if (!o.replica.empty()) return compare_replica(o, loaded, out);
  const PlanResult plan = sound_plan(loaded);
  std::vector<Measured> ms;
  std::vector<config::Diagnostic> errors;
  for (const std::string& f : o.memory_stats) {
    try {
      ms.push_back(read_stats(f, loaded.input));
    } catch (const config::ConfigError& e) {
      for (const auto& d : e.diagnostics()) errors.push_back(d);
    }
  }
  if (!errors.empty()) throw config::ConfigError(errors);
  if (!std::isfinite(o.step_time) || o.step_time < 0 ||
      (o.step_time > 0 && (o.step_time < k_min_step_s || o.step_time > k_max_step_s)))
    throw config::ConfigError({config::Diagnostic{
        config::Origin{"--step-time", 0, 0, "option"},
        fmt::format("{:g} is out of range: a step time is from {:g} to {:g} seconds", o.step_time,
                    k_min_step_s, k_max_step_s)}});
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::string table = fmt::format("{} · {}\n", loaded.source, report::plan_title(plan));
  table += fmt::format("{:<28} {:>5}  {:>22}  {:>22}  {}\n", "memory stats", "stage",
                       "allocated peak (GiB)", "reserved peak (GiB)", "likely cause");
  for (const Measured& m : ms) {
    const StageMemory* st = nullptr;
    for (const StageMemory& s : plan.stages)
      if (s.stage == m.stage) st = &s;
    if (!st) continue;
    const report::Comparable c = report::comparable(*st);
    const double e_alloc = (c.allocated - m.allocated) / std::max(1.0, m.allocated);
    const double e_res = (c.reserved - m.reserved) / std::max(1.0, m.reserved);
    std::vector<std::string> causes;
    if (m.ooms > 0)
      causes.push_back(
          fmt::format("the run hit {:.0f} out-of-memory error(s): the peak measured "
                      "is what fitted, not what was asked",
                      m.ooms));
    if (m.retries > 0)
      causes.push_back(
          fmt::format("{:.0f} allocator retries: the caching allocator ran out and "
                      "freed its cache (memory pressure, slow steps)",
                      m.retries));
    const double frag_measured = m.allocated > 0 ? m.reserved / m.allocated - 1 : 0;
    const double frag_predicted = c.allocated > 0 ? c.reserved / c.allocated - 1 : 0;
    if (frag_measured > frag_predicted + 0.1)
      causes.push_back(
          fmt::format("fragmentation: reserved is {} allocated, the plan assumes {:.0f} % "
                      "(cluster.fragmentation)",
                      frag_measured < 10 ? fmt::format("{:.0f} % over", 100 * frag_measured)
                                         : fmt::format("{:.3g} ×", frag_measured + 1),
                      100 * frag_predicted));
    if (e_alloc < -0.05)
      causes.push_back("under-predicted allocation: check " + suspect(*st) +
                       ", the framework conventions (training.framework) and recompute");
    else if (e_alloc > 0.10)
      causes.push_back("over-predicted allocation (the safe side): " + suspect(*st));
    if (causes.empty()) causes.push_back("within 5 % (allocated)");
    const std::string name = m.file.substr(m.file.find_last_of('/') + 1);
    table += fmt::format(
        "{:<28} {:>5}  {:>7.2f} vs {:>6.2f} {:>6}  {:>7.2f} vs {:>6.2f} "
        "{:>6}  {}\n",
        text::printable(name, 64), m.stage, c.allocated / k_gib, m.allocated / k_gib,
        error_text(e_alloc), c.reserved / k_gib, m.reserved / k_gib, error_text(e_res),
        fmt::format("{}", fmt::join(causes, "; ")));
    rows.push_back(
        {{"file", m.file},
         {"rank", m.rank >= 0 ? nlohmann::ordered_json(m.rank) : nlohmann::ordered_json(nullptr)},
         {"stage", m.stage},
         {"allocated_bytes",
          {{"predicted", whole_bytes(c.allocated)},
           {"measured", whole_bytes(m.allocated)},
           {"error", e_alloc}}},
         {"reserved_bytes",
          {{"predicted", whole_bytes(c.reserved)},
           {"measured", whole_bytes(m.reserved)},
           {"error", e_res}}},
         // Counters are whole numbers (memory_stats() counts them).
         {"num_alloc_retries", static_cast<std::int64_t>(m.retries)},
         {"num_ooms", static_cast<std::int64_t>(m.ooms)},
         {"causes", causes}});
  }
  table +=
      "(predicted vs measured; error = (predicted − measured) / measured: positive is the "
      "safe side)\n";
  nlohmann::ordered_json step;
  // The step time: --step-time, else the files' (the slowest rank's).
  double measured_step = o.step_time;
  if (measured_step <= 0)
    for (const Measured& m : ms) measured_step = std::max(measured_step, m.step_time);
  if (measured_step > 0) {
    const LineItem* t = find_item(plan.time, ItemId::time_step);
    if (t) {
      const double e = (t->value - measured_step) / measured_step;
      std::string cause =
          e < -0.05  ? "the plan is faster than the run: exposed communication or efficiency; "
                       "measure the links (calibrate import) or set cluster.matmul_efficiency"
          : e > 0.10 ? "the plan is slower than the run (the safe side)"
                     : "within 5 %";
      table += fmt::format("step time: predicted {:.3f} s, measured {:.3f} s, {:+.1f} %: {}\n",
                           t->value, measured_step, 100 * e, cause);
      step = {
          {"predicted_s", t->value}, {"measured_s", measured_step}, {"error", e}, {"cause", cause}};
    }
  }
  if (o.plan.format == "json") {
    nlohmann::ordered_json j = {
        {"schema", "trainledger.compare/2"}, {"plan", loaded.source}, {"memory", rows}};
    if (!step.is_null()) j["step_time"] = step;
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    out << table;
  }
  return out ? k_exit_ok : k_exit_runtime;
}

}  // namespace trainledger::cli
