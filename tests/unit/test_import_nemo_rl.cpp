// NeMo-RL YAML configs (docs/rl.md#importing): a performance recipe with its defaults chain
// gives the reference set's hand-written plan of the same run; every value points into the
// file of the chain that set it; bad and hostile YAML is refused, located, never crashing.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "trainledger/config.hpp"
#include "trainledger/plan.hpp"

using namespace trainledger;

namespace {

config::LoadedPlan load(const std::string& rel) {
  return config::load_plan_file(test::source_path(rel), {});
}

const char* k_plan =
    "[import]\nnemo_rl = \"run.yaml\"\n[model]\npreset = \"llama-3.1-8b\"\n"
    "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";

}  // namespace

TEST_CASE("imports: NeMo-RL's recipe and its defaults give the reference plan of the run",
          "[imports][rl]") {
  const auto imported = load("tests/data/imports/nemo-rl.toml");
  const auto by_hand =
      load("tests/reference/rl/nemo-rl-v0.5-h100/nemorl-v0.5-h100-llama31-8b-onpolicy-16gpu.toml");
  test::same_rl(test::plan_checked(imported.input), test::plan_checked(by_hand.input));
  const RlSpec& rl = imported.input.rl;
  CHECK(rl.prompts == 64);
  CHECK(rl.samples == 32);
  CHECK(rl.mini_batch_prompts == 16);  // train_global_batch_size 512 / 32
  CHECK(rl.frozen_weights == RlFrozen::swap);
  CHECK(rl.offload_copy == RlOffloadCopy::pinned_weights);  // Megatron: move_optimizer pageable
  CHECK(imported.input.training.framework == Framework::megatron);
  CHECK(imported.input.parallel.pp == 2);
  // grpo_math_1B.yaml's MoE dispatcher at v0.5 (moe_token_dispatcher_type "allgather").
  CHECK(imported.input.parallel.ep_dispatch == EpDispatch::allgather);
  CHECK(test::origin_of(imported, "parallel.ep_dispatch").find("grpo_math_1B.yaml:120") !=
        std::string::npos);
  // The recipe's own keys point at the recipe, the inherited ones at grpo_math_1B.yaml, the
  // interpolated max_new_tokens at the line that interpolates.
  CHECK(test::origin_of(imported, "rl.prompts").find("grpo-llama3.1-8b-instruct-2n8g.yaml:3") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "rl.mini_batch_prompts").find("grpo_math_1B.yaml:") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "rl.memory_fraction").find("grpo_math_1B.yaml:") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "parallel.pp").find("grpo-llama3.1-8b-instruct-2n8g.yaml:24") !=
        std::string::npos);
  // What is not read is listed, the model name with what to do instead.
  CHECK(test::warned(imported, "give [model]"));
  CHECK(test::warned(imported, "checkpointing.* (9 keys)"));
}

TEST_CASE("imports: a NeMo-RL recipe two defaults deep: async GRPO, split placement",
          "[imports][rl]") {
  const auto imported = load("tests/data/imports/nemo-rl-async.toml");
  const auto by_hand =
      load("tests/reference/rl/nemo-rl-v0.5-h100/nemorl-v0.5-h100-llama31-8b-1off-16gpu.toml");
  test::same_rl(test::plan_checked(imported.input), test::plan_checked(by_hand.input));
  const RlSpec& rl = imported.input.rl;
  CHECK(rl.placement == RlPlacement::split);
  CHECK(rl.off_policy);
  CHECK(rl.rollout_gpus == 8);
  CHECK(imported.input.cluster.nodes == 1);  // 2 nodes, 1 of them generates
  CHECK(imported.input.parallel.pp == 1);    // the async recipe overrides its parent's 2
  CHECK(test::origin_of(imported, "parallel.pp").find("-async-1off.yaml:") != std::string::npos);
}

TEST_CASE("imports: bad NeMo-RL values are located in their file", "[imports][rl][errors]") {
  const std::string plan = test::scratch_folder(
      "tl-nemo-bad", {{"plan.toml", k_plan},
                      {"run.yaml", "defaults: base.yaml\ngrpo:\n  num_prompts_per_step: many\n"},
                      {"base.yaml",
                       "policy:\n  generation:\n    vllm_cfg:\n"
                       "      enforce_eager: maybe\n"
                       "  train_global_batch_size: 100\n"
                       "grpo:\n  num_generations_per_prompt: 16\n"}});
  const std::string e = test::load_file_errors(plan);
  CHECK(e.find("run.yaml:3") != std::string::npos);
  CHECK(e.find("grpo.num_prompts_per_step: \"many\": expected an integer") != std::string::npos);
  CHECK(e.find("base.yaml:4") != std::string::npos);
  CHECK(e.find("expected true or false") != std::string::npos);
  CHECK(e.find("not a whole number of prompts' generations") != std::string::npos);
}

