// Training configs chosen by whoever opens a pull request (`trainledger check plans/*.toml` as a
// CI gate) imported safely: 64-bit arithmetic checked, expansions and JSON documents bounded in
// work, every value an importer reads mapped, listed as ignored or refused with a located error,
// and nothing of the file's raw bytes in a message. The small hostile inputs are the fuzz seeds
// tests/fuzz/inputs/import-*; the large ones are made here.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "resolve.hpp"
#include "trainledger/config.hpp"

using namespace trainledger;

namespace {

struct Imported {
  config::SettingMap settings;
  std::string errors;    // every diagnostic, one a line, as the CLI prints them
  std::string warnings;  // every warning, one a line
  std::size_t error_count = 0;
  double seconds = 0;
};

Imported import(const std::string& kind, const std::string& text,
                const std::string& path = "job.cfg") {
  Imported r;
  std::vector<config::Diagnostic> errors;
  std::vector<std::string> warnings;
  const auto t0 = std::chrono::steady_clock::now();
  r.settings = config::import_text(kind, text, path, config::Origin{"plan.toml", 3, 1, "file"},
                                   errors, warnings);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& d : errors) r.errors += d.to_string() + "\n";
  for (const auto& w : warnings) r.warnings += w + "\n";
  r.error_count = errors.size();
  return r;
}

// A fuzz seed's text without its first byte (the kind it is imported as).
std::string seed(const std::string& name) {
  return test::read_file(test::source_path("tests/fuzz/inputs/" + name)).substr(1);
}

std::int64_t integer_of(const Imported& r, const std::string& key) {
  return std::get<std::int64_t>(r.settings.at(key).value);
}

std::string text_of(const Imported& r, const std::string& key) {
  return std::get<std::string>(r.settings.at(key).value);
}

bool has_raw_control(const std::string& s) {
  for (char c : s)
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f ||
        static_cast<unsigned char>(c) == 0xff)
      return true;
  return false;
}

// Each import timed here takes a few hundred milliseconds at most on the sanitizer build (2-3
// times slower than a release one), and took from 10 s to half an hour before its bound: the
// limit leaves room for a loaded CI machine.
constexpr double k_fast = 2.0;

}  // namespace

