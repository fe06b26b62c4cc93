// Plan loading: presets, --set precedence, origins, derived layout, Hugging Face config.json.
#include <catch2/catch.hpp>

#include <algorithm>

#include <sys/wait.h>

#include <cstdlib>

#include "helpers.hpp"
#include "keys.hpp"
#include "quantity.hpp"
#include "trainledger/model.hpp"

using namespace trainledger;
using test::load_errors;
using test::load_text;

namespace {

std::string origin_of(const config::LoadedPlan& p, const std::string& key) {
  for (const config::ResolvedValue& r : p.resolved)
    if (r.key == key) return r.origin.to_string();
  return "(none)";
}

const std::string k_cluster = "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";

}  // namespace

TEST_CASE("quantities parse with explicit units only", "[config][units]") {
  using config::parse_quantity;
  using config::QuantityKind;
  CHECK(*parse_quantity("80 GiB", QuantityKind::bytes).value == 80.0 * 1024 * 1024 * 1024);
  CHECK(*parse_quantity("80 GB", QuantityKind::bytes).value == 80e9);
  CHECK(*parse_quantity("81559 MiB", QuantityKind::bytes).value == 85520809984.0);
  CHECK(*parse_quantity("450 GB/s", QuantityKind::bandwidth).value == 450e9);
  CHECK(*parse_quantity("400 Gb/s", QuantityKind::bandwidth).value == 50e9);  // bits
  CHECK(*parse_quantity("8 us", QuantityKind::duration).value == 8e-6);
  CHECK(*parse_quantity("5 min", QuantityKind::duration).value == 300);
  CHECK(*parse_quantity("3e-6 /h", QuantityKind::rate).value == 3e-6);
  CHECK(*parse_quantity("3e-6/h", QuantityKind::rate).value == 3e-6);
  CHECK(*parse_quantity("989.4 TFLOP/s", QuantityKind::flops).value == 989.4e12);
  CHECK(*parse_quantity("66.9 TFLOP/s", QuantityKind::flops).value == 66.9e12);  // exact
  CHECK(*parse_quantity("15T", QuantityKind::count).value == 15e12);
  CHECK(*parse_quantity("7e9", QuantityKind::count).value == 7e9);
  CHECK(*parse_quantity("1.5e3 GB", QuantityKind::bytes).value == 1.5e12);
  CHECK_FALSE(parse_quantity("80", QuantityKind::bytes).value);
  CHECK_FALSE(parse_quantity("80 gib", QuantityKind::bytes).value);  // case matters: never guess
  CHECK_FALSE(parse_quantity("80 GB", QuantityKind::bandwidth).value);
  CHECK_FALSE(parse_quantity("GB", QuantityKind::bytes).value);
  CHECK_FALSE(parse_quantity("1e400 GB", QuantityKind::bytes).value);
  CHECK_FALSE(parse_quantity("", QuantityKind::count).value);
}

TEST_CASE("precedence: default < preset < plan file < --set, each with its origin", "[config]") {
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\nlayers = 16\n" + k_cluster + "[parallel]\ntp = 2\n";
  const config::LoadedPlan p = load_text(plan, {"parallel.tp=4"});
  CHECK(p.input.model.layers == 16);
  CHECK(origin_of(p, "model.layers") == "test.toml:3:10");
  CHECK(p.input.model.hidden == 4096);
  CHECK(origin_of(p, "model.hidden") == "configs/models/llama-2-7b.toml:6:10");
  CHECK(p.input.parallel.tp == 4);
  CHECK(origin_of(p, "parallel.tp") == "--set parallel.tp=4");
  CHECK(origin_of(p, "training.optimizer") == "default");
  CHECK(origin_of(p, "parallel.dp") == "derived");
  CHECK(origin_of(p, "cluster.gpu_memory") == "configs/gpus/h100-sxm5-80gb.toml:4:14");
}

