// `trainledger calibrate probe`: options → probe::Options, the plan's GEMM shapes and the GPU's
// peaks, the run, and exit 3 on every failure
// (docs/calibration.md#probing-the-cluster-calibrate-probe).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <optional>
#include <ostream>

#include "app.hpp"
#include "calibration_detail.hpp"
#include "probe.hpp"
#include "profile_io.hpp"
#include "rows.hpp"

#include <unistd.h>
namespace trainledger::cli {

namespace {

long long round16(double x) { return std::max(16LL, std::llround(x / 16) * 16); }

// The forward GEMMs of one layer on one rank of the plan (tokens of a micro-batch × the
// tensor-parallel slice of each weight), rounded to multiples of 16.
std::vector<probe::GemmShape> plan_gemms(const PlanInput& in) {
  const ModelSpec& m = in.model;
  const ParallelSpec& p = in.parallel;
  const double tokens =
      static_cast<double>(in.training.micro_batch * in.training.seq_len) / std::max(1, p.cp);
  const int head_dim = m.head_dim > 0 ? m.head_dim : m.hidden / std::max(1, m.heads);
  const int kv = m.kv_heads > 0 ? m.kv_heads : m.heads;
  const long long t = round16(tokens);
  std::vector<probe::GemmShape> v;
  v.push_back(
      {"qkv", t, round16(static_cast<double>(m.heads + 2 * kv) * head_dim / p.tp), m.hidden, 1});
  v.push_back({"proj", t, m.hidden, round16(static_cast<double>(m.heads) * head_dim / p.tp), 1});
  const bool moe = m.experts > 0;
  const double ffn = moe ? m.expert_ffn : m.ffn;
  const double gate = is_gated(m.ffn_act) ? 2 : 1;
  // MoE: each expert's GEMM sees its share of the routed tokens.
  const long long te = moe ? round16(tokens * m.experts_per_token / m.experts) : t;
  const double copies = moe ? static_cast<double>(m.experts) / std::max(1, p.ep) : 1;
  // Routed experts are split over etp (parallel.etp, tp by default).
  const int split = moe ? expert_tp(p) : p.tp;
  if (ffn > 0) {
    v.push_back({"fc1", te, round16(gate * ffn / split), m.hidden, copies});
    v.push_back({"fc2", te, m.hidden, round16(ffn / split), copies});
  }
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

int run_calibrate_probe(const CalibrateOptions& o, std::ostream& out, std::ostream& err) {
  // First of all, before the options, the plan and MPI_Init: the launcher's SIGTERM (another
  // rank failed) ends this rank with exit 3, and so does a start-up that does not finish within
  // --startup-timeout (a rank that never started, failed or hangs).
  probe::begin_startup(o.startup_timeout);
  struct EndStartup {
    ~EndStartup() { probe::end_startup(); }
  } end_startup;
  probe::Options po;
  po.backend = o.backend;
  po.min_bytes = config::parse_size_option("--min-bytes", o.min_bytes);
  if (!o.max_bytes.empty()) po.max_bytes = config::parse_size_option("--max-bytes", o.max_bytes);
  if (po.min_bytes < 1 || (po.max_bytes > 0 && po.max_bytes < po.min_bytes) ||
      po.max_bytes > 64.0 * (1LL << 30))
    throw config::ConfigError(
        {config::Diagnostic{config::Origin{"--min-bytes", 0, 0, "option"},
                            "message sizes: 1 B ≤ --min-bytes ≤ --max-bytes ≤ 64 GiB"}});
  po.step_factor = o.step_factor;
  po.warmup = o.warmup;
  po.iters = o.iters;
  po.timeout_s = o.timeout;
  po.startup_timeout_s = o.startup_timeout;
  po.progress = !o.no_progress && ::isatty(2);
  for (const std::string& c : o.probe_collectives) {
    const auto k = calibrate::detail::collective_named(c);
    if (!k)
      throw config::ConfigError({config::Diagnostic{
          config::Origin{"--collectives", 0, 0, "option"},
          fmt::format("unknown collective \"{}\" (all_reduce, all_gather, reduce_scatter, "
                      "alltoall, sendrecv)",
                      c)}});
    po.collectives.push_back(*k);
  }
  // The plan (its GEMM shapes and GPU), read before any process group exists.
  std::optional<config::LoadedPlan> loaded;
  if (!o.plan.plan.empty()) {
    loaded = load(o.plan);
    po.gemm = plan_gemms(loaded->input);
    po.plan_source = loaded->source;
  }
  po.launcher = probe::detect_launcher();
  std::unique_ptr<probe::Backend> backend;
  try {
    probe::startup_step("joining the other ranks (MPI_Init or the rendezvous)");
    backend = probe::make_backend(o.backend, po.launcher, o.timeout, o.startup_timeout);
    probe::startup_step("looking up the GPU's peaks");
    const bool lead = backend->rank() == 0;
    po.progress = po.progress && lead;
    // Peaks of this GPU: the plan's when it is for this GPU, else the preset of that name.
    const std::string dev = backend->device_name();
    if (loaded && lower(loaded->input.cluster.gpu.name) == lower(dev)) {
      po.peak_bf16 = loaded->input.cluster.gpu.peak_flops.bf16;
      po.peak_fp8 = loaded->input.cluster.gpu.peak_flops.fp8;
      po.hbm_bandwidth = loaded->input.cluster.gpu.memory_bandwidth;
    } else {
      if (loaded && lead)
        err << fmt::format(
            "trainledger: calibrate probe: note: the plan is for \"{}\", these GPUs are \"{}\": "
            "its shapes are timed, the profile describes these GPUs\n",
            loaded->input.cluster.gpu.name, dev);
      for (const config::PresetInfo& p : config::gpu_presets()) {
        const GpuSpec g = config::load_gpu_preset(p.name);
        if (lower(g.name) != lower(dev)) continue;
        po.peak_bf16 = g.peak_flops.bf16;
        po.peak_fp8 = g.peak_flops.fp8;
        po.hbm_bandwidth = g.memory_bandwidth;
        break;
      }
    }
    const std::string output = o.output;
    std::ostream* sink = &out;
    const calibrate::Profile profile =
        probe::run_probe(*backend, po, "trainledger " + report::version(), utc_now(),
                         [&](const calibrate::Profile& p) {
                           const std::string text = calibrate::render_profile(p);
                           if (output.empty() || output == "-") {
                             *sink << text;
                             sink->flush();
                             if (!*sink)
                               throw std::runtime_error("cannot write the profile to stdout");
                           } else {
                             write_atomically(output, text);
                           }
                         });
    if (lead && !output.empty() && output != "-") print_summary(out, output, profile);
    return k_exit_ok;
  } catch (const std::exception& e) {
    // A ProbeError, or anything else once ranks exist: every rank ends, exit 3.
    err << fmt::format("trainledger: calibrate probe: rank {}: {}; exit 3, no profile written\n",
                       backend ? backend->rank() : std::max(0, probe::launcher_rank()), e.what());
    err.flush();
    out.flush();
    probe::end_job(backend.get());
    return k_exit_runtime;
  }
}

}  // namespace trainledger::cli
