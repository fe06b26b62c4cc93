// `trainledger calibrate import LOG...`: nccl-tests logs fitted into a calibration profile
// (docs/calibration.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "app.hpp"
#include "files.hpp"
#include "trainledger/calibrate.hpp"

#include <unistd.h>

namespace trainledger::cli {

namespace {

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

// Writes `text` to `path` atomically: a temporary file beside it, then a rename; nothing is
// left behind when either fails.
void write_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  const std::filesystem::path tmp =
      target.parent_path() / (target.filename().string() + fmt::format(".tmp-{}", ::getpid()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (f) f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error("cannot write " + path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("cannot write " + path + " (rename failed)");
  }
}

}  // namespace

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& o, CLI::App*& import) {
  CLI::App* sub =
      app.add_subcommand("calibrate",
                         "Measured numbers in place of assumed ones: fit nccl-tests logs into a "
                         "calibration profile for plan --calibration");
  sub->require_subcommand(1);
  import = sub->add_subcommand(
      "import",
      "Fit nccl-tests logs (text output of all_reduce_perf, all_gather_perf, "
      "reduce_scatter_perf, alltoall_perf, sendrecv_perf) into a profile: latency α and bus "
      "bandwidth B per collective and link");
  import->add_option("logs", o.logs, "nccl-tests logs, one test per file")->required();
  import->add_option("-o,--output", o.output,
                     "write the profile here (atomically); default: print it");
  import->add_option("--collective", o.collective,
                     "the collective, when the log does not name its X_perf command: "
                     "all_reduce, all_gather, reduce_scatter, alltoall or sendrecv");
  import
      ->add_option("--ranks", o.ranks,
                   "ranks in the test, when the log lists no devices (default: from its "
                   "busbw/algbw ratio)")
      ->check(CLI::Range(1, 1 << 20));
  import
      ->add_option("--nodes", o.nodes,
                   "nodes the ranks ran on, when the log lists no devices (1: one node)")
      ->check(CLI::Range(1, 1 << 20));
  import->add_option("--gpu-name", o.gpu_name,
                     "the GPUs' name as the driver reports it (e.g. \"NVIDIA H100 80GB HBM3\"), "
                     "when the log lists no devices");
  return sub;
}

int run_calibrate_import(const CalibrateOptions& o, std::ostream& out, std::ostream& /*err*/) {
  calibrate::ImportHints hints;
  hints.collective = o.collective;
  hints.ranks = o.ranks;
  hints.nodes = o.nodes;
  hints.gpu_name = o.gpu_name;
  std::vector<calibrate::Sweep> sweeps;
  std::vector<config::Diagnostic> errors;
  for (const std::string& log : o.logs) {
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
  const calibrate::Profile profile =
      calibrate::build_profile(std::move(sweeps), "trainledger " + report::version(),
                               "calibrate import (nccl-tests logs)", utc_now());
  const std::string text = calibrate::render_profile(profile);
  if (o.output.empty() || o.output == "-") {
    out << text;
    return out ? k_exit_ok : k_exit_runtime;
  }
  write_atomically(o.output, text);
  out << fmt::format("wrote {} ({}{} sweep{})\n", o.output,
                     profile.gpu_name.empty() ? "" : profile.gpu_name + ", ", profile.sweeps.size(),
                     profile.sweeps.size() == 1 ? "" : "s");
  for (const calibrate::Fit& f : profile.fits)
    out << fmt::format(
        "  {} ({}): {} ranks on {} node{}: α {}, B {:.2f} GB/s (largest message "
        "{:.2f} GB/s), worst fit error {:.0f} %\n",
        f.source.substr(f.source.find_last_of('/') + 1), to_string(f.kind), f.ranks, f.nodes,
        f.nodes == 1 ? "" : "s",
        !f.alpha_measured ? "not measured (no message ≤ 4 MiB)"
                          : fmt::format("{:.2f} us{}", f.alpha_s * 1e6,
                                        f.alpha_extrapolated ? " (extrapolated)" : ""),
        f.busbw / 1e9, f.largest_busbw / 1e9, 100 * f.worst_error);
  for (const calibrate::Profile::Value& v : profile.cluster)
    out << fmt::format("  cluster.{} = {}   ({})\n", v.key, v.value, v.why);
  for (const std::string& n : profile.notes) out << "  note: " << n << "\n";
  return out ? k_exit_ok : k_exit_runtime;
}

}  // namespace trainledger::cli