TEST_CASE("set overrides are TOML, or strings when TOML cannot read them", "[config]") {
  const config::LoadedPlan p =
      load_text("[model]\nparams = 7e9\n",
                {"cluster.gpu=a100-sxm4-80gb", "cluster.gpu_memory=40 GiB", "training.tokens=1T",
                 "model.params=\"2B\"", "parallel.zero=\"fsdp\""});
  CHECK(p.input.cluster.gpu.memory_bytes == 40LL * 1024 * 1024 * 1024);
  CHECK(p.input.training.tokens == 1e12);
  CHECK(p.input.model.params == 2e9);
  CHECK(p.input.parallel.zero == 3);
}

TEST_CASE("dp and nodes are derived from each other", "[config]") {
  SECTION("no dp: the world of the cluster") {
    const auto p = load_text(
        "[model]\npreset = \"llama-2-7b\"\n[parallel]\ntp = 2\n[cluster]\n"
        "gpu = \"h100-sxm5-80gb\"\nnodes = 4\n");
    CHECK(p.input.parallel.dp == 16);
  }
  SECTION("dp given, nodes derived") {
    const auto p =
        load_text("[model]\npreset = \"llama-2-7b\"\n[parallel]\ntp = 8\ndp = 4\n" + k_cluster);
    CHECK(p.input.cluster.nodes == 4);
  }
  SECTION("fewer GPUs than a node") {
    const auto p = load_text("[model]\nparams = 8e9\n[parallel]\ndp = 4\n" + k_cluster);
    CHECK(p.input.cluster.nodes == 1);
    CHECK(p.input.cluster.gpus_per_node == 4);
  }
  SECTION("global batch defaults to one micro-batch per rank") {
    const auto p = load_text("[model]\nparams = 8e9\n[training]\nmicro_batch = 2\n" + k_cluster);
    CHECK(p.input.training.global_batch == 16);
  }
}

TEST_CASE("grad_dtype follows the framework's conventions unless given", "[config]") {
  CHECK(load_text("[model]\nparams = 1e9\n[training]\nprecision = \"fp32\"\n" + k_cluster)
            .input.training.grad_dtype == DType::fp32);
  // PyTorch (the default) keeps fp32 gradients under mixed precision, FP8 included.
  CHECK(load_text("[model]\nparams = 1e9\n[training]\nprecision = \"fp8\"\n" + k_cluster)
            .input.training.grad_dtype == DType::fp32);
  CHECK(load_text("[model]\nparams = 1e9\n[training]\nprecision = \"bf16\"\n" + k_cluster)
            .input.training.grad_dtype == DType::fp32);
  // The source documents' convention: gradients in the weights' dtype, bf16 under FP8.
  CHECK(load_text("[model]\nparams = 1e9\n[training]\nframework = \"generic\"\n"
                  "precision = \"fp8\"\n" +
                  k_cluster)
            .input.training.grad_dtype == DType::bf16);
  // Pure 16-bit training (no master weights) keeps 16-bit gradients in every stack.
  CHECK(load_text("[model]\nparams = 1e9\n[training]\nmaster_weights = false\n" + k_cluster)
            .input.training.grad_dtype == DType::bf16);
  CHECK(load_text("[model]\nparams = 1e9\n[training]\ngrad_dtype = \"fp32\"\n" + k_cluster)
            .input.training.grad_dtype == DType::fp32);
}

TEST_CASE("lora_targets all-linear expands to every matrix", "[config]") {
  const auto p = load_text(
      "[model]\npreset = \"llama-2-7b\"\n[training]\nfinetune = \"lora\"\n"
      "lora_targets = [\"all-linear\", \"q_proj\"]\n" +
      k_cluster);
  CHECK(p.input.training.lora_targets.size() == 7);
}

