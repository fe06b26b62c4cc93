// calibrate replica and calibrate compare --replica (docs/calibration.md#replica): the script
// for every model family the planner reads compiles, runs a tiny configuration on the CPU
// with Debian's python3-torch, and compare reads its result; hostile results are refused.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "trainledger/report.hpp"

using namespace trainledger;

namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / "trainledger-replica";
  fs::create_directories(dir);
  return dir / name;
}

// The interpreter that has PyTorch: Debian's python3 (python3-torch), else the first on PATH.
std::string torch_python() {
  for (const char* py : {"/usr/bin/python3", "python3"})
    if (std::system(fmt::format("{} -c 'import torch' > /dev/null 2>&1", py).c_str()) == 0)
      return py;
  return "";
}

// The PLAN object the script embeds.
nlohmann::json embedded(const std::string& script) {
  const std::string open = "PLAN = json.loads(r\"\"\"";
  const std::size_t from = script.find(open);
  REQUIRE(from != std::string::npos);
  const std::size_t begin = from + open.size();
  const std::size_t end = script.find("\"\"\")", begin);
  REQUIRE(end != std::string::npos);
  return nlohmann::json::parse(script.substr(begin, end - begin));
}

const char* k_families[][2] = {
    {"dense GQA", "llama-3.2-1b"},
    {"MoE", "mixtral-8x7b"},
    {"MLA and MoE with dense first layers", "deepseek-v3"},
    {"sliding window, every 6th layer global", "gemma-3-1b"},
    {"learned positions, LayerNorm, GELU", "gpt2-xl"},
};

}  // namespace

TEST_CASE("calibrate replica: the plan's model in the script, the depths that separate its parts",
          "[replica]") {
  const PlanInput dense =
      test::load_text(
          "[model]\npreset = \"llama-3.2-1b\"\n[training]\nseq_len = 4096\n"
          "micro_batch = 2\nrecompute = \"full\"\n[parallel]\nzero = 3\n[cluster]\n"
          "gpu = \"h100-sxm5-80gb\"\ngpus_per_node = 8\n")
          .input;
  CHECK(report::replica_layers(dense) == std::vector<int>{2, 3});
  const nlohmann::json p = embedded(report::replica_script(dense, {2, 3}));
  CHECK(p["hidden"] == 2048);
  CHECK(p["heads"] == 32);
  CHECK(p["kv_heads"] == 8);
  CHECK(p["head_dim"] == 64);
  CHECK(p["ffn"] == 8192);
  CHECK(p["vocab"] == 128256);
  CHECK(p["seq_len"] == 4096);
  CHECK(p["micro_batch"] == 2);
  CHECK(p["recompute"] == "full");
  CHECK(p["fsdp"] == true);              // FSDP2 on one rank where the plan shards
  CHECK(p["fsdp_split_root"] == false);  // Llama 3.2 1B ties its embeddings: one unit
  // An untied model is wrapped as the plan counts it: torchtitan's units at the ends.
  const PlanInput untied =
      test::load_text(
          "[model]\npreset = \"llama-3.1-8b\"\n[parallel]\nzero = 3\n[cluster]\n"
          "gpu = \"h100-sxm5-80gb\"\ngpus_per_node = 8\n")
          .input;
  const std::string untied_script = report::replica_script(untied, {2, 3});
  CHECK(embedded(untied_script)["fsdp_split_root"] == true);
  CHECK(untied_script.find("fully_shard([model.norm, model.head], mp_policy=mp, "
                           "reshard_after_forward=False)") != std::string::npos);
  CHECK(p["replica_layers"] == nlohmann::json({2, 3}));
  // DeepSeek-V3: three dense layers first, so the depths hold MoE layers past them.
  const PlanInput ds =
      test::load_text("[model]\npreset = \"deepseek-v3\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n")
          .input;
  CHECK(report::replica_layers(ds) == std::vector<int>{5, 6});
  const nlohmann::json q = embedded(report::replica_script(ds, {5, 6}));
  CHECK(q["kv_lora_rank"] == 512);
  CHECK(q["experts"] == 256);
  CHECK(q["dense_layers"] == 3);
  // A name cannot leave the JSON: quotes and newlines are escaped, non-ASCII written as \u.
  PlanInput odd = dense;
  odd.model.name = "x\"\"\")\nimport shutil\n\xc3\xa9";
  const std::string script = report::replica_script(odd, {2, 3});
  CHECK(script.find("import shutil\n") == std::string::npos);
  CHECK(embedded(script)["name"] == odd.model.name);
}

