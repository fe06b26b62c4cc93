// Every model preset's derived parameter count equals the model's exact published count
// (../shared/data/models.csv: safetensors metadata, model cards, PEFT outputs).
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "trainledger/config.hpp"
#include "trainledger/model.hpp"

using namespace trainledger;

namespace {

struct Published {
  const char* preset;
  double params;
};

// Exact counts, each as published (see configs/models/*.toml `summary` for the source).
constexpr Published k_published[] = {
    {"gpt3-175b", 174604259328},         // computed; the paper rounds to 175.0B
    {"bloom-176b", 176247271424},        // BLOOM model card
    {"llama-2-7b", 6738415616},          // PEFT "all params: 6,738,415,616"
    {"llama-2-13b", 13015864320},        // public LlamaForCausalLM count
    {"llama-2-70b", 68976648192},        // PEFT "all params: 68,976,648,192"
    {"llama-3.1-8b", 8030261248},        // safetensors metadata
    {"llama-3.1-70b", 70553706496},      // safetensors metadata
    {"llama-3.1-405b", 405853388800},    // HF API safetensors.total
    {"mistral-7b", 7241732096},          // public load logs
    {"qwen2.5-7b", 7615616512},          // safetensors metadata
    {"qwen2.5-72b", 72706203648},        // safetensors metadata
    {"mixtral-8x7b", 46702792704},       // model card 46.7B, independent recounts
    {"gemma-2-9b", 9241705984},          // safetensors metadata
    {"gpt2-xl", 1557611200},             // HF checkpoint load count
    {"opt-1.3b", 1315758080},            // public load logs
    {"mixtral-8x22b", 140630071296},     // safetensors metadata
    {"mistral-small-24b", 23572403200},  // safetensors metadata
    // Llama 4: the safetensors totals less the vision part (tests/data/hf/SOURCES.md).
    {"llama-4-scout", 108641793536.0 - 871932416.0},
    {"llama-4-maverick", 401583781376.0 - 871932416.0},
};

}  // namespace

TEST_CASE("preset parameter counts equal the published exact counts", "[presets]") {
  for (const Published& p : k_published) {
    INFO(p.preset);
    const ModelSpec m = config::load_model_preset(p.preset);
    CHECK(total_params(m) == p.params);
  }
}

TEST_CASE("every preset states its published count and it matches the derived one", "[presets]") {
  const auto presets = config::model_presets();
  REQUIRE(presets.size() >= 11);
  for (const config::PresetInfo& info : presets) {
    INFO(info.name);
    CHECK(!info.source.empty());
    REQUIRE(info.published_params > 0);
    CHECK(total_params(config::load_model_preset(info.name)) == info.published_params);
  }
}

TEST_CASE("Mixtral's active parameters per token", "[presets]") {
  // 2 of 8 experts per token: 12,879,925,248 (models.csv, F-MOE).
  CHECK(active_params(config::load_model_preset("mixtral-8x7b")) == 12879925248.0);
}

TEST_CASE("the worked Llama-2-7B count decomposes as published", "[presets]") {
  const ModelSpec m = config::load_model_preset("llama-2-7b");
  const LayerParams lp = layer_params(m);
  CHECK(lp.total() == 202383360);  // 4·4096² + 3·4096·11008 + 2·4096
  const EdgeParams e = edge_params(m);
  CHECK(e.embedding + e.lm_head == 262144000);  // 2 · 32000 · 4096
}