TEST_CASE("every key-table choice names an enum value", "[config]") {
  // The key table and the enum names are two lists; they must agree.
  for (const config::KeySpec& k : config::key_table()) {
    if (k.name == "precision" || k.name == "grad_dtype" || k.name == "optimizer_dtype") {
      for (auto c : k.choices)
        // "fp4" is the 4-bit recipe's precision: fp8's dtype with training.recipe nvfp4.
        if (c != "fp4") CHECK(to_string(from_string(c, DType::int8)) == c);
    }
    if (k.name == "optimizer")
      for (auto c : k.choices) CHECK(to_string(from_string(c, Optimizer::adamw)) == c);
    if (k.name == "recipe")
      for (auto c : k.choices) CHECK(to_string(from_string(c, Recipe::none)) == c);
    if (k.name == "schedule")
      for (auto c : k.choices) CHECK(to_string(from_string(c, Schedule::gpipe)) == c);
    if (k.name == "recompute")
      for (auto c : k.choices) CHECK(to_string(from_string(c, Recompute::none)) == c);
    if (k.name == "offload")
      for (auto c : k.choices) CHECK(to_string(from_string(c, Offload::none)) == c);
    if (k.name == "ffn_act")
      for (auto c : k.choices) CHECK(to_string(from_string(c, FfnAct::swiglu)) == c);
  }
}

TEST_CASE("Hugging Face config.json files give the exact parameter counts", "[config][hf]") {
  struct Case {
    const char* file;
    double params;  // exact published count
  };
  const Case cases[] = {
      {"hf/llama-2-7b.json", 6738415616},     // PEFT "all params: 6,738,415,616"
      {"hf/qwen2.5-7b.json", 7615616512},     // safetensors metadata
      {"hf/mistral-7b.json", 7241732096},     // public load logs
      {"hf/mixtral-8x7b.json", 46702792704},  // model card 46.7B
      {"hf/gpt2.json", 124439808},            // GPT-2 small, HF load count
      {"hf/pythia-1.4b.json", 1414647808},    // Biderman et al. 2023, Table 1
      {"hf/bloom-560m.json", 559214592},      // BLOOM-560m model card
      // tests/data/hf/SOURCES.md: the Hugging Face safetensors totals of these checkpoints.
      {"hf/qwen3-8b.json", 8190735360},            // qwen3: QK-norm per head
      {"hf/qwen3-30b-a3b.json", 30532122624},      // qwen3_moe: 128 experts, 8 active
      {"hf/qwen1.5-moe-a2.7b.json", 14315784192},  // qwen2_moe: gated shared expert
      {"hf/deepseek-v3.json", 671026419200},       // deepseek_v3: MLA, 3 dense + 58 MoE layers
      {"hf/deepseek-v2-lite.json", 15706484224},   // deepseek_v2: MLA without a query bottleneck
      {"hf/gemma-7b.json", 8537680896},            // gemma: head_dim 256, tied
      {"hf/gemma-3-1b.json", 999885952},           // gemma3_text: 4 norms, QK-norm
      {"hf/phi-2.json", 2779683840},               // phi: biases, LM-head bias, one LayerNorm
      {"hf/phi-3-mini-4k.json", 3821079552},       // phi3
      {"hf/starcoder2-3b.json", 3030371328},       // starcoder2: biases, GELU, LayerNorm, tied
      {"hf/falcon-7b.json", 6921720704},           // falcon: multi-query, parallel block
      {"hf/olmo-1b.json", 1176764416},             // olmo: LayerNorm without parameters
      {"hf/olmo-2-7b.json", 7298617344},           // olmo2: QK-norm over all heads
  };
  for (const Case& c : cases) {
    INFO(c.file);
    // 1,024 tokens: within GPT-2's learned positions (n_positions).
    const auto p = load_text("[model]\nhf_config = \"" + std::string(c.file) + "\"\n" + k_cluster +
                             "[training]\nseq_len = 1024\n");
    CHECK(total_params(p.input.model) == c.params);
  }
  // Active parameters of the MoE models (model cards: 37B, 3.3B, 2.7B).
  auto active = [&](const char* file) {
    return active_params(
        load_text("[model]\nhf_config = \"" + std::string(file) + "\"\n" + k_cluster).input.model);
  };
  CHECK(active("hf/deepseek-v3.json") == 37552297472.0);
  // Falcon: under multi_query (and not new_decoder_architecture) transformers' FalconAttention
  // uses one KV head whatever num_kv_heads says (modeling_falcon.py); without multi_query the
  // key is the KV head count.
  const auto saved = load_text("[model]\nhf_config = \"hf/falcon-7b-saved.json\"\n" + k_cluster);
  CHECK(saved.input.model.kv_heads == 1);
  CHECK(total_params(saved.input.model) == 6921720704);
  CHECK(active("hf/qwen3-30b-a3b.json") == 3353032704.0);
  CHECK(active("hf/qwen1.5-moe-a2.7b.json") == Approx(2.69e9).epsilon(0.01));
  // GPT-J: the HF model's own count (no exact published one: its README's 6,053,381,344
  // counts the padded embedding of the JAX checkpoint).
  CHECK(total_params(
            load_text("[model]\nhf_config = \"hf/gpt-j-6b.json\"\n" + k_cluster).input.model) ==
        6050882784.0);
  // Gemma 3 4B: the language model of text_config, with Gemma3TextConfig's defaults for what
  // the file leaves out; the vision tower is named as not counted.
  const auto g4 = load_text("[model]\nhf_config = \"hf/gemma-3-4b.json\"\n" + k_cluster);
  CHECK(g4.input.model.hidden == 2560);
  CHECK(g4.input.model.heads == 8);
  CHECK(g4.input.model.kv_heads == 4);
  CHECK(g4.input.model.vocab == 262208);
  CHECK(total_params(g4.input.model) == 3880263168.0);
  bool vision_named = false;
  for (const std::string& w : g4.warnings)
    vision_named = vision_named || w.find("vision tower is not counted") != std::string::npos;
  CHECK(vision_named);
  // Llama 4 (tests/data/hf/SOURCES.md): the published safetensors totals less the vision
  // encoder and projector, 871,932,416, counted from the vision config.
  const auto scout = load_text("[model]\nhf_config = \"hf/llama-4-scout.json\"\n" + k_cluster);
  CHECK(total_params(scout.input.model) == 108641793536.0 - 871932416.0);
  CHECK(active_params(scout.input.model) == 17172894720.0);  // "17B active"
  CHECK(scout.input.model.moe_every == 1);
  CHECK(scout.input.model.attention_chunk == 8192);
  CHECK(scout.input.model.global_every == 4);  // no_rope_layers: every 4th layer is global
  const auto maverick =
      load_text("[model]\nhf_config = \"hf/llama-4-maverick.json\"\n" + k_cluster);
  CHECK(total_params(maverick.input.model) == 401583781376.0 - 871932416.0);
  CHECK(active_params(maverick.input.model) == 17184691200.0);
  CHECK(maverick.input.model.moe_every == 2);  // interleave_moe_layer_step
  CHECK(moe_layers(maverick.input.model) == 24);
  CHECK(maverick.input.model.ffn == 16384);       // the dense layers' intermediate_size_mlp
  CHECK(maverick.input.model.global_every == 4);  // Llama4TextConfig's no_rope_layer_interval
  const auto llama = load_text("[model]\nhf_config = \"hf/llama-2-7b.json\"\n" + k_cluster);
  CHECK(llama.input.model.name == "meta-llama/Llama-2-7b-hf");
  std::string origin;
  for (const auto& r : llama.resolved)
    if (r.key == "model.hidden") origin = r.origin.to_string();
  CHECK(origin.find("hf/llama-2-7b.json#/hidden_size") != std::string::npos);
}

