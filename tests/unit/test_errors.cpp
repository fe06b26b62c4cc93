// Bad input gets a located, specific message (asserted word for word) and no plan.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "helpers.hpp"

using trainledger::test::load_errors;
using Errors = std::vector<std::string>;

namespace {

const std::string k_ok_cluster = "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
const std::string k_ok_model = "[model]\npreset = \"llama-2-7b\"\n";

}  // namespace

TEST_CASE("unknown keys and sections get a did-you-mean", "[errors]") {
  CHECK(load_errors(k_ok_model + "layrs = 3\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:3:1: unknown key model.layrs (did you mean "
               "\"layers\"?)"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[paralel]\ntp = 2\n") ==
        Errors{"trainledger: error: test.toml:5:2: unknown section [paralel] (did you mean "
               "\"parallel\"?)"});
  CHECK(load_errors("tp = 2\n" + k_ok_model + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:1:1: key \"tp\" is outside a section; keys belong "
               "under [model], [training], [parallel], [cluster], [checkpoint] or [rl]"});
  CHECK(load_errors(k_ok_model + "zzzzzz = 1\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:3:1: unknown key model.zzzzzz"});
}

TEST_CASE("wrong types name the expected type and the value", "[errors]") {
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\nmicro_batch = \"four\"\n") ==
        Errors{"trainledger: error: test.toml:6:15: training.micro_batch: expected an integer, "
               "got a string (\"four\")"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\nmaster_weights = 1\n") ==
        Errors{"trainledger: error: test.toml:6:18: training.master_weights: expected true or "
               "false, got an integer (1)"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\nprecision = \"bf61\"\n") ==
        Errors{"trainledger: error: test.toml:6:13: training.precision: \"bf61\" is not one of "
               "\"fp32\", \"bf16\", \"fp16\", \"fp8\", \"fp4\" (did you mean \"bf16\"?)"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[parallel]\nzero = 5\n") ==
        Errors{"trainledger: error: test.toml:6:8: parallel.zero: 5 is not a ZeRO stage (0, 1, "
               "2, 3 or \"fsdp\")"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[parallel]\nstage_layers = [1, \"x\"]\n") ==
        Errors{"trainledger: error: test.toml:6:16: parallel.stage_layers: expected a list of "
               "integers, got an array ([1, \"x\"])"});
}

TEST_CASE("out-of-range values: zero, negative, NaN, absurd", "[errors]") {
  CHECK(load_errors("[model]\nlayers = 0\nhidden = 64\nheads = 4\nffn = 256\nvocab = 100\n" +
                    k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:2:10: model.layers: 0 must be at least 1"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\nseq_len = -4096\n") ==
        Errors{"trainledger: error: test.toml:6:11: training.seq_len: -4096 must be at least 1"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\ndropout = nan\n") ==
        Errors{"trainledger: error: test.toml:6:11: training.dropout: nan is not a finite "
               "number"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\nrecompute_layers = 1.5\n") ==
        Errors{"trainledger: error: test.toml:6:20: training.recompute_layers: 1.5 is out of "
               "range (at most 1)"});
  CHECK(load_errors("[model]\nlayers = 1000000\nhidden = 64\nheads = 4\nffn = 256\nvocab = "
                    "100\n" +
                    k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:2:10: model.layers: 1000000 is out of range (at "
               "most 100000)"});
  CHECK(load_errors("[model]\nparams = 1e30\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:2:10: model.params: 1e+30 is out of range (at "
               "most 1e+15)"});
  CHECK(load_errors("[model]\nparams = 7e9\n[cluster]\ngpu_memory = \"0 GiB\"\n") ==
        Errors{"trainledger: error: test.toml:4:14: cluster.gpu_memory: \"0 GiB\" must be at "
               "least 1"});
}

TEST_CASE("quantities need a known unit", "[errors]") {
  CHECK(load_errors("[model]\nparams = 7e9\n[cluster]\ngpu_memory = 80\n") ==
        Errors{"trainledger: error: test.toml:4:14: cluster.gpu_memory: 80 has no unit; write "
               "it as a string with one, e.g. \"80 GiB\" (units: B, kB, MB, GB, TB, PB (powers "
               "of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024))"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "inter_node_bandwidth = \"50 GiB/sec\"\n") ==
        Errors{"trainledger: error: test.toml:5:24: cluster.inter_node_bandwidth: unknown unit "
               "\"GiB/sec\" in \"50 GiB/sec\" (units: B/s, MB/s, GB/s, TB/s, MiB/s, GiB/s, "
               "TiB/s or bits: Mb/s, Gb/s, Tb/s)"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[checkpoint]\nrestart_time = \"five min\"\n") ==
        Errors{"trainledger: error: test.toml:6:16: checkpoint.restart_time: \"five min\" does "
               "not start with a number"});
}

TEST_CASE("cross-field rules point at the key that breaks them", "[errors]") {
  CHECK(
      load_errors(k_ok_model + k_ok_cluster +
                  "[parallel]\ntp = 3\npp = 1\ndp = 1\n"
                  "[training]\n") ==
      Errors{"trainledger: error: test.toml:6:6: parallel.tp (3) must divide model.heads (32)",
             "trainledger: error: test.toml:6:6: parallel.tp (3) must divide model.kv_heads (32), "
             "or be a multiple of it (kv heads replicated)",
             "trainledger: error: test.toml:6:6: parallel.tp (3) must divide the MLP width "
             "(11008)"});
  // An explicit world that tp × pp × cp × dp does not fill.
  CHECK(load_errors(k_ok_model + k_ok_cluster + "nodes = 2\n[parallel]\ndp = 4\n") ==
        Errors{"trainledger: error: test.toml:7:6: parallel: tp × pp × cp × dp = 1 × 1 × 1 × 4 = "
               "4 must equal the world size 16 (cluster.nodes 2 × cluster.gpus_per_node 8)"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[parallel]\npp = 3\n") ==
        Errors{"trainledger: error: test.toml:6:6: parallel: tp × pp × cp = 1 × 3 × 1 = 3 does "
               "not divide the world size 8 (cluster.nodes 1 × cluster.gpus_per_node 8)",
               "trainledger: error: test.toml:6:6: parallel.pp (3) must divide model.layers "
               "(32), or give parallel.stage_layers for an uneven split"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[parallel]\npp = 2\nstage_layers = [10, 20]\n") ==
        Errors{"trainledger: error: test.toml:7:16: parallel.stage_layers sums to 30 but "
               "model.layers is 32"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\nglobal_batch = 12\n") ==
        Errors{"trainledger: error: test.toml:6:16: training.global_batch (12) must be divisible "
               "by micro_batch × dp = 1 × 8 = 8"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[parallel]\nzero = 1\nzero_shard_size = 3\n") ==
        Errors{"trainledger: error: test.toml:7:19: parallel.zero_shard_size (3) must divide dp "
               "× cp = 8"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[parallel]\nep = 2\n") ==
        Errors{"trainledger: error: test.toml:6:6: parallel.ep (2) needs a MoE model "
               "(model.experts > 0)"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[parallel]\nvirtual_stages = 2\n") ==
        Errors{"trainledger: error: test.toml:6:18: parallel.virtual_stages (2) needs "
               "parallel.schedule = \"interleaved\""});
}

TEST_CASE("model rules: missing fields, kv heads, count-only conflicts", "[errors]") {
  CHECK(load_errors("[model]\nlayers = 2\nhidden = 64\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:1:2: model: missing heads, ffn, vocab (give them, "
               "or model.preset, model.hf_config or model.params)"});
  CHECK(load_errors("[model]\nlayers = 2\nhidden = 64\nheads = 4\nkv_heads = 3\nffn = 256\n"
                    "vocab = 100\n" +
                    k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:5:12: model.kv_heads (3) must divide model.heads "
               "(4)"});
  CHECK(load_errors(k_ok_model + "params = 7e9\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:3:10: model.params describes a count-only model, "
               "but model.layers gives an architecture; keep one of them"});
  CHECK(load_errors("[model]\npreset = \"llama-7b\"\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:2:10: model.preset: unknown preset \"llama-7b\" "
               "(did you mean \"llama-2-7b\"?); `trainledger models` lists them"});
}

TEST_CASE("cluster rules: a GPU is required", "[errors]") {
  CHECK(load_errors(k_ok_model) ==
        Errors{"trainledger: error: test.toml:1:1: cluster: no GPU memory: give cluster.gpu (a "
               "preset, see `trainledger gpus`) or cluster.gpu_memory"});
}

TEST_CASE("training rules: LoRA, QLoRA, trainable counts", "[errors]") {
  CHECK(load_errors("[model]\nparams = 7e9\n[training]\nfinetune = \"lora\"\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:4:12: LoRA and QLoRA need a model architecture, "
               "not model.params"});
  CHECK(load_errors(k_ok_model + k_ok_cluster +
                    "[training]\nfinetune = \"qlora\"\nprecision = \"fp32\"\n") ==
        Errors{"trainledger: error: test.toml:7:13: QLoRA computes in bf16 or fp16, not fp32"});
  CHECK(load_errors("[model]\nparams = 1e9\n[training]\ntrainable_params = 2e9\n" + k_ok_cluster) ==
        Errors{"trainledger: error: test.toml:4:20: training.trainable_params (2e+09) exceeds "
               "the model's parameters (1e+09)"});
  CHECK(load_errors(k_ok_model + k_ok_cluster + "[training]\nlora_targets = [\"q_prj\"]\n") ==
        Errors{"trainledger: error: test.toml:6:16: training.lora_targets: \"q_prj\" is not a "
               "list of \"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", "
               "\"up_proj\", \"down_proj\", \"all-linear\" (did you mean \"q_proj\"?)"});
}

TEST_CASE("a learned position table bounds the sequence", "[errors]") {
  // GPT-2 XL's wpe has 1,024 rows (n_positions); a 2,048-token sequence indexes past it.
  CHECK(load_errors("[model]\npreset = \"gpt2-xl\"\n" + k_ok_cluster +
                    "[training]\nseq_len = 2048\n") ==
        Errors{"trainledger: error: test.toml:6:11: training.seq_len (2048) exceeds the model's "
               "learned positions (model.position_embeddings = 1024): the position table has no "
               "row past it"});
  CHECK(
      load_errors("[model]\npreset = \"gpt2-xl\"\n" + k_ok_cluster + "[training]\nseq_len = 1024\n")
          .empty());
}

TEST_CASE("TOML syntax errors are located", "[errors]") {
  CHECK(load_errors("[model]\nlayers = \n") ==
        Errors{"trainledger: error: test.toml:2:10: invalid TOML: Error while parsing key-value "
               "pair: expected value, saw '\\n'"});
  CHECK(load_errors("[model\n") ==
        Errors{"trainledger: error: test.toml:1:7: invalid TOML: Error while parsing table "
               "header: expected ']', saw '\\n'"});
}

TEST_CASE("set override errors name the override", "[errors]") {
  CHECK(load_errors(k_ok_model + k_ok_cluster, {"parallel.tp=0"}) ==
        Errors{"trainledger: error: --set parallel.tp=0: parallel.tp: 0 must be at least 1"});
  CHECK(load_errors(k_ok_model + k_ok_cluster, {"tp=2"}) ==
        Errors{"trainledger: error: --set tp=2: expected section.key=value, e.g. --set "
               "parallel.tp=8"});
  CHECK(load_errors(k_ok_model + k_ok_cluster, {"paralel.tp=2"}) ==
        Errors{"trainledger: error: --set paralel.tp=2: unknown section \"paralel\" (did you "
               "mean \"parallel\"?)"});
}

TEST_CASE("every error of a file is reported, in file order", "[errors]") {
  const Errors e = load_errors(
      "[model]\npreset = \"llama-2-7b\"\nlayrs = 3\n[training]\nseq_len = 0\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpu_memory = 80\n");
  REQUIRE(e.size() == 3);
  CHECK(e[0].rfind("trainledger: error: test.toml:3:1:", 0) == 0);
  CHECK(e[1].rfind("trainledger: error: test.toml:5:11:", 0) == 0);
  CHECK(e[2].rfind("trainledger: error: test.toml:8:14:", 0) == 0);
}

TEST_CASE("uneven stages must split over the interleaved schedule's virtual stages", "[errors]") {
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[parallel]\npp = 4\ntp = 2\n"
      "schedule = \"interleaved\"\nvirtual_stages = 2\n" +
      k_ok_cluster;
  const Errors middle = load_errors(plan, {"parallel.stage_layers=[7, 9, 9, 7]"});
  REQUIRE(middle.size() == 1);
  CHECK(middle[0].find("parallel.stage_layers: stage 1 has 9 layers, which do not split over "
                       "parallel.virtual_stages (2)") != std::string::npos);
  // The first and last stage may count the embedding and the loss as a layer (Megatron-Core).
  CHECK(load_errors(plan, {"parallel.stage_layers=[7, 8, 10, 7]"}).empty());
}

TEST_CASE("value errors and the rules between values are reported in one run", "[errors]") {
  // A misspelt key and a tp that divides nothing: both at once, in file order.
  const Errors both = load_errors(k_ok_model + "layerz = 3\n[parallel]\ntp = 3\n" + k_ok_cluster);
  REQUIRE(both.size() >= 2);
  CHECK(both[0].rfind("trainledger: error: test.toml:3:1: unknown key model.layerz", 0) == 0);
  CHECK(both[1].find("test.toml:5:6: parallel: tp × pp × cp = 3 × 1 × 1 = 3 does not divide the "
                     "world size 8") != std::string::npos);
  // A rule about a key whose value was rejected would only repeat it: it is left out.
  const Errors rejected =
      load_errors(k_ok_model + "[parallel]\ntp = \"x\"\ndp = 3\n" + k_ok_cluster);
  REQUIRE(rejected.size() == 1);
  CHECK(rejected[0].find("parallel.tp: expected an integer") != std::string::npos);
  // Nor are rules checked against a model that could not be read.
  const Errors preset =
      load_errors("[model]\npreset = \"llama-2-7bb\"\n[parallel]\ntp = 3\n" + k_ok_cluster);
  REQUIRE(preset.size() == 1);
  CHECK(preset[0].find("unknown preset") != std::string::npos);
}

TEST_CASE("untrusted files: only regular files, bounded, inside the plan's folder",
          "[errors][security]") {
  // A device that never ends is refused at once, not read.
  const auto zero = trainledger::test::run_cli({"plan", "/dev/zero"});
  CHECK(zero.code == 2);
  CHECK(zero.out.empty());
  CHECK(zero.err ==
        "trainledger: error: /dev/zero: cannot read the plan file: not a regular file (a device, a "
        "FIFO or a socket)\n");
  const auto dir =
      trainledger::test::run_cli({"plan", trainledger::test::source_path("tests/data")});
  CHECK(dir.code == 2);
  CHECK(dir.err.find("cannot read the plan file: a directory, not a file") != std::string::npos);
  // A missing file, also in a folder that does not exist, says so.
  for (const char* missing : {"no-such-plan.toml", "no-such-folder/plan.toml"}) {
    const auto r = trainledger::test::run_cli({"plan", missing});
    CHECK(r.code == 2);
    CHECK(r.err == std::string("trainledger: error: ") + missing +
                       ": cannot read the plan file: no such file\n");
  }
  // A config.json outside the plan's folder is not read, and nothing of it is echoed.
  const auto outside = trainledger::test::load_errors(
      "[model]\nhf_config = \"../../../../../../etc/passwd\"\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
  CHECK(outside ==
        std::vector<std::string>{"trainledger: error: test.toml:2:13: model.hf_config: "
                                 "\"../../../../../../etc/passwd\" is outside the plan's folder; a "
                                 "config.json is read only from the plan's folder or below it"});
  // A config.json nested 300,000 deep is refused before it is parsed (it crashed the loader).
  const std::string deep_path = trainledger::test::source_path("tests/data/hf/_deep.json");
  {
    std::string deep;
    for (int i = 0; i < 300000; ++i) deep += "{\"a\":";
    deep += "1" + std::string(300000, '}');
    std::ofstream(deep_path) << deep;
  }
  const auto deep = trainledger::test::load_errors(
      "[model]\nhf_config = \"hf/_deep.json\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
  std::remove(deep_path.c_str());
  CHECK(deep == std::vector<std::string>{"trainledger: error: " + deep_path +
                                         ":1:321: invalid config.json: nested deeper than 64 "
                                         "levels (read for model.hf_config at test.toml:2:13)"});
  const auto absolute = trainledger::test::load_errors(
      "[model]\nhf_config = \"/etc/hostname\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
  REQUIRE(absolute.size() == 1);
  CHECK(absolute[0].find("is outside the plan's folder") != std::string::npos);
}

TEST_CASE("hostile values: overflowing numbers, edge-of-range inputs, multi-line --set",
          "[errors][security]") {
  using trainledger::test::run_cli;
  // A number too large for a double, even at a key that is never read: located, exit 2.
  const auto overflow = trainledger::test::load_errors(
      "[model]\nhf_config = \"hf/number-overflow.json\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
  REQUIRE(overflow.size() == 1);
  CHECK(overflow[0] == "trainledger: error: " +
                           trainledger::test::source_path("tests/data/hf/number-overflow.json") +
                           ":4:17: invalid JSON: a number too large for a double (read for "
                           "model.hf_config at test.toml:2:13)");
  // Documented-valid extremes that would print inf or NaN are refused by the invariant checker.
  for (const char* set : {"cluster.matmul_efficiency=5e-324"}) {
    INFO(set);
    const auto r = run_cli({"plan", "--set", set});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("the plan's numbers are out of range") != std::string::npos);
    CHECK(run_cli({"check", "default", "--set", set}).code == 2);
  }
  // A bandwidth far below any link (a step of 1e300 days) is refused where it is read.
  for (const char* set :
       {"cluster.inter_node_bandwidth=1e-300 B/s", "checkpoint.storage_bandwidth=1e-300 GB/s"}) {
    INFO(set);
    const auto r = run_cli({"plan", "--set", set});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("is out of range: a bandwidth that is not 0 is at least 1 B/s") !=
          std::string::npos);
    CHECK(run_cli({"check", "default", "--set", set}).code == 2);
  }
  // No failures expected: no MTBF of 0 s, but a warning.
  const auto no_failures = run_cli({"plan", "--set", "checkpoint.gpu_failure_rate=0 /h"});
  CHECK(no_failures.code == 0);
  CHECK(no_failures.out.find("mtbf ") == std::string::npos);
  CHECK(no_failures.out.find("no failures expected") != std::string::npos);
  // One key per --set: what follows a newline is not silently dropped.
  const auto lines = run_cli({"plan", "--set", "training.seq_len=4096\n[model]\nlayers = 1"});
  CHECK(lines.code == 2);
  CHECK(lines.err ==
        "trainledger: error: --set training.seq_len=4096…: the value spans more "
        "than one line; give one key=value per --set\n");
}

TEST_CASE("messages never carry control characters or invalid UTF-8 from a file",
          "[errors][security]") {
  // A model_type with an escape sequence (a terminal colour code) is written as \x1B.
  const auto e = trainledger::test::load_errors(
      "[model]\nhf_config = \"hf/control-chars.json\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find('\x1b') == std::string::npos);
  CHECK(e[0].find("evil\\x1B[31mÿ") != std::string::npos);
}