TEST_CASE("hostile imports: Megatron-LM arithmetic and degrees that overflow are located errors",
          "[hostile][imports]") {
  SECTION("p × per wraps to 0 in 64 bits") {
    const auto r = import("megatron",
                          "torchrun pretrain_gpt.py --num-layers 32 "
                          "--pipeline-model-parallel-size 4611686018427387904 "
                          "--num-layers-per-virtual-pipeline-stage 4\n",
                          "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("a.sh:1:1: --pipeline-model-parallel-size "
                                         "4611686018427387904: out of range (1 to 65536)"));
    CHECK(r.settings.empty());
  }
  SECTION("INT64_MIN / -1 and % -1, on one line with ;") {
    const auto r = import("megatron",
                          "A=-9223372036854775808; B=-1; X=$((A/B)); Y=$((A % B))\n"
                          "torchrun pretrain_gpt.py --tensor-model-parallel-size $X\n"
                          "torchrun pretrain_gpt.py --pipeline-model-parallel-size $Y\n",
                          "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("a.sh:2:1: --tensor-model-parallel-size $((A/B)): "
                                         "$((A/B)): overflows a 64-bit integer"));
    CHECK_THAT(r.errors, Catch::Contains("a.sh:3:1: --pipeline-model-parallel-size "
                                         "$((A % B)): $((A % B)): overflows a 64-bit integer"));
  }
  SECTION("the seed: every overflow and division by zero") {
    const auto r = import("megatron", seed("import-megatron-overflow"), "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("a.sh:8:1: --pipeline-model-parallel-size "
                                         "4611686018427387904: out of range"));
    CHECK_THAT(r.errors, Catch::Contains("a.sh:10:1: --expert-model-parallel-size "
                                         "$((9223372036854775807+1)): "
                                         "$((9223372036854775807+1)): overflows a 64-bit integer"));
    CHECK_THAT(r.errors, Catch::Contains("a.sh:10:1: --micro-batch-size $((4/0)): $((4/0)): "
                                         "division by zero"));
    CHECK_THAT(r.errors,
               Catch::Contains("a.sh:11:1: --global-batch-size $((-A)): $((-A)): overflows"));
    CHECK_THAT(r.errors, Catch::Contains("a.sh:11:1: --seq-length 99999999999999999999: out of "
                                         "range"));
    CHECK_THAT(r.errors, Catch::Contains("modulo by zero"));
    CHECK_THAT(r.errors, Catch::Contains("uses **, not evaluated"));
    CHECK(r.settings.empty());
  }
  SECTION("checked integers and bounds of each flag") {
    auto one = [](const std::string& args) {
      return import("megatron", "torchrun pretrain_gpt.py " + args + "\n", "a.sh").errors;
    };
    CHECK_THAT(one("--tensor-model-parallel-size 0"), Catch::Contains("out of range (1 to 65536)"));
    CHECK_THAT(one("--tensor-model-parallel-size 4x"), Catch::Contains("4x: expected an integer"));
    CHECK_THAT(one("--num-layers -5"), Catch::Contains("--num-layers -5: out of range"));
    CHECK_THAT(one("--virtual-pipeline-model-parallel-size 99999999999"),
               Catch::Contains("out of range (1 to 1000)"));
    CHECK_THAT(one("--num-layers 32 --pipeline-model-parallel-size 4 "
                   "--num-layers-per-virtual-pipeline-stage 9223372036854775807"),
               Catch::Contains("--num-layers-per-virtual-pipeline-stage 9223372036854775807: out "
                               "of range"));
    CHECK_THAT(one("--moe-expert-capacity-factor nan"), Catch::Contains("expected a number"));
    CHECK_THAT(one("--moe-expert-capacity-factor 1.5x"), Catch::Contains("expected a number"));
    CHECK_THAT(one("--normalization RMSNrom"), Catch::Contains("expected LayerNorm or RMSNorm"));
    CHECK_THAT(one("--fp8-format e5m2"), Catch::Contains("expected e4m3 or hybrid"));
    CHECK_THAT(one("--attention-backend flsh"), Catch::Contains("expected flash, fused"));
    CHECK_THAT(one("--recompute-method unifrom"), Catch::Contains("expected uniform or block"));
    CHECK_THAT(one("--bf16=false"), Catch::Contains("--bf16=false: --bf16 takes no value"));
    CHECK_THAT(one("--virtual-pipeline-model-parallel-size 2 --num-layers 32 "
                   "--pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4"),
               Catch::Contains("give one of them"));
  }
  SECTION("what the reader evaluates still reads") {
    const auto r = import("megatron",
                          "TP=2; PP=$(( (TP * 4 - 4) / 2 )); CP=${UNSET:-${ALSO_UNSET:-4}}\n"
                          "CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun pretrain_gpt.py "
                          "--tensor-model-parallel-size $TP --pipeline-model-parallel-size "
                          "$PP --context-parallel-size $CP --num-layers $(( -(-8) * 4 % 33 )) "
                          "--attention-backend unfused --nnodes 1:4 --nproc_per_node gpu\n",
                          "a.sh");
    INFO(r.errors);
    REQUIRE(r.error_count == 0);
    CHECK(integer_of(r, "parallel.tp") == 2);
    CHECK(integer_of(r, "parallel.pp") == 2);
    CHECK(integer_of(r, "parallel.cp") == 4);
    CHECK(integer_of(r, "model.layers") == 32);
    CHECK(text_of(r, "training.attention") == "eager");
    CHECK_THAT(r.warnings, Catch::Contains("--nnodes 1:4 (an elastic range of nodes"));
    CHECK_THAT(r.warnings, Catch::Contains("--nproc_per_node gpu (torchrun counts"));
  }
}