TEST_CASE("hf_config may name a Hugging Face snapshot directory", "[config][hf]") {
  const auto snapshot = load_text("[model]\nhf_config = \"hf/llama-2-7b-snapshot\"\n" + k_cluster);
  CHECK(total_params(snapshot.input.model) == 6738415616);
  std::string origin;
  for (const auto& r : snapshot.resolved)
    if (r.key == "model.hidden") origin = r.origin.to_string();
  CHECK(origin.find("hf/llama-2-7b-snapshot/config.json#/hidden_size") != std::string::npos);
  // A directory without a config.json says which file it looked for.
  const auto empty = load_errors("[model]\nhf_config = \"hf\"\n" + k_cluster);
  REQUIRE(empty.size() == 1);
  CHECK(empty[0].find("hf/config.json") != std::string::npos);
}

TEST_CASE("plan - reads the plan from stdin, bounded like a file", "[config][cli]") {
  const std::string bin = std::string("\"") + TRAINLEDGER_BINARY + "\"";
  const std::string plan = test::source_path("configs/plans/llama-2-7b-qlora.toml");
  int status = std::system((bin + " plan - < \"" + plan + "\" > /dev/null 2>&1").c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  status = std::system((bin + " check - < \"" + plan + "\" > /dev/null 2>&1").c_str());
  CHECK(WEXITSTATUS(status) == 0);
  // Two megabytes of input: refused, exit 2.
  status = std::system(("head -c 2000000 /dev/zero | " + bin + " plan - > /dev/null 2>&1").c_str());
  CHECK(WEXITSTATUS(status) == 2);
}

TEST_CASE("config.json problems are named precisely", "[config][hf]") {
  // An architecture the planner does not read is an error naming it, never a dense Llama.
  const auto unknown = load_errors("[model]\nhf_config = \"hf/mamba-130m.json\"\n" + k_cluster);
  REQUIRE(unknown.size() == 1);
  CHECK(unknown[0].find("mamba-130m.json#/model_type: model_type \"mamba\" is not a supported "
                        "architecture (supported: llama, mistral, mixtral,") != std::string::npos);
  CHECK(unknown[0].find("model.hf_arch = \"llama\"") != std::string::npos);
  // A key that changes the architecture and the type's reader does not read: named.
  const auto moe = load_errors("[model]\nhf_config = \"hf/moe-in-llama.json\"\n" + k_cluster);
  REQUIRE(moe.size() == 1);
  CHECK(moe[0].find("moe-in-llama.json#/num_experts: model_type \"llama\": num_experts = 8 "
                    "changes the architecture") != std::string::npos);
  // model.hf_arch reads an unlisted type as a Llama-style decoder, and only then.
  auto any_error = [](const std::vector<std::string>& errors, const std::string& text) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.find(text) != std::string::npos; });
  };
  CHECK(any_error(
      load_errors("[model]\nhf_config = \"hf/qwen3-8b.json\"\nhf_arch = \"llama\"\n" + k_cluster),
      "model_type is \"qwen3\", which the planner reads itself: drop model.hf_arch"));
  CHECK(any_error(load_errors("[model]\nhf_arch = \"llama\"\nlayers = 2\n" + k_cluster),
                  "model.hf_arch says how to read model.hf_config"));
  const auto truncated = load_errors("[model]\nhf_config = \"hf/truncated.json\"\n" + k_cluster);
  REQUIRE(truncated.size() == 1);
  // Located at line and column, without echoing the file's bytes or the parser's text.
  CHECK(truncated[0] == "trainledger: error: " + test::source_path("tests/data") +
                            "/hf/truncated.json:2:27: invalid JSON (read for model.hf_config at "
                            "test.toml:2:13)");
  const auto missing = load_errors("[model]\nhf_config = \"hf/nope.json\"\n" + k_cluster);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].find("test.toml:2:13: model.hf_config: cannot read") != std::string::npos);
  const auto both =
      load_errors("[model]\npreset = \"llama-2-7b\"\nhf_config = \"hf/gpt2.json\"\n" + k_cluster);
  REQUIRE(both.size() == 1);
  CHECK(both[0] ==
        "trainledger: error: test.toml:3:13: model: give model.preset or "
        "model.hf_config, not both");
}

TEST_CASE("the embedded default plan loads and every example plan is valid", "[config]") {
  CHECK_NOTHROW(config::load_default_plan({}));
  for (const char* plan : {"configs/plans/default.toml", "configs/plans/llama-2-7b-qlora.toml",
                           "configs/plans/llama-3.1-8b-fsdp.toml"}) {
    INFO(plan);
    const auto p = config::load_plan_file(test::source_path(plan), {});
    test::plan_checked(p.input);
  }
}

TEST_CASE("docs/config.md lists the key table as generated", "[config][docs]") {
  const std::string doc = test::read_file(test::source_path("docs/config.md"));
  CHECK(doc.find(config::keys_markdown()) != std::string::npos);
}
