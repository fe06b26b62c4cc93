// Step time against published measurements (tests/reference/time.json). One documented
// matmul efficiency per GPU generation (configs/gpus), never a constant per case. The
// element-wise HBM efficiency is fitted on torch.compile's measured gain (test_overlap.cpp),
// the A100's matmul efficiency on Korthikanti et al.'s Megatron-LM iteration times (the fit set:
// median signed error near zero); every other run is held back from that fit, and the targets of
// docs/accuracy.md hold on them: median absolute error at most 10 %, median signed error
// within ±5 %.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "helpers.hpp"

using namespace trainledger;

namespace {

struct Errors {
  std::vector<double> abs;
  std::vector<double> signed_errors;
  std::string table = "\n| case | measured | predicted | error |\n|---|---:|---:|---:|\n";
};

Errors evaluate(const nlohmann::json& cases) {
  Errors e;
  for (const auto& c : cases) {
    const std::string plan = c["plan"];
    const config::LoadedPlan loaded =
        config::load_plan_file(test::source_path("tests/reference/" + plan), {});
    const PlanResult p = test::plan_checked(loaded.input);
    const LineItem* item = find_item(p.time, *item_by_name(c["quantity"].get<std::string>()));
    REQUIRE(item);
    const double measured = c["measured"];
    const double error = (item->value - measured) / measured;
    e.abs.push_back(std::fabs(error));
    e.signed_errors.push_back(error);
    e.table += fmt::format("| {} | {:.4g} | {:.4g} | {:+.1f} % |\n", plan, measured, item->value,
                           100 * error);
  }
  return e;
}

// The throughput cases of a held-back folder of Megatron-Bridge rows (its cases.json), each with
// its source.
nlohmann::json folder_cases(const std::string& folder) {
  nlohmann::json cases = nlohmann::json::array();
  for (const auto& c : nlohmann::json::parse(
           test::read_file(test::source_path("tests/reference/" + folder + "/cases.json")))) {
    REQUIRE(!c["source"].get<std::string>().empty());
    cases.push_back({{"plan", folder + "/" + c["plan"].get<std::string>()},
                     {"measured", c["measured_tokens_per_s_per_gpu"]},
                     {"quantity", "throughput.tokens_per_s_per_gpu"}});
  }
  return cases;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

}  // namespace

TEST_CASE("step time against Megatron-LM's measured iteration times", "[reference][time]") {
  const auto all =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/time.json")));
  const Errors e = evaluate(all["megatron"]);
  REQUIRE(e.abs.size() == 8);
  double mean = 0;
  for (double x : e.abs) mean += x / e.abs.size();
  const double worst = *std::max_element(e.abs.begin(), e.abs.end());
  WARN(e.table << fmt::format("mean {:.2f} %, worst {:.2f} %, median signed {:+.1f} %", 100 * mean,
                              100 * worst, 100 * median(e.signed_errors)));
  // Under Megatron-LM's own conventions (fused kernels), with one efficiency for the A100: the
  // fit centres the errors; the spread (22B fast, 530B and 1T with full recompute slow) is
  // what one efficiency per generation cannot follow (docs/accuracy.md).
  CHECK(std::fabs(median(e.signed_errors)) <= 0.02);
  CHECK(mean < 0.055);
  CHECK(worst < 0.11);
}

// Each framework's runs, reported one table per source; the target (docs/accuracy.md) holds on
// all of them together: median absolute error at most 10 %, median signed error within ±5 %.
TEST_CASE(
    "throughput against measured runs of torchtitan, NeMo/Megatron-Bridge, llm-foundry, Llama 3",
    "[reference][time]") {
  const auto all =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/time.json")));
  std::vector<double> abs_all, signed_all, abs_scale, signed_scale;
  for (const char* group : {"other", "nvidia", "mosaicml", "llama3", "megascale"}) {
    const Errors e = evaluate(all[group]);
    REQUIRE(e.abs.size() >= 2);
    WARN(group << e.table
               << fmt::format("median {:.1f} %, median signed {:+.1f} %, worst {:.1f} %",
                              100 * median(e.abs), 100 * median(e.signed_errors),
                              100 * *std::max_element(e.abs.begin(), e.abs.end())));
    const bool scale = std::string(group) == "megascale";
    std::vector<double>& a = scale ? abs_scale : abs_all;
    std::vector<double>& sg = scale ? signed_scale : signed_all;
    a.insert(a.end(), e.abs.begin(), e.abs.end());
    sg.insert(sg.end(), e.signed_errors.begin(), e.signed_errors.end());
  }
  const double med = median(abs_all);
  const double bias = median(signed_all);
  WARN(fmt::format("{} cases before MegaScale's: median {:.1f} %, median signed {:+.1f} %",
                   abs_all.size(), 100 * med, 100 * bias));
  CHECK(med <= 0.10);
  CHECK(std::fabs(bias) <= 0.05);
  // MegaScale's Megatron-LM baseline at 256 to 12,288 GPUs: +5.9 to +17.4 %, optimistic and
  // growing with the GPU count (a loss at scale the planner does not model, docs/accuracy.md).
  // With it the set meets both goals: 8.0 %, +3.0 % over 60 runs (9.2 %, +5.4 % before NCCL's
  // SMs beside the compute were counted, docs/formulas.md#nccl-contention; 10.4 %, +7.0 % before
  // FSDP's copies were timed); each of its rows and the whole set are held there.
  for (double e : signed_scale) CHECK(std::fabs(e) <= 0.18);
  abs_all.insert(abs_all.end(), abs_scale.begin(), abs_scale.end());
  signed_all.insert(signed_all.end(), signed_scale.begin(), signed_scale.end());
  WARN(fmt::format("all {} cases: median {:.1f} %, median signed {:+.1f} %", abs_all.size(),
                   100 * median(abs_all), 100 * median(signed_all)));
  CHECK(median(abs_all) <= 0.10);
  CHECK(std::fabs(median(signed_all)) <= 0.05);
}

// Megatron-Bridge's MoE pre-training rows (tests/reference/time-moe/, held back: no value was
// set on them): Qwen3-30B-A3B, Qwen3-235B-A22B and DeepSeek-V3 on H100, B200 and GB200 in BF16
// and FP8 with tensor-wise scaling. Optimistic at the median (+22.8 %: what MoE layers cost
// beyond their GEMMs and all-to-all is not all modelled, and the FP8 gain is over-predicted,
// docs/accuracy.md); the GB200 NVL72 row (ep 32 over 64-GPU segments of the racks) is within
// 5 % now that the NVLink domain spans the trays (-42 % when each tray was its own node).
// They are kept apart from time.json, whose runs the time bands are built from: one source
// cannot be held out of its own family's band (docs/accuracy.md#bands).
TEST_CASE("throughput against Megatron-Bridge's MoE pre-training rows", "[reference][time]") {
  const nlohmann::json cases = folder_cases("time-moe");
  const Errors e = evaluate(cases);
  REQUIRE(e.abs.size() == 12);
  WARN("nvidia_moe" << e.table
                    << fmt::format("median {:.1f} %, median signed {:+.1f} %", 100 * median(e.abs),
                                   100 * median(e.signed_errors)));
  CHECK(median(e.abs) <= 0.25);
  CHECK(median(e.signed_errors) <= 0.25);
  CHECK(median(e.signed_errors) >= 0.0);
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (cases[i]["plan"] == "time-moe/mb-25.11-qwen3-235b-a22b-gb200-bf16-256g.toml")
      CHECK(e.abs[i] <= 0.10);
}

// The Megatron-Core MoE team's model zoo (github.com/yanring/Megatron-MoE-ModelZoo;
// tests/reference/ time-moe-mcore-modelzoo/, held back: no value was set on them): Qwen3-235B-A22B
// on 256 H100s at 4k to 128k tokens, on GB200 and GB300, Mixtral 8x22B on 128 H100s, run with
// Megatron-LM's own scripts (DeepEP dispatch, expert tensor parallelism 1). The second MoE source:
// pessimistic where Megatron-Bridge's rows are optimistic (the planner cannot keep experts whole
// under tp > 1 and times DeepEP's dispatch slower than it runs, docs/accuracy.md#moe-pretraining).
TEST_CASE("throughput against the Megatron-Core MoE model zoo", "[reference][time]") {
  const Errors e = evaluate(folder_cases("time-moe-mcore-modelzoo"));
  REQUIRE(e.abs.size() == 16);
  WARN("mcore_moe_modelzoo" << e.table
                            << fmt::format("median {:.1f} %, median signed {:+.1f} %",
                                           100 * median(e.abs), 100 * median(e.signed_errors)));
  // Held where they are (32.0 %, -32.0 %): pessimistic, never more than 60 % off.
  CHECK(median(e.abs) <= 0.33);
  CHECK(median(e.signed_errors) >= -0.33);
  for (double s : e.signed_errors) CHECK(std::fabs(s) <= 0.60);
}

// The same summaries' MoE rows on Blackwell in MXFP8 (and one GB300 BF16 row) that time-moe
// left out while the planner had no MXFP8 recipe and no GB300 preset
// (tests/reference/time-moe-blackwell/, held back: no value was set on them). Qwen3-235B-A22B
// on GB200/GB300 is 11-35 % pessimistic (from 26.06 the recipes capture whole iterations in CUDA
// graphs with the all-to-all overlapped: not expressible), Qwen3-30B-A3B on 8 GPUs 14-36 %
// optimistic as in time-moe, DeepSeek-V3 on B200/B300 mostly within 10 % (docs/accuracy.md).
TEST_CASE("throughput against Megatron-Bridge's MoE rows on Blackwell in MXFP8",
          "[reference][time][recipes]") {
  const Errors e = evaluate(folder_cases("time-moe-blackwell"));
  REQUIRE(e.abs.size() == 61);
  WARN("moe_blackwell" << e.table
                       << fmt::format("median {:.1f} %, median signed {:+.1f} %",
                                      100 * median(e.abs), 100 * median(e.signed_errors)));
  // Held where they are (17.6 %, −0.9 %).
  CHECK(median(e.abs) <= 0.19);
  CHECK(std::fabs(median(e.signed_errors)) <= 0.05);
}

TEST_CASE("llm-foundry's published layouts fit in memory", "[reference][memory]") {
  // They ran: a planner that says they do not fit would block them in a CI gate. Each picks the
  // largest micro-batch that fits, so they sit at 73-98 % of the capacity (docs/accuracy.md).
  const auto all =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/time.json")));
  for (const auto& c : all["mosaicml"]) {
    const std::string plan = c["plan"];
    const PlanResult p = test::plan_checked(
        config::load_plan_file(test::source_path("tests/reference/" + plan), {}).input);
    INFO(plan);
    CHECK(p.verdict.fits);
  }
}

// Lightning-AI/lightning-thunder#1506 (2024-12): Hugging Face's LlamaForCausalLM with the
// Llama 3.2 1B config on one H100, input (1, 2048), forward + loss.backward() timed without an
// optimizer step: eager 53.6 ms, torch.compile 38.0 ms (torch 2.6.0a0). A run small enough for
// kernel dispatch to matter (docs/formulas.md#dispatch); no value was set on it.
TEST_CASE("Hugging Face Llama 3.2 1B forward and backward on one H100, eager and compiled",
          "[reference][time][host]") {
  const std::string plan = R"(
[model]
preset = "llama-3.2-1b"
[training]
framework = "hf"
seq_len = 2048
micro_batch = 1
global_batch = 1
[cluster]
gpu = "h100-sxm5-80gb"
gpus_per_node = 1
)";
  auto pass_time = [&](const std::vector<std::string>& sets) {
    const PlanResult p = test::plan_text(plan, sets);
    double s = 0;
    for (ItemId id : {ItemId::time_compute, ItemId::time_recompute, ItemId::time_comm_exposed,
                      ItemId::time_host})
      s += find_item(p.time, id)->value;
    return s;
  };
  const double eager = pass_time({}), compiled = pass_time({"training.compile=true"});
  const double e_eager = (eager - 0.0536) / 0.0536, e_compiled = (compiled - 0.038) / 0.038;
  WARN(
      fmt::format("eager {:.1f} ms ({:+.1f} %), compiled {:.1f} ms ({:+.1f} %), gain {:.2f} "
                  "(measured 1.41)",
                  1e3 * eager, 100 * e_eager, 1e3 * compiled, 100 * e_compiled, eager / compiled));
  CHECK(std::fabs(e_eager) <= 0.15);
  CHECK(std::fabs(e_compiled) <= 0.15);
  CHECK(eager > compiled);
}

