// `trainledger models`, `gpus` and `keys`: what the presets and plan files offer.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <ostream>

#include "app.hpp"
#include "trainledger/model.hpp"

namespace trainledger::cli {

CLI::App* add_models_command(CLI::App& app) {
  return app.add_subcommand("models", "List the model presets ([model] preset = \"NAME\")");
}

CLI::App* add_gpus_command(CLI::App& app) {
  return app.add_subcommand("gpus", "List the GPU presets ([cluster] gpu = \"NAME\")");
}

CLI::App* add_keys_command(CLI::App& app) {
  return app.add_subcommand("keys", "List every plan-file key with its type and default");
}

int run_models(std::ostream& out) {
  out << fmt::format("{:<16} {:>18}  {:>6} {:>6} {:>5} {:>4} {:>6} {:>7}  {}\n", "preset",
                     "parameters", "layers", "hidden", "heads", "kv", "ffn", "vocab", "model");
  for (const config::PresetInfo& p : config::model_presets()) {
    const ModelSpec m = config::load_model_preset(p.name);
    out << fmt::format("{:<16} {:>18}  {:>6} {:>6} {:>5} {:>4} {:>6} {:>7}  {}\n", p.name,
                       format_number(total_params(m)), m.layers, m.hidden, m.heads, m.kv_heads,
                       is_moe(m) ? m.expert_ffn : m.ffn, m.vocab, m.name);
  }
  return k_exit_ok;
}

int run_gpus(std::ostream& out) {
  out << fmt::format("{:<16} {:>10} {:>10} {:>12} {:>12}  {}\n", "preset", "memory", "(GiB)",
                     "bf16 TFLOP/s", "HBM TB/s", "device");
  for (const config::PresetInfo& p : config::gpu_presets()) {
    const GpuSpec g = config::load_gpu_preset(p.name);
    out << fmt::format("{:<16} {:>10} {:>10.2f} {:>12.1f} {:>12.2f}  {}\n", p.name,
                       fmt::format("{} MiB", g.memory_bytes / (1024 * 1024)),
                       static_cast<double>(g.memory_bytes) / k_gib, g.peak_flops.bf16 / 1e12,
                       g.memory_bandwidth / 1e12, g.name);
  }
  return k_exit_ok;
}

int run_keys(std::ostream& out) {
  out << "# Plan-file keys\n" << config::keys_markdown();
  return k_exit_ok;
}

}  // namespace trainledger::cli