TEST_CASE("imports: hostile NeMo-RL YAML is refused, bounded and located",
          "[imports][rl][hostile]") {
  SECTION("not YAML") {
    const std::string e = test::load_file_errors(test::scratch_folder(
        "tl-nemo-syntax", {{"plan.toml", k_plan}, {"run.yaml", "grpo: [1, 2\n"}}));
    CHECK(e.find("run.yaml:") != std::string::npos);
    CHECK(e.find("not valid YAML") != std::string::npos);
  }
  SECTION("nested deeper than 64 levels, flow or block") {
    const std::string flow = "a: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
    std::string block;
    for (int i = 0; i < 200; ++i) block += std::string(i, ' ') + "k" + std::to_string(i) + ":\n";
    for (const std::string& text : {flow, block}) {
      const std::string e = test::load_file_errors(
          test::scratch_folder("tl-nemo-deep", {{"plan.toml", k_plan}, {"run.yaml", text}}));
      CHECK(e.find("nested deeper than 64 levels") != std::string::npos);
    }
  }
  SECTION("sequences opened on one line count as levels") {
    const std::string dashes = "a:\n" + std::string("  ") + [] {
      std::string d;
      for (int i = 0; i < 600; ++i) d += "- ";
      return d;
    }() + "x\n";
    const std::string e = test::load_file_errors(
        test::scratch_folder("tl-nemo-dash", {{"plan.toml", k_plan}, {"run.yaml", dashes}}));
    CHECK(e.find("run.yaml:2") != std::string::npos);
    CHECK(e.find("nested deeper than 64 levels") != std::string::npos);
  }
  SECTION("bounded in size and in items before yaml-cpp builds a node") {
    const std::string big = "a: \"" + std::string(300 << 10, 'x') + "\"\n";
    const std::string e = test::load_file_errors(
        test::scratch_folder("tl-nemo-big", {{"plan.toml", k_plan}, {"run.yaml", big}}));
    CHECK(e.find("run.yaml:1") != std::string::npos);
    CHECK(e.find("larger than 256 KiB") != std::string::npos);
    std::string items = "a:\n";
    for (int i = 0; i < 25000; ++i) items += "- 1\n";
    const std::string many = test::load_file_errors(
        test::scratch_folder("tl-nemo-items", {{"plan.toml", k_plan}, {"run.yaml", items}}));
    CHECK(many.find("run.yaml:20001") != std::string::npos);
    CHECK(many.find("more than 20000 lines and list items") != std::string::npos);
    const std::string flow = "a: [" + [] {
      std::string f;
      for (int i = 0; i < 25000; ++i) f += "1,";
      return f;
    }() + "1]\n";
    CHECK(test::load_file_errors(
              test::scratch_folder("tl-nemo-flow", {{"plan.toml", k_plan}, {"run.yaml", flow}}))
              .find("more than 20000 lines and list items") != std::string::npos);
  }
  SECTION("a NUL byte") {
    const std::string e = test::load_file_errors(test::scratch_folder(
        "tl-nemo-nul",
        {{"plan.toml", k_plan}, {"run.yaml", std::string("grpo:\n  a: b\0c\n", 15)}}));
    CHECK(e.find("run.yaml:2") != std::string::npos);
    CHECK(e.find("a NUL byte") != std::string::npos);
  }
  SECTION("aliases that expand past the node bound") {
    // a{i} holds a{i-1} eight times: 8^12 keys if every alias is walked.
    std::string bomb = "a0: &a0 {x: 1}\n";
    for (int i = 1; i < 12; ++i) {
      bomb += fmt::format("a{}: &a{} {{", i, i);
      for (int k = 0; k < 8; ++k) bomb += fmt::format("{}k{}: *a{}", k ? ", " : "", k, i - 1);
      bomb += "}\n";
    }
    const std::string e = test::load_file_errors(
        test::scratch_folder("tl-nemo-alias", {{"plan.toml", k_plan}, {"run.yaml", bomb}}));
    CHECK(e.find("run.yaml:1") != std::string::npos);
    CHECK(e.find("more than 200000 YAML nodes") != std::string::npos);
    // An alias that holds itself: a cycle, walked no deeper than the text may nest.
    const std::string self = test::load_file_errors(test::scratch_folder(
        "tl-nemo-self", {{"plan.toml", k_plan}, {"run.yaml", "grpo:\n  x: &a {y: *a}\n"}}));
    CHECK(self.find("nested deeper than 64 levels") != std::string::npos);
  }
  SECTION("defaults outside the plan's folder, a loop, a hostile name") {
    const std::string out = test::load_file_errors(test::scratch_folder(
        "tl-nemo-out", {{"plan.toml", k_plan}, {"run.yaml", "defaults: ../../etc/passwd\n"}}));
    CHECK(out.find("run.yaml:1") != std::string::npos);
    CHECK(out.find("defaults: cannot read") != std::string::npos);
    CHECK(out.find("root:") == std::string::npos);  // never another file's bytes
    const std::string loop = test::load_file_errors(
        test::scratch_folder("tl-nemo-loop", {{"plan.toml", k_plan},
                                              {"run.yaml", "defaults: b.yaml\n"},
                                              {"b.yaml", "defaults: run.yaml\n"}}));
    CHECK(loop.find("a chain of more than 8 files") != std::string::npos);
    const std::string hostile = test::load_file_errors(test::scratch_folder(
        "tl-nemo-name", {{"plan.toml", k_plan}, {"run.yaml", "defaults: \"x\\e[2J\\xff\"\n"}}));
    CHECK(hostile.find('\x1b') == std::string::npos);
    CHECK(hostile.find("defaults: cannot read") != std::string::npos);
  }
  SECTION("a directory or a device as defaults") {
    const std::string plan = test::scratch_folder(
        "tl-nemo-dir",
        {{"plan.toml", k_plan}, {"run.yaml", "defaults: sub\n"}, {"sub/x.yaml", "a: 1\n"}});
    CHECK(test::load_file_errors(plan).find("defaults: cannot read \"sub\": a directory") !=
          std::string::npos);
  }
}