TEST_CASE(
    "calibrate replica: each family's script compiles, runs tiny on the CPU and compare "
    "reads it",
    "[replica][python]") {
  const std::string py = torch_python();
  if (py.empty()) {
    WARN("skipped: no python3 with PyTorch (scripts/dev test installs python3-torch)");
    return;
  }
  for (const auto& family : k_families) {
    INFO(family[0]);
    const fs::path plan = scratch(std::string(family[1]) + ".toml");
    std::ofstream(plan) << "[model]\npreset = \"" << family[1]
                        << "\"\n[training]\nseq_len = 1024\nmicro_batch = 2\n[cluster]\n"
                           "gpu = \"h100-sxm5-80gb\"\ngpus_per_node = 8\n";
    const fs::path script = scratch(std::string(family[1]) + ".py");
    const fs::path result = scratch(std::string(family[1]) + ".json");
    fs::remove(result);
    const test::CliResult w =
        test::run_cli({"calibrate", "replica", plan.string(), "-o", script.string()});
    REQUIRE(w.code == 0);
    CHECK(w.out.find("wrote") != std::string::npos);
    REQUIRE(std::system(fmt::format("{} -m py_compile '{}'", py, script.string()).c_str()) == 0);
    const std::string run =
        fmt::format("timeout 300 {} '{}' --tiny --steps 1 --device cpu --out '{}'", py,
                    script.string(), result.string());
    REQUIRE(std::system(run.c_str()) == 0);
    const nlohmann::json r = nlohmann::json::parse(test::read_file(result.string()));
    CHECK(r["format"] == "trainledger.replica/1");
    REQUIRE(r["runs"].size() == 2);
    for (const auto& x : r["runs"]) {
      CHECK(x["forward_s"].get<double>() > 0);
      CHECK(x["backward_s"].get<double>() > 0);
      CHECK_FALSE(x.contains("peak_allocated"));  // no GPU: memory fields absent
    }
    // One more layer, more parameters.
    CHECK(r["runs"][1]["params"].get<double>() > r["runs"][0]["params"].get<double>());
    const test::CliResult c = test::run_cli(
        {"calibrate", "compare", plan.string(), "--replica", result.string(), "--format", "json"});
    INFO(c.err);
    REQUIRE(c.code == 0);
    const nlohmann::json doc = nlohmann::json::parse(c.out);
    CHECK(doc["schema"] == "trainledger.replica_compare/1");
    CHECK(doc["replicas"][0]["tiny"] == true);
    CHECK(doc["replicas"][0]["runs"].size() == 2);
    CHECK(doc["replicas"][0]["parts"]["allocated"]["measured"].is_null());
  }
}