TEST_CASE("GPU presets carry the device-reported memory and dense peaks", "[presets]") {
  const auto gpus = config::gpu_presets();
  REQUIRE(gpus.size() >= 9);
  for (const config::PresetInfo& info : gpus) {
    INFO(info.name);
    const GpuSpec g = config::load_gpu_preset(info.name);
    CHECK(g.memory_bytes > 0);
    CHECK(g.memory_bytes % (1024 * 1024) == 0);
    CHECK(!info.source.empty());
    CHECK(g.peak_flops.fp32 > 0);
  }
  // nvidia-smi totals: H100 81559 MiB, A100 80GB 81920 MiB, H200 143771 MiB, B200 183359 MiB.
  CHECK(config::load_gpu_preset("h100-sxm5-80gb").memory_bytes == 85520809984);
  CHECK(config::load_gpu_preset("a100-sxm4-80gb").memory_bytes == 85899345920);
  CHECK(config::load_gpu_preset("h200-sxm-141gb").memory_bytes == 150754820096);
  CHECK(config::load_gpu_preset("b200-180gb").memory_bytes == 192265846784);
  CHECK(config::load_gpu_preset("mi300x-192gb").memory_bytes == 205822885888);
  CHECK(config::load_gpu_preset("b300-275gb").memory_bytes == 288400343040);  // 275040 MiB
  CHECK(config::load_gpu_preset("mi355x-288gb").memory_bytes == 309220868096);
  CHECK(config::load_gpu_preset("mi355x-288gb").peak_flops.fp8 == Approx(256 * 8192 * 2.4e9));
  // GB300: nvidia-smi "NVIDIA GB300 ... 284208MiB" (oracle-quickstart/oci-gpu-quickstarts);
  // 15 PF dense NVFP4 per GPU (NVIDIA's Blackwell Ultra blog), FP8 and BF16 twice B300's share
  // of the rack: 5 and 2.5 PF dense.
  const GpuSpec gb300 = config::load_gpu_preset("gb300-284gb");
  CHECK(gb300.memory_bytes == 298013687808);
  CHECK(gb300.peak_flops.fp4 == Approx(15e15));
  CHECK(gb300.peak_flops.fp8 == Approx(5e15));
  CHECK(gb300.peak_flops.bf16 == Approx(2.5e15));
  // MI325X: MI300X's compute (the same 304 CUs and clock), 6 TB/s, no FP4 or FP6 (CDNA3).
  const GpuSpec mi325x = config::load_gpu_preset("mi325x-256gb");
  CHECK(mi325x.peak_flops.fp8 == config::load_gpu_preset("mi300x-192gb").peak_flops.fp8);
  CHECK(mi325x.memory_bandwidth == Approx(6e12));
  CHECK(mi325x.peak_flops.fp4 == 0);
  CHECK(mi325x.memory_bytes == 261824LL * 1024 * 1024);
  // Blackwell runs FP6 at the FP8 rate, CDNA 4 at the FP4 rate (twice FP8).
  const GpuSpec b200 = config::load_gpu_preset("b200-180gb");
  CHECK(b200.peak_flops.fp6 == b200.peak_flops.fp8);
  CHECK(b200.peak_flops.fp4 == Approx(2 * b200.peak_flops.fp8));
  const GpuSpec mi355x = config::load_gpu_preset("mi355x-288gb");
  CHECK(mi355x.peak_flops.fp6 == Approx(2 * mi355x.peak_flops.fp8).epsilon(1e-4));
  CHECK(mi355x.peak_flops.fp4 == mi355x.peak_flops.fp6);
  CHECK(config::load_gpu_preset("h100-sxm5-80gb").peak_flops.bf16 == Approx(989.4e12));
  CHECK(config::load_gpu_preset("v100-sxm2-32gb").peak_flops.bf16 == 0);  // no bf16 on Volta
}

TEST_CASE("presets are found in any case, by Hugging Face repo id or by the GPU's name",
          "[presets][errors]") {
  const std::string cluster = "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  for (const char* name : {"Llama-3.1-8B", "meta-llama/Llama-3.1-8B", "META-LLAMA/llama-3.1-8b"}) {
    INFO(name);
    const config::LoadedPlan p =
        test::load_text(std::string("[model]\npreset = \"") + name + "\"\n" + cluster);
    CHECK(p.input.model.layers == 32);
    CHECK(p.input.model.hidden == 4096);
  }
  for (const char* gpu : {"H100-SXM5-80GB", "NVIDIA H100 80GB HBM3"}) {
    INFO(gpu);
    const config::LoadedPlan p = test::load_text(
        std::string("[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu = \"") + gpu + "\"\n");
    CHECK(p.input.cluster.gpu.memory_bytes == 85520809984);
  }
  // Near misses get the nearest name, ignoring case and separators; an ambiguous short name
  // lists every preset it is part of.
  const auto llama3 = test::load_errors("[model]\npreset = \"llama-3-8b\"\n" + cluster);
  REQUIRE(llama3.size() == 1);
  CHECK(llama3[0].find("(did you mean \"llama-3.1-8b\"?)") != std::string::npos);
  const auto h100 =
      test::load_errors("[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu = \"H100\"\n");
  REQUIRE(h100.size() == 1);
  CHECK(h100[0].find("did you mean one of \"h100-nvl-94gb\", \"h100-pcie-80gb\", "
                     "\"h100-sxm5-80gb\"?") != std::string::npos);
}

TEST_CASE("a plan's peak_flops takes fp6 and fp4 and names the dtypes it knows", "[config][gpus]") {
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[cluster]\ngpu_memory = \"80 GiB\"\nmemory_bandwidth = "
      "\"3 TB/s\"\npeak_flops = { bf16 = \"1000 TFLOP/s\", fp4 = \"4 PFLOP/s\", fp6 = \"2 "
      "PFLOP/s\" }\n";
  const PlanResult p = test::plan_text(plan);
  CHECK(p.input.cluster.gpu.peak_flops.fp4 == Approx(4e15));
  CHECK(p.input.cluster.gpu.peak_flops.fp6 == Approx(2e15));
  const auto errors = test::load_errors(
      "[model]\npreset = \"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\npeak_flops = { "
      "fp2 = \"1 PFLOP/s\" }\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("unknown dtype \"fp2\" (expected fp32, tf32, bf16, fp16, fp8, fp6, fp4)") !=
        std::string::npos);
}