TEST_CASE("hostile imports: Megatron-LM expansions are bounded in size and work",
          "[hostile][imports]") {
  SECTION("A=$A$A doubling stops at the first value over 16 KiB (70 KB script: 35 s before)") {
    std::string text = "A=x\n";
    for (int i = 0; i < 10000; ++i) text += "A=$A$A\n";
    const auto r = import("megatron", text, "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("a.sh:16:1: a value of the script expands beyond 16 KiB"));
    CHECK(r.error_count == 1);
    CHECK(r.seconds < k_fast);
    // The seed, with the doubling on its first lines.
    const auto s = import("megatron", seed("import-megatron-doubling"), "a.sh");
    CHECK_THAT(s.errors, Catch::Contains("a.sh:16:1: a value of the script expands beyond 16 KiB"));
  }
  // Each of these is close to the 4 MiB file cap.
  const std::size_t cap = 4u << 20;
  SECTION("4 MiB of doubling lines") {
    std::string text = "A=x\n";
    while (text.size() < cap - 16) text += "A=$A$A\n";
    const auto r = import("megatron", text, "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("expands beyond 16 KiB"));
    CHECK(r.seconds < k_fast);
  }
  SECTION("4 MiB of references to a 16 KiB value: the 16 MiB budget of the whole script") {
    std::string text = "V=" + std::string(16 * 1024 - 1, 'v') + "\n";
    while (text.size() < cap - 16) text += "X=$V\n";
    const auto r = import("megatron", text, "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("expand to more than 16 MiB in all"));
    CHECK(r.seconds < k_fast);
  }
  SECTION("4 MiB of substitutions of an empty variable: the count of substitutions") {
    std::string text = "E=\n";
    std::string line = "X=";
    for (int i = 0; i < 1000; ++i) line += "$E";
    while (text.size() < cap - line.size() - 2) text += line + "\n";
    const auto r = import("megatron", text, "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("substituted more than 1,000,000 times"));
    CHECK(r.seconds < k_fast);
  }
  SECTION("4 MiB of distinct unknown flags: the word bound, no quadratic look-up") {
    std::string text = "torchrun pretrain_gpt.py";
    for (int i = 0; text.size() < cap - 64; ++i) text += " --f" + std::to_string(i);
    const auto r = import("megatron", text + "\n", "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("more than 200,000 words"));
    CHECK(r.seconds < k_fast);
    // Under the bound: each ignored once, the warning's list bounded.
    std::string fewer = "torchrun pretrain_gpt.py";
    for (int i = 0; i < 150000; ++i) fewer += " --f" + std::to_string(i);
    const auto w = import("megatron", fewer + "\n", "a.sh");
    CHECK(w.error_count == 0);
    CHECK_THAT(w.warnings, Catch::Contains("and 149800 more"));
    CHECK(w.warnings.size() < 8000);
    CHECK(w.seconds < k_fast);
  }
  SECTION("4 MiB of nested defaults and parentheses") {
    std::string nested = "X=";
    while (nested.size() < cap / 2) nested += "${U:-";
    auto r = import("megatron", nested + "1\ntorchrun x.py --seq-length $X\n", "a.sh");
    CHECK(r.error_count >= 1);
    CHECK(r.seconds < k_fast);
    std::string parens = "X=$((" + std::string(cap / 2, '(') + "1" + std::string(cap / 2, ')') +
                         "))\ntorchrun x.py --seq-length $X\n";
    r = import("megatron", parens, "a.sh");
    CHECK(r.error_count >= 1);
    CHECK(r.seconds < k_fast);
    std::string signs = "X=$((" + std::string(16000, '-') + "1))\ntorchrun x.py --seq-length $X\n";
    r = import("megatron", signs, "a.sh");
    CHECK_THAT(r.errors, Catch::Contains("--seq-length"));
    CHECK(r.seconds < k_fast);
  }
}

TEST_CASE("hostile imports: JSON documents are bounded and a NUL byte is an error",
          "[hostile][imports]") {
  SECTION("1.9 M values under 4 MiB: refused before the tree is built (10 s, 500 MB before)") {
    std::string text = "{\"zero_optimization\": {\"stage\": 1}, \"x\": [1";
    while (text.size() < (4u << 20) - 16) text += ",1";
    text += "]}";
    const auto r = import("deepspeed", text, "ds.json");
    CHECK_THAT(r.errors, Catch::Contains("ds.json:1:"));
    CHECK_THAT(r.errors, Catch::Contains("invalid JSON: more than 100,000 values"));
    CHECK(r.seconds < k_fast);
    // As deep as allowed, with empty containers: the same bound.
    std::string empties = "{\"x\": [[]";
    while (empties.size() < (4u << 20) - 16) empties += ",[]";
    CHECK_THAT(import("deepspeed", empties + "]}", "ds.json").errors,
               Catch::Contains("more than 100,000 values"));
  }
  SECTION("long keys do not grow every origin under them") {
    std::string text = "{\"" + std::string(64 * 1024, 'k') + "\": [1";
    for (int i = 0; i < 90000; ++i) text += ",1";
    text += "]}";
    const auto r = import("deepspeed", text, "ds.json");
    CHECK(r.error_count == 0);
    CHECK(r.seconds < k_fast);
    CHECK(r.warnings.size() < 1000);
  }
  SECTION("a NUL byte: an error at its place, not the end of the document") {
    const auto r = import("deepspeed", seed("import-deepspeed-nul"), "ds.json");
    CHECK_THAT(r.errors, Catch::Contains("ds.json:1:38: invalid JSON: a NUL byte"));
    CHECK(r.settings.empty());
    const auto j = import("deepspeed", std::string("{\"stage\": 1}\n\n  \0", 17), "ds.json");
    CHECK_THAT(j.errors, Catch::Contains("ds.json:3:3: invalid JSON: a NUL byte"));
  }
}

TEST_CASE("hostile imports: torchtitan values are read, listed or refused, never defaulted",
          "[hostile][imports]") {
  const auto r = import("torchtitan", seed("import-torchtitan-typos"), "job.toml");
  INFO(r.errors);
  CHECK_THAT(r.errors, Catch::Contains("job.toml:2:30: parallelism.data_parallel_shard_degree = 0: "
                                       "expected -1 (every remaining rank) or a positive "
                                       "integer"));
  CHECK_THAT(r.errors, Catch::Contains("parallelism.tensor_parallel_degree = \"4\": expected a "
                                       "positive integer"));
  CHECK_THAT(r.errors, Catch::Contains("parallelism.pipeline_parallel_degree = -2"));
  CHECK_THAT(r.errors, Catch::Contains("parallelism.fsdp_reshard_after_forward = \"nevr\": "
                                       "expected \"default\", \"always\" or \"never\""));
  CHECK_THAT(r.errors, Catch::Contains("parallelism.pipeline_parallel_schedule = \"ZeroBubbl\": "
                                       "not a schedule"));
  CHECK_THAT(r.errors, Catch::Contains("training.mixed_precision_param = \"bfloat61\": expected"));
  CHECK_THAT(r.errors, Catch::Contains("training.global_batch: 0 must be at least 1"));
  CHECK_THAT(r.errors, Catch::Contains("activation_checkpoint.mode = \"selectiv\": expected"));
  CHECK_THAT(r.errors, Catch::Contains("model.converters = \"float8\": expected a list"));
  CHECK_THAT(r.errors, Catch::Contains("model.flavor = 8: expected a string"));
  CHECK(r.error_count == 10);

  auto ac = [](const std::string& option) {
    return import(
        "torchtitan",
        "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = " + option + "\n",
        "job.toml");
  };
  CHECK_THAT(ac("\"2x\"").errors,
             Catch::Contains("job.toml:3:23: activation_checkpoint.selective_ac_option = \"2x\": "
                             "expected \"op\" or a positive integer"));
  CHECK_THAT(ac("\"0\"").errors, Catch::Contains("expected \"op\" or a positive integer"));
  CHECK_THAT(ac("2").errors, Catch::Contains("selective_ac_option = 2: expected"));
  CHECK_THAT(ac("\"99999999999999999999\"").errors, Catch::Contains("expected \"op\""));
  const auto every2 = ac("\"2\"");
  REQUIRE(every2.error_count == 0);
  CHECK(std::get<double>(every2.settings.at("training.recompute_layers").value) == 0.5);
  // Keys beside the ones read are listed, not dropped.
  const auto listed = import("torchtitan",
                             "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                             "hf_assets_path = \"x\"\n[compile]\nenable = true\n"
                             "components = [\"model\"]\n[quantize.linear.float8]\n"
                             "filter_fqns = [\"output\"]\n[training]\nglobal_batch_size = -1\n"
                             "mixed_precision_param = \"float16\"\n",
                             "job.toml");
  REQUIRE(listed.error_count == 0);
  CHECK(text_of(listed, "training.precision") == "fp16");
  CHECK_THAT(listed.warnings, Catch::Contains("model.hf_assets_path"));
  // compile.components without "loss": the eager loss.
  CHECK(text_of(listed, "training.loss") == "standard");
  CHECK_THAT(import("torchtitan", "[compile]\ncomponents = \"model\"\n", "job.toml").errors,
             Catch::Contains("job.toml:2:14: compile.components = \"model\": expected a list of "
                             "names"));
  CHECK_THAT(listed.warnings, Catch::Contains("quantize.linear.float8.filter_fqns"));
  CHECK_THAT(listed.warnings, Catch::Contains("training.global_batch_size = -1"));
}

TEST_CASE("hostile imports: DeepSpeed values are read, listed or refused, never defaulted",
          "[hostile][imports]") {
  const auto r = import("deepspeed", seed("import-deepspeed-typos"), "ds.json");
  INFO(r.errors);
  CHECK_THAT(r.errors, Catch::Contains("ds.json#/bf16/enabled: bf16.enabled: expected true or "
                                       "false, got a string (\"true\")"));
  CHECK_THAT(r.errors, Catch::Contains("ds.json#/zero_optimization/stage: "
                                       "zero_optimization.stage: expected 0, 1, 2 or 3"));
  CHECK_THAT(r.errors, Catch::Contains("zero_optimization.reduce_bucket_size: expected a "
                                       "positive whole number of elements, got \"5e8\""));
  CHECK_THAT(r.errors, Catch::Contains("ds.json#/zero_optimization/offload_optimizer/device: "
                                       "zero_optimization.offload_optimizer.device = \"nvmee\": "
                                       "expected \"cpu\", \"nvme\" or \"none\""));
  CHECK_THAT(r.errors, Catch::Contains("zero_optimization.offload_param.device: expected"));
  CHECK_THAT(r.errors, Catch::Contains("optimizer.type: expected a string, got an integer"));
  CHECK(r.error_count == 6);

  // "auto" is the Hugging Face Trainer's to fill in: listed, like every "auto" of the file.
  const auto hf = import("deepspeed",
                         "{\"bf16\": {\"enabled\": \"auto\"}, \"fp16\": {\"enabled\": false}, "
                         "\"train_batch_size\": \"auto\"}",
                         "ds.json");
  REQUIRE(hf.error_count == 0);
  CHECK(hf.settings.count("training.precision") == 0);
  CHECK_THAT(hf.warnings, Catch::Contains("bf16.enabled (\"auto\": the Hugging Face Trainer"));

  auto one = [](const std::string& json) { return import("deepspeed", json, "ds.json"); };
  CHECK_THAT(one("{\"bf16\": true}").errors, Catch::Contains("bf16: expected an object"));
  CHECK_THAT(one("{\"bf16\": {\"enabled\": 1}}").errors, Catch::Contains("expected true or false"));
  CHECK_THAT(one("{\"bf16\": {\"enabled\": true}, \"fp16\": {\"enabled\": true}}").errors,
             Catch::Contains("bf16 and fp16 are both enabled"));
  CHECK_THAT(one("{\"zero_optimization\": 3}").errors,
             Catch::Contains("zero_optimization: expected an object"));
  CHECK_THAT(one("{\"train_micro_batch_size_per_gpu\": \"4\"}").errors,
             Catch::Contains("training.micro_batch: expected"));
  CHECK_THAT(one("{\"gradient_accumulation_steps\": 0}").errors,
             Catch::Contains("ds.json#/gradient_accumulation_steps: gradient_accumulation_steps "
                             "= 0: must be at least 1"));
  // DeepSpeed's older section name, and offload whatever the order of its keys.
  const auto old =
      one("{\"bfloat16\": {\"enabled\": true}, \"zero_optimization\": {\"stage\": 3, "
          "\"offload_param\": {\"device\": \"cpu\"}, \"offload_optimizer\": "
          "{\"device\": \"cpu\", \"pin_memory\": true}}}");
  REQUIRE(old.error_count == 0);
  CHECK(text_of(old, "training.precision") == "bf16");
  CHECK(text_of(old, "parallel.offload") == "optimizer+params");
  CHECK_THAT(old.warnings, Catch::Contains("zero_optimization.offload_optimizer.pin_memory"));
}

TEST_CASE("hostile imports: messages and warnings never echo raw bytes of the file",
          "[hostile][imports]") {
  const std::string evil = "\x1b[2J\x1b]0;owned\x07\xff\xfe" + std::string(500, 'z');
  SECTION("torchtitan") {
    // TOML holds no raw control characters or invalid UTF-8: its escapes make them.
    const std::string esc = "\\u001b[2J\\u001b]0;owned\\u0007\\u009b" + std::string(500, 'z');
    const auto r = import("torchtitan",
                          "[activation_checkpoint]\nmode = \"" + esc +
                              "\"\n[parallelism]\n"
                              "tensor_parallel_degree = \"" +
                              esc + "\"\n[\"" + esc + "\"]\nx = 1\n",
                          "job.toml");
    INFO(r.errors);
    CHECK(r.error_count == 2);
    CHECK_FALSE(has_raw_control(r.errors));
    CHECK_FALSE(has_raw_control(r.warnings));
    CHECK_THAT(r.errors, Catch::Contains("\\x1B[2J"));
    CHECK(r.errors.size() < 800);
    CHECK(r.warnings.size() < 400);
  }
  SECTION("Megatron-LM") {
    const auto r = import(
        "megatron",
        "torchrun x.py --normalization " + evil + " --" + evil + " 1 --num-layers " + evil + "\n",
        "a.sh");
    CHECK(r.error_count == 2);
    CHECK_FALSE(has_raw_control(r.errors));
    CHECK_FALSE(has_raw_control(r.warnings));
    CHECK(r.errors.size() < 800);
    CHECK(r.warnings.size() < 400);
  }
  SECTION("DeepSpeed") {
    const auto r = import("deepspeed",
                          "{\"bf16\": {\"enabled\": \"\\u001b[2J" + std::string(500, 'z') +
                              "\"}, \"\\u001b]0;x\\u0007\": 1, \"optimizer\": {\"type\": "
                              "\"\\u001b[31m\"}}",
                          "ds.json");
    CHECK(r.error_count == 1);
    CHECK_FALSE(has_raw_control(r.errors));
    CHECK_FALSE(has_raw_control(r.warnings));
    CHECK(r.errors.size() < 400);
  }
}

TEST_CASE("hostile imports: the CLI exits 2 with the located message", "[hostile][imports][cli]") {
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-hostile-imports";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "plan.toml") << "[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu = "
                                      "\"h100-sxm5-80gb\"\n[import]\nmegatron = \"train.sh\"\n";
  std::ofstream(dir / "train.sh") << "A=-9223372036854775808\nB=-1\nX=$((A/B))\n"
                                     "torchrun pretrain_gpt.py --tensor-model-parallel-size $X\n";
  const std::string message =
      "train.sh:4:1: --tensor-model-parallel-size $((A/B)): $((A/B)): overflows a 64-bit "
      "integer";
  const auto p = test::run_cli({"plan", (dir / "plan.toml").string()});
  CHECK(p.code == 2);
  CHECK(p.out.empty());
  CHECK_THAT(p.err, Catch::Contains(message));
  const auto c = test::run_cli({"check", (dir / "plan.toml").string()});
  CHECK(c.code == 2);
  CHECK_THAT(c.err, Catch::Contains(message));
  std::filesystem::remove_all(dir);
}