TEST_CASE("calibrate compare --replica: measured parts against the plan's at the same depths",
          "[replica]") {
  const fs::path plan = scratch("gpu.toml");
  std::ofstream(plan)
      << "[model]\npreset = \"llama-3.2-1b\"\n[training]\nseq_len = 2048\n"
         "micro_batch = 1\n[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 1\n";
  // A GPU result as the script writes it: 10 GiB + 1 GiB per layer allocated.
  const double gib = 1024.0 * 1024 * 1024;
  auto run = [&](int layers) {
    const double a = (10 + layers) * gib;
    return nlohmann::json{
        {"layers", layers},
        {"forward_s", 0.01 * layers},
        {"backward_s", 0.02 * layers},
        {"optimizer_s", 0.005},
        {"peak_allocated", {{"forward", a * 0.8}, {"backward", a}, {"optimizer", a * 0.9}}},
        {"peak_reserved", {{"forward", a}, {"backward", a * 1.1}, {"optimizer", a * 1.1}}},
        // 1.25 GiB beyond the allocator's reserve: the CUDA context.
        {"device_used", a * 1.1 + 1.25 * gib},
        {"memory_stats", {{"reserved_bytes.all.current", a * 1.1}}}};
  };
  const nlohmann::json result = {{"format", "trainledger.replica/1"},
                                 {"device", "NVIDIA H100 80GB HBM3"},
                                 {"tiny", false},
                                 {"micro_batch", 1},
                                 {"seq_len", 2048},
                                 {"runs", {run(2), run(3)}}};
  const fs::path file = scratch("gpu.json");
  std::ofstream(file) << result.dump();
  const test::CliResult c = test::run_cli(
      {"calibrate", "compare", plan.string(), "--replica", file.string(), "--format", "json"});
  INFO(c.err);
  REQUIRE(c.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(c.out);
  const auto& measured = doc["replicas"][0]["parts"]["allocated"]["measured"];
  CHECK(measured["per_layer"].get<double>() == Approx(gib));
  CHECK(measured["fixed"].get<double>() == Approx(10 * gib));
  CHECK(doc["replicas"][0]["parts"]["step"]["measured"]["per_layer"].get<double>() == Approx(0.03));
  // 0.03 s per layer measured is far slower than the plan's: a likely cause is named.
  CHECK(doc["replicas"][0]["parts"]["step"]["causes"].size() >= 1);
  // The plan's own replica at 2 and 3 layers: its per-layer part is positive and its fixed
  // part holds the embedding, the head and the context.
  const auto& predicted = doc["replicas"][0]["parts"]["allocated"]["predicted"];
  CHECK(predicted["per_layer"].get<double>() > 0);
  CHECK(predicted["fixed"].get<double>() > predicted["per_layer"].get<double>());
  const test::CliResult table =
      test::run_cli({"calibrate", "compare", plan.string(), "--replica", file.string()});
  CHECK(table.code == 0);
  CHECK(table.out.find("per layer") != std::string::npos);

  // A profile of what the replica measured, which plan --calibration applies.
  const fs::path profile = scratch("gpu-profile.toml");
  fs::remove(profile);
  const test::CliResult w = test::run_cli(
      {"calibrate", "compare", plan.string(), "--replica", file.string(), "-o", profile.string()});
  INFO(w.err);
  REQUIRE(w.code == 0);
  const std::string text = test::read_file(profile.string());
  CHECK(text.find("cuda_context = \"1.250 GiB\"") != std::string::npos);
  CHECK(text.find("matmul_efficiency = ") != std::string::npos);
  CHECK(text.find("fragmentation = ") != std::string::npos);
  // The activations a layer saves: the measured per-layer slope (1 GiB, backward peak) against
  // the planned one (1.2 GiB), over the ledger's 0.18 GiB of activations per layer: a difference
  // larger than the activations is not theirs, and no factor is written.
  CHECK(text.find("activation_factor = ") == std::string::npos);
  const test::CliResult applied =
      test::run_cli({"plan", plan.string(), "--calibration", profile.string(), "--format", "json"});
  REQUIRE(applied.code <= 1);
  const nlohmann::json pj = nlohmann::json::parse(applied.out);
  CHECK(pj["inputs"]["cluster"]["cuda_context"].get<double>() == Approx(1.25 * gib).epsilon(1e-3));
  // The reserve: reserved − allocated at the deepest run (1.3 GiB) over the plan's dynamic
  // memory there, a share from 0 to 1.
  const double frag = pj["inputs"]["cluster"]["fragmentation"].get<double>();
  CHECK(frag > 0);
  CHECK(frag <= 1);
  // Never below the plan's own share: 2-3 layers understate the reserve the whole depth reaches.
  CHECK(frag >= 0.3);
  CHECK(pj["origins"]["cluster.matmul_efficiency"].get<std::string>().find("gpu-profile.toml") !=
        std::string::npos);
  // Only a GPU result makes a profile, and only --replica writes one.
  CHECK(test::run_cli({"calibrate", "compare", plan.string(), "--replica",
                       test::source_path("tests/data/replica/llama-3.1-8b-fsdp-cpu-tiny.json"),
                       "-o", profile.string()})
            .code == 2);
  CHECK(test::run_cli({"calibrate", "compare", plan.string(), "--memory-stats", file.string(), "-o",
                       profile.string()})
            .code == 2);

  // The plan's depth on one GPU: the planner's estimate there, and the measured lines phase by
  // phase (here the backward phase grows 1 GiB per layer: 10 + 16 GiB at 16 layers).
  CHECK(doc["replicas"][0]["parts"]["allocated"]["measured"]["at_plan_depth"].get<double>() ==
        Approx(26 * gib));
  CHECK(doc["replicas"][0]["parts"]["allocated"]["measured"]["peak_phase"] == "backward");
  CHECK(predicted["at_plan_depth"].get<double>() >
        predicted["fixed"].get<double>() + 15 * predicted["per_layer"].get<double>());

  // One depth (the whole model, say): predicted against measured there, no parts.
  {
    nlohmann::json one = result;
    one["runs"] = nlohmann::json::array({run(16)});
    std::ofstream(file) << one.dump();
    const test::CliResult r = test::run_cli(
        {"calibrate", "compare", plan.string(), "--replica", file.string(), "--format", "json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["replicas"][0]["parts"].is_null());
    CHECK(j["replicas"][0]["runs"][0]["measured"]["allocated_bytes"].get<double>() ==
          Approx(26 * gib));
    CHECK(j["replicas"][0]["notes"].dump().find("one depth measured") != std::string::npos);
  }

  // Another plan's replica (another micro-batch), a hostile or broken file: exit 2, located.
  auto refused = [&](const nlohmann::json& j, const std::string& message) {
    std::ofstream(file) << j.dump(1);
    const test::CliResult r =
        test::run_cli({"calibrate", "compare", plan.string(), "--replica", file.string()});
    INFO(message << ": " << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(file.string()) != std::string::npos);
    CHECK(r.err.find(message) != std::string::npos);
  };
  nlohmann::json other = result;
  other["micro_batch"] = 4;
  refused(other, "the replica of another plan");
  nlohmann::json wrong = result;
  wrong["format"] = "something/1";
  refused(wrong, "trainledger.replica/1");
  nlohmann::json none = result;
  none["runs"] = nlohmann::json::array();
  refused(none, "1 to 64 runs");
  nlohmann::json twice = result;
  twice["runs"] = {run(2), run(2)};
  refused(twice, "measured twice");
  nlohmann::json low = result;
  low["runs"][0]["peak_reserved"]["backward"] = 1;
  refused(low, "below its allocated peak");
  nlohmann::json nan_time = result;
  nan_time["runs"][1]["forward_s"] = -1;
  refused(nan_time, "\"forward_s\" must be a number of seconds");
  std::ofstream(file) << "{\"format\":\n \"runs\": [1, }";
  const test::CliResult broken =
      test::run_cli({"calibrate", "compare", plan.string(), "--replica", file.string()});
  CHECK(broken.code == 2);
  // Located at the line and column where the parser stopped.
  CHECK(broken.err.find(file.string() + ":2:") != std::string::npos);
  // A directory, and neither or both of --replica and --memory-stats.
  CHECK(test::run_cli({"calibrate", "compare", plan.string(), "--replica",
                       fs::temp_directory_path().string()})
            .code == 2);
  CHECK(test::run_cli({"calibrate", "compare", plan.string()}).code == 2);
  CHECK(test::run_cli({"calibrate", "replica", plan.string(), "--layers", "3"}).code == 2);
  // -o never replaces what is not a regular file.
  CHECK(test::run_cli({"calibrate", "replica", plan.string(), "-o", "/dev/null"}).code == 2);
  CHECK(test::run_cli({"calibrate", "compare", plan.string(), "--replica", file.string(), "-o",
                       fs::temp_directory_path().string()})
            .code == 2);
}

TEST_CASE("scripts/replica-grid: the GPU grid's plans, scripts and comparisons, tiny on the CPU",
          "[replica][python]") {
  const std::string py = torch_python();
  if (py.empty()) {
    WARN("skipped: no python3 with PyTorch (scripts/dev test installs python3-torch)");
    return;
  }
  const fs::path out = scratch("grid");
  fs::remove_all(out);
  const std::string build = fs::path(TRAINLEDGER_BINARY).parent_path().string();
  const std::string cmd =
      fmt::format("timeout 600 {} '{}' '{}' '{}' --cpu --limit 4 --python {} > /dev/null", py,
                  test::source_path("scripts/replica-grid"), build, out.string(), py);
  REQUIRE(std::system(cmd.c_str()) == 0);
  const nlohmann::json summary =
      nlohmann::json::parse(test::read_file((out / "summary.json").string()));
  REQUIRE(summary["runs"].size() == 4);
  for (const auto& row : summary["runs"]) {
    INFO(row.dump());
    CHECK(row["ok"] == true);
    CHECK(row["compare_exit"] == 0);
    CHECK(row["runs"].size() == 2);
  }
}

TEST_CASE("calibrate compare --replica: the phase that peaks moves with depth", "[replica]") {
  // Recompute: the backward phase grows 0.25 GiB per layer, the optimizer step's state 1 GiB.
  // At 2-3 layers the backward peaks; at the plan's 16 layers the optimizer does.
  const fs::path plan = scratch("phases.toml");
  std::ofstream(plan)
      << "[model]\npreset = \"llama-3.2-1b\"\n[training]\nseq_len = 2048\nrecompute = \"full\"\n"
         "micro_batch = 1\n[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 1\n";
  const double gib = 1024.0 * 1024 * 1024;
  auto run = [&](int layers) {
    const double b = (8 + 0.25 * layers) * gib, o = (6 + layers) * gib;
    return nlohmann::json{
        {"layers", layers},
        {"forward_s", 0.01},
        {"backward_s", 0.02},
        {"optimizer_s", 0.005},
        {"peak_allocated", {{"forward", b - gib}, {"backward", b}, {"optimizer", o}}},
        {"peak_reserved", {{"forward", b}, {"backward", b}, {"optimizer", o}}}};
  };
  const fs::path file = scratch("phases.json");
  std::ofstream(file) << nlohmann::json{
      {"format", "trainledger.replica/1"},
      {"device", "NVIDIA H100 80GB HBM3"},
      {"micro_batch", 1},
      {"seq_len", 2048},
      {"runs",
       {run(2), run(3)}}}.dump();
  const test::CliResult c = test::run_cli(
      {"calibrate", "compare", plan.string(), "--replica", file.string(), "--format", "json"});
  INFO(c.err);
  REQUIRE(c.code == 0);
  const nlohmann::json doc = nlohmann::json::parse(c.out);
  const auto& m = doc["replicas"][0]["parts"]["allocated"]["measured"];
  // The line through the peaks (8.5, 9 GiB) would say 12 GiB; the optimizer's says 22.
  CHECK(m["at_plan_depth"].get<double>() == Approx(22 * gib));
  CHECK(m["peak_phase"] == "optimizer");
}

// The grid measured on one H200 (tests/reference/replica/h200-20261204: PyTorch 2.11, CUDA 13.0):
// replicas of 2-6 layers, and three small models also at their full depth.
TEST_CASE("calibrate compare --replica on the H200 grid: 2-3 layers extrapolate to the whole model",
          "[replica][reference]") {
  const std::string dir = test::source_path("tests/reference/replica/h200-20261204");
  const nlohmann::json manifest = nlohmann::json::parse(test::read_file(dir + "/manifest.json"));
  auto compare = [&](const std::string& plan, const std::string& name) {
    const test::CliResult c =
        test::run_cli({"calibrate", "compare", dir + "/" + plan, "--replica",
                       dir + "/replica-" + name + ".json", "--format", "json"});
    INFO(name << ": " << c.err);
    REQUIRE(c.code == 0);
    return nlohmann::json::parse(c.out)["replicas"][0];
  };
  int checked = 0, runs = 0, under = 0, raised = 0;
  for (const auto& e : manifest) {
    const std::string name = e["name"];
    const nlohmann::json r = compare(e["plan"], name);
    for (const auto& x : r["runs"]) {
      // Every run was measured on the GPU: allocated and reserved peaks, the step.
      REQUIRE(x["measured"].contains("allocated_bytes"));
      const double err = x["predicted"]["allocated_bytes"].get<double>() /
                             x["measured"]["allocated_bytes"].get<double>() -
                         1;
      ++runs;
      if (err < -0.05) ++under;
      // FSDP2 on one rank at its deeper depth holds 3.5 B per parameter more at the optimizer
      // step than at the shallower one (not identified: docs/accuracy.md#replica).
      INFO(name << " at " << x["layers"] << " layers: " << err);
      CHECK(err > (e["name"].get<std::string>().find("-z3") != std::string::npos ? -0.16 : -0.05));
      CHECK(err < 0.35);
    }
    if (e["of"].is_null()) continue;
    // The whole model measured: the 2-3 layer replica's lines at its depth agree within 5 %.
    const nlohmann::json base = compare(e["plan"], e["of"]);
    const auto& whole = r["runs"].back();
    const double measured = whole["measured"]["allocated_bytes"];
    const double extrapolated = base["parts"]["allocated"]["measured"]["at_plan_depth"];
    INFO(name << ": extrapolated " << extrapolated << " measured " << measured);
    CHECK(std::abs(extrapolated / measured - 1) <= 0.05);
    ++checked;
    // The planner with the profile of the 2-3 layer replica (its activations per layer, context,
    // reserve and GEMM rate), at the whole depth: never further off than without.
    const fs::path profile = scratch("h200-" + e["of"].get<std::string>() + ".toml");
    fs::remove(profile);
    REQUIRE(test::run_cli({"calibrate", "compare", dir + "/" + e["plan"].get<std::string>(),
                           "--replica", dir + "/replica-" + e["of"].get<std::string>() + ".json",
                           "-o", profile.string()})
                .code == 0);
    const test::CliResult cal =
        test::run_cli({"calibrate", "compare", dir + "/" + e["plan"].get<std::string>(),
                       "--replica", dir + "/replica-" + name + ".json", "--calibration",
                       profile.string(), "--format", "json"});
    REQUIRE(cal.code == 0);
    const nlohmann::json run = nlohmann::json::parse(cal.out)["replicas"][0]["runs"].back();
    const double before = whole["predicted"]["allocated_bytes"].get<double>() / measured - 1;
    const double after = run["predicted"]["allocated_bytes"].get<double>() / measured - 1;
    const double reserved = whole["measured"]["reserved_bytes"].get<double>();
    const double after_reserved = run["predicted"]["reserved_bytes"].get<double>() / reserved - 1;
    INFO("planner " << before << ", calibrated " << after << ", reserved " << after_reserved);
    CHECK(std::abs(after) <= std::abs(before) + 0.01);
    // The profile raises activations only (measured 1.19 and 1.26 on the 2 x 4,096 runs without
    // recompute: -2.4 and -4.0 % become +2.3 and +2.4 %), and its reserve is never optimistic.
    CHECK(after >= -0.01);
    CHECK(after_reserved >= -0.05);
    if (before < 0) ++raised;
  }
  CHECK(checked >= 8);
  CHECK(raised >= 2);
  // Where the layers save fewer than the ledger (1B, no recompute, 1 x 2,048: 0.23x), a note
  // says so and the profile leaves the activations as planned.
  const nlohmann::json fewer = compare("plan-dense-gqa-none-mb1-s2048-adamw-bf16-z0.toml",
                                       "dense-gqa-none-mb1-s2048-adamw-bf16-z0");
  CHECK(fewer["notes"].dump().find("a profile does not lower them") != std::string::npos);
  CHECK(runs >= 70);
  CHECK(under <= 2);
}

// What the H200 grid measured of torch.optim's AdamW without the fused kernel (PyTorch 2.11,
// foreach, fp32 state under autocast): the optimizer phase peaks at 20.0 B per parameter (the
// fp32 weights, gradients, m and v, and _foreach_sqrt's copy of v; no 16-bit weights: those
// are autocast's, freed after backward), and the step streams 84 B per parameter.
TEST_CASE("torch.optim AdamW (foreach) under autocast: the optimizer phase and its time",
          "[replica][reference]") {
  // Llama 3.1 8B at 2 layers, 1 × 2048 tokens: 1.487 B parameters; measured 27.76 GiB at the
  // optimizer step and 33.3 ms for it (replica-dense-8b-none-mb1-s2048-adamw-bf16-z0.json).
  const std::string toml =
      "[model]\npreset = \"llama-3.1-8b\"\nlayers = 2\n[training]\nseq_len = 2048\n"
      "micro_batch = 1\nglobal_batch = 1\noptimizer = \"adamw\"\nframework = \"pytorch\"\n"
      "[cluster]\ngpu = \"h200-sxm-141gb\"\ngpus_per_node = 1\n";
  const PlanResult p = test::plan_text(toml);
  const double gib = 1024.0 * 1024 * 1024;
  const double params = p.derived.params;
  CHECK(params == Approx(1.487e9).epsilon(0.01));
  // The foreach step's copy of the second moments, and no 16-bit weights at the step.
  CHECK(test::phase_value(p, "temporaries", 0, Phase::optimizer) ==
        Approx(4 * params).epsilon(0.01));
  CHECK(test::phase_value(p, "params", 0, Phase::optimizer) == 0);
  CHECK(test::phase_value(p, "params", 0, Phase::backward) > 0);
  // With one micro-batch per step the forward runs without gradients (zero_grad frees them).
  CHECK(test::phase_value(p, "grads", 0, Phase::forward) == 0);
  CHECK(test::phase_value(p, "grads", 0, Phase::backward) > 0);
  double state = 0;
  for (const char* id : {"master", "grads", "optimizer.m", "optimizer.v", "temporaries"})
    state += test::phase_value(p, id, 0, Phase::optimizer);
  CHECK(state / gib == Approx(27.76).epsilon(0.02));
  // 84 B per parameter at the preset's 4.8 TB/s × 0.72: 36.2 ms against 33.3 measured (+9 %);
  // a fused step streams 28-36 B.
  auto optimizer_s = [](const PlanResult& r) {
    return find_item(r.time, ItemId::time_optimizer)->value;
  };
  const double t = optimizer_s(p);
  CHECK(t == Approx(params * 84 / (4.8e12 * 0.72)).epsilon(0.01));
  CHECK(t / 0.0333 - 1 == Approx(0.07).margin(0.03));
  const PlanResult fused = test::plan_text(toml, {"training.optimizer_impl=\"fused\""});
  CHECK(optimizer_s(fused) < t / 2);
  CHECK(test::phase_value(fused, "temporaries", 0, Phase::optimizer) == 0);
  // Gradient accumulation keeps the gradients through the next micro-batch's forward.
  const PlanResult ga = test::plan_text(toml, {"training.global_batch=4"});
  CHECK(test::phase_value(ga, "grads", 0, Phase::forward) > 0);
  // Megatron-LM keeps its 16-bit weights and fp32 main_grad buffer through every phase.
  const PlanResult mg = test::plan_text(toml, {"training.framework=\"megatron\""});
  CHECK(test::phase_value(mg, "params", 0, Phase::optimizer) > 0);
  CHECK(test::phase_value(mg, "grads", 0, Phase::forward) > 0);
}