// Megatron-Bridge's dense pre-training rows on B200, GB200 and GB300 with the H100 rows of the
// same models (Llama 3 8B and 70B, Llama 3.1 405B; FP8 current scaling, MXFP8, NVFP4) and
// torchao's Llama 3 8B recipes with torchtitan on 8 B200 and 8 H100 (tests/reference/
// time-blackwell/, held back: no value was set on them; docs/accuracy.md#recipes). torchao's
// B200s were power-limited, so only its ratios between recipes are compared.
TEST_CASE("throughput against Megatron-Bridge's dense Blackwell rows and torchao's recipes",
          "[reference][time][recipes]") {
  const auto all = nlohmann::json::parse(
      test::read_file(test::source_path("tests/reference/time-blackwell/cases.json")));
  nlohmann::json mb = nlohmann::json::array();
  std::vector<std::string> systems, precisions, runs;
  // Speed-ups over bf16 by source: torchao's table and torchtitan's async-TP benchmark.
  std::map<std::string, std::map<std::string, double>> pair_measured, pair_predicted;
  for (const auto& c : all) {
    REQUIRE(!c["source"].get<std::string>().empty());
    const std::string plan = "time-blackwell/" + c["plan"].get<std::string>();
    if (c["release"] == "torchao" || c["release"] == "torchtitan") {
      const PlanResult p = test::plan_checked(
          config::load_plan_file(test::source_path("tests/reference/" + plan), {}).input);
      const std::string key =
          c["system"].get<std::string>() + " " + c["precision"].get<std::string>();
      pair_measured[c["release"]][key] = c["measured_tokens_per_s_per_gpu"];
      pair_predicted[c["release"]][key] =
          find_item(p.time, ItemId::throughput_tokens_per_s_per_gpu)->value;
      continue;
    }
    mb.push_back({{"plan", plan},
                  {"measured", c["measured_tokens_per_s_per_gpu"]},
                  {"quantity", "throughput.tokens_per_s_per_gpu"}});
    systems.push_back(c["system"]);
    precisions.push_back(c["precision"]);
    runs.push_back(fmt::format("{} {} {} {}g", c["release"].get<std::string>(),
                               c["model"].get<std::string>(), c["system"].get<std::string>(),
                               c["gpus"].get<int>()));
  }
  const Errors e = evaluate(mb);
  REQUIRE(e.abs.size() == 89);
  // They ran: the twelve that offload activations to the host (Megatron-FSDP on GB200/GB300)
  // fit with it, and none would without (325 GiB for the 70B on GB200).
  int offloading = 0;
  for (const auto& c : mb) {
    const std::string path = test::source_path("tests/reference/" + c["plan"].get<std::string>());
    const config::LoadedPlan loaded = config::load_plan_file(path, {});
    if (loaded.input.training.activation_offload_layers == 0) continue;
    ++offloading;
    INFO(path);
    CHECK(test::plan_checked(loaded.input).verdict.fits);
    PlanInput on_gpu = loaded.input;
    on_gpu.training.activation_offload_layers = 0;
    CHECK_FALSE(test::plan_checked(on_gpu).verdict.fits);
  }
  CHECK(offloading == 12);
  // The issue's set: B200 and GB200 in FP8 current scaling and MXFP8.
  std::vector<double> abs_bw, signed_bw;
  std::map<std::string, std::vector<double>> by_group;
  for (std::size_t i = 0; i < e.abs.size(); ++i) {
    const std::string precision = precisions[i] == "FP8" ? "FP8-CS" : precisions[i];
    by_group[systems[i] + " " + precision].push_back(e.signed_errors[i]);
    if ((systems[i] == "DGX-B200" || systems[i] == "DGX-GB200") && precision != "NVFP4") {
      abs_bw.push_back(e.abs[i]);
      signed_bw.push_back(e.signed_errors[i]);
    }
  }
  std::string groups = "\n| system, precision | runs | median signed |\n|---|---:|---:|\n";
  for (const auto& [g, v] : by_group)
    groups += fmt::format("| {} | {} | {:+.1f} % |\n", g, v.size(), 100 * median(v));
  WARN("blackwell" << e.table << groups
                   << fmt::format("all {}: median {:.1f} %, median signed {:+.1f} %; B200/GB200 "
                                  "FP8-CS and MXFP8 ({}): median {:.1f} %, signed {:+.1f} %",
                                  e.abs.size(), 100 * median(e.abs), 100 * median(e.signed_errors),
                                  abs_bw.size(), 100 * median(abs_bw), 100 * median(signed_bw)));
  // Megatron-Bridge's MXFP8 and NVFP4 rows over FP8 current scaling in the same release, model,
  // system and GPU count: measured and planned ratios.
  std::map<std::string, std::map<std::string, std::pair<double, double>>> by_run;
  for (std::size_t i = 0; i < e.abs.size(); ++i) {
    const double measured = mb[i]["measured"];
    const std::string precision = precisions[i] == "FP8" ? "FP8-CS" : precisions[i];
    by_run[runs[i]][precision] = {measured, measured * (1 + e.signed_errors[i])};
  }
  std::string mb_ratios =
      "\n| run | recipe | measured / FP8-CS | planned / FP8-CS |\n|---|---|---:|---:|\n";
  std::map<std::string, std::vector<double>> mb_ratio_error;
  for (const auto& [run, by_precision] : by_run) {
    const auto base = by_precision.find("FP8-CS");
    if (base == by_precision.end()) continue;
    for (const auto& [precision, v] : by_precision) {
      if (precision == "FP8-CS") continue;
      const double m = v.first / base->second.first, p = v.second / base->second.second;
      mb_ratio_error[precision].push_back(p / m - 1);
      mb_ratios += fmt::format("| {} | {} | {:.3f} | {:.3f} |\n", run, precision, m, p);
    }
  }
  for (const auto& [precision, v] : mb_ratio_error)
    mb_ratios += fmt::format("{} over FP8-CS: {} pairs, median ratio error {:+.1f} %\n", precision,
                             v.size(), 100 * median(v));
  WARN("Megatron-Bridge ratios" << mb_ratios);
  // The speed-ups over bf16 of each source, measured and planned.
  std::map<std::string, std::map<std::string, double>> ratio_errors;
  for (const auto& [release, measured_by_key] : pair_measured) {
    std::string ratios = "\n| GPU, recipe | measured / bf16 | planned / bf16 |\n|---|---:|---:|\n";
    for (const auto& [key, measured] : measured_by_key) {
      const std::string base = key.substr(0, key.rfind(' ')) + " BF16";
      if (key == base || !measured_by_key.count(base)) continue;
      const double m = measured / measured_by_key.at(base);
      const double p = pair_predicted[release][key] / pair_predicted[release][base];
      ratio_errors[release][key] = p / m - 1;
      ratios += fmt::format("| {} | {:.3f} | {:.3f} |\n", key, m, p);
    }
    WARN(release << " ratios" << ratios);
  }
  const std::map<std::string, double>& ratio_error = ratio_errors["torchao"];
  REQUIRE(ratio_error.size() == 5);
  // The goals of the Blackwell recipes: tokens/s per GPU of B200 and GB200 in FP8 current
  // scaling and MXFP8 within 15 % at the median, signed within ±7 % (7.2 %, +4.3 % over 36
  // runs); MXFP8's and NVFP4's speed-up over FP8 within 10 % of the published ratio (+4.8 %,
  // +9.7 % at the median).
  CHECK(median(abs_bw) <= 0.15);
  CHECK(std::fabs(median(signed_bw)) <= 0.07);
  CHECK(median(e.abs) <= 0.11);
  CHECK(std::fabs(median(e.signed_errors)) <= 0.06);
  REQUIRE(mb_ratio_error.size() == 2);
  for (const auto& [precision, v] : mb_ratio_error) {
    INFO(precision);
    CHECK(std::fabs(median(v)) <= 0.10);
  }
  // torchao's gains over bf16 are over-predicted by 9 to 32 % (docs/accuracy.md#recipes: the
  // goal of 10 % is not met); held where they are, in sign and size.
  for (const auto& [key, error] : ratio_error) {
    INFO(key);
    CHECK(error > 0);
    CHECK(error <= 0.35);
  }
  // torchtitan's async-TP benchmark (Llama 3 70B on 256 and 8B on 64 Grand Teton H100s, tp 8,
  // vanilla and async TP): tensorwise's gain within 10 % of the published one at the median
  // (+5.4 % to +19.2 %, median +9.3 %). Rowwise under TP ran slower than bf16 (0.81-1.00:
  // torchtitan issue #1207, a bug of that release, and PyTorch's row-wise _scaled_mm, slower
  // than the tensor-wise one, pytorch/pytorch#147971), which no plan key expresses: planned
  // 1.25-1.53, held there.
  const std::map<std::string, double>& titan = ratio_errors["torchtitan"];
  REQUIRE(titan.size() == 8);
  std::vector<double> tensorwise;
  for (const auto& [key, error] : titan) {
    INFO(key);
    if (key.find("FP8-tensorwise") != std::string::npos) {
      tensorwise.push_back(error);
      CHECK(std::fabs(error) <= 0.25);
    } else {
      CHECK(error > 0.3);
      CHECK(error <= 0.7);
    }
  }
  REQUIRE(tensorwise.size() == 4);
  CHECK(std::fabs(median(tensorwise)) <= 0.10);
}
