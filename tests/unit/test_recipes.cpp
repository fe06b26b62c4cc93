// Low-precision recipes (training.recipe, docs/formulas.md#recipes): the quantized weight
// copies, saved GEMM inputs, cast traffic and all-gather bytes each keeps, the rules that refuse
// a recipe a stack or GPU does not have, and emit/import of the frameworks' flags.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "helpers.hpp"
#include "trainledger/config.hpp"
#include "trainledger/plan.hpp"
#include "trainledger/report.hpp"
#include "trainledger/whatif.hpp"

using namespace trainledger;

namespace {

// Llama 3.1 8B under Megatron-LM, tp 1 with the distributed optimizer on one 8-GPU node.
std::string llama8b(const std::string& gpu) {
  return "[model]\npreset = \"llama-3.1-8b\"\n[training]\nframework = \"megatron\"\n"
         "seq_len = 4096\nglobal_batch = 64\nrecompute = \"selective\"\n[parallel]\nzero = 1\n"
         "[cluster]\ngpu = \"" +
         gpu + "\"\n";
}

double matrix_params(const PlanResult& p) {
  const LineItem* it = nullptr;
  for (const LineItem& i : p.stages[0].items)
    if (i.id == "params.fp8") it = &i;
  REQUIRE(it != nullptr);
  for (const Term& t : it->terms)
    if (t.key == "matrix_params") return t.value;
  FAIL("no matrix_params term");
  return 0;
}

double term(const PlanResult& p, ItemId id, const std::string& key) {
  for (const LineItem& i : p.time)
    if (i.item == id)
      for (const Term& t : i.terms)
        if (t.key == key) return t.value;
  return 0;
}

}  // namespace

TEST_CASE("recipes: the quantized weight copies follow the recipe and the GPU",
          "[recipes][memory]") {
  const std::string fp8 = "training.precision=\"fp8\"";
  const PlanResult h100 = test::plan_text(llama8b("h100-sxm5-80gb"), {fp8});
  const PlanResult b200 = test::plan_text(llama8b("b200-180gb"), {fp8});
  const double n = matrix_params(b200);
  CHECK(matrix_params(h100) == Approx(n));
  // Per-tensor FP8: data and transpose on Hopper, one copy on Blackwell (non-TN GEMMs).
  CHECK(h100.input.training.recipe == Recipe::tensorwise);
  CHECK(test::item_value(h100, "params.fp8") == Approx(2 * n).epsilon(1e-9));
  CHECK(test::item_value(b200, "params.fp8") == Approx(n).epsilon(1e-9));
  auto with = [&](const std::string& gpu, std::vector<std::string> sets) {
    return test::plan_text(llama8b(gpu), sets);
  };
  CHECK(test::item_value(with("b200-180gb", {fp8, "training.recipe=\"mxfp8\""}), "params.fp8") ==
        Approx(2 * (1 + 1.0 / 32) * n).epsilon(1e-9));
  CHECK(test::item_value(with("b200-180gb", {fp8, "training.recipe=\"blockwise\""}),
                         "params.fp8") == Approx(2 * n).epsilon(1e-9));
  const PlanResult fp4 = with("b200-180gb", {"training.precision=\"fp4\""});
  CHECK(fp4.input.training.recipe == Recipe::nvfp4);
  CHECK(fp4.input.training.precision == DType::fp8);
  CHECK(test::item_value(fp4, "params.fp8") == Approx(2 * (0.5 + 1.0 / 16) * n).epsilon(1e-9));
  // Transformer Engine saves the column-wise copy of each GEMM input: NVFP4's is half FP8's,
  // MXFP8's a scale byte per 32 larger.
  const double act8 = test::item_value(b200, "activations");
  CHECK(test::item_value(fp4, "activations") < act8);
  CHECK(test::item_value(with("b200-180gb", {fp8, "training.recipe=\"mxfp8\""}), "activations") >
        act8);
}

TEST_CASE(
    "recipes: NVFP4 runs the GEMMs at the fp4 peak, the casts cost what the recipe reads "
    "and writes",
    "[recipes][time]") {
  const std::string plan = llama8b("b200-180gb");
  const PlanResult bf16 = test::plan_text(plan);
  const PlanResult cs = test::plan_text(plan, {"training.precision=\"fp8\""});
  const PlanResult mx =
      test::plan_text(plan, {"training.precision=\"fp8\"", "training.recipe=\"mxfp8\""});
  const PlanResult fp4 = test::plan_text(plan, {"training.precision=\"fp4\""});
  const auto tps = [](const PlanResult& p) {
    for (const LineItem& i : p.time)
      if (i.item == ItemId::throughput_tokens_per_s_per_gpu) return i.value;
    return 0.0;
  };
  CHECK(tps(cs) > tps(bf16));
  CHECK(tps(fp4) > tps(cs));
  // The GEMMs' peak: B200's 9 PFLOP/s dense FP4 against 4.5 FP8.
  CHECK(term(fp4, ItemId::time_compute, "peak_flops") ==
        Approx(2 * term(cs, ItemId::time_compute, "peak_flops")));
  // Element-wise traffic: current scaling on Blackwell under Transformer Engine casts at 5 B
  // per element (amax pass, cast; no transpose), MXFP8 at 2 + 2 × 1.03125 B in one kernel.
  const double e16 = term(bf16, ItemId::time_compute, "elementwise_bytes");
  const double ecs = term(cs, ItemId::time_compute, "elementwise_bytes") - e16;
  const double emx = term(mx, ItemId::time_compute, "elementwise_bytes") - e16;
  REQUIRE(ecs > 0);
  CHECK(emx / ecs == Approx((2 + 2 * (1 + 1.0 / 32)) / 5.0).epsilon(1e-6));
  // Hopper's current scaling writes the transposed copy too: 7 B.
  const PlanResult h = test::plan_text(llama8b("h100-sxm5-80gb"), {"training.precision=\"fp8\""});
  const double eh =
      term(h, ItemId::time_compute, "elementwise_bytes") -
      term(test::plan_text(llama8b("h100-sxm5-80gb")), ItemId::time_compute, "elementwise_bytes");
  CHECK(eh / ecs == Approx(7.0 / 5.0).epsilon(1e-6));
}

TEST_CASE("recipes: a parameter all-gather moves the recipe's bytes", "[recipes][comm]") {
  const std::string plan = llama8b("b200-180gb");
  const auto dp = [](const PlanResult& p) {
    for (const LineItem& i : p.communication)
      if (i.id == "comm.dp") return i.value;
    return 0.0;
  };
  const std::string gather = "parallel.fp8_param_gather=true";
  const double cs = dp(test::plan_text(plan, {"training.precision=\"fp8\"", gather}));
  // Megatron-Core gathers MXFP8 parameters in 16 bits (and quantizes after): as many bytes as
  // without the option.
  const double mx = dp(
      test::plan_text(plan, {"training.precision=\"fp8\"", "training.recipe=\"mxfp8\"", gather}));
  const double plain = dp(test::plan_text(plan, {"training.precision=\"fp8\""}));
  CHECK(mx == Approx(plain));
  CHECK(cs < plain);
  // --fp4-param-gather: 0.5625 B per GEMM weight.
  CHECK(dp(test::plan_text(plan, {"training.precision=\"fp4\"", gather})) < cs);
}

TEST_CASE("recipes: what a stack or GPU does not have is refused, located", "[recipes][rules]") {
  const auto one_error = [](const std::string& toml, const std::vector<std::string>& sets) {
    const auto errors = test::load_errors(toml, sets);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  CHECK_THAT(one_error(llama8b("h100-sxm5-80gb"),
                       {"training.precision=\"fp8\"", "training.recipe=\"mxfp8\""}),
             Catch::Contains("training.recipe = \"mxfp8\" needs block-scaled tensor cores"));
  CHECK_THAT(one_error(llama8b("h100-sxm5-80gb"), {"training.precision=\"fp4\""}),
             Catch::Contains("training.recipe = \"nvfp4\" needs block-scaled tensor cores"));
  CHECK_THAT(
      one_error(llama8b("b200-180gb"), {"training.precision=\"fp8\"", "training.recipe=\"nvfp4\""}),
      Catch::Contains("is a 4-bit recipe: it needs training.precision = \"fp4\""));
  CHECK_THAT(one_error(llama8b("b200-180gb"), {"training.recipe=\"mxfp8\""}),
             Catch::Contains("scales fp8 or fp4 GEMMs, but training.precision is \"bf16\""));
  CHECK_THAT(one_error(llama8b("b200-180gb"),
                       {"training.precision=\"fp8\"", "training.recipe=\"rowwise\""}),
             Catch::Contains("\"rowwise\" is torchao's"));
  CHECK_THAT(
      one_error(llama8b("b200-180gb"), {"training.precision=\"fp8\"", "training.recipe=\"delayed\"",
                                        "training.framework=\"pytorch\""}),
      Catch::Contains("\"delayed\" is Transformer Engine's"));
  CHECK_THAT(
      one_error(llama8b("b200-180gb"), {"training.precision=\"fp8\"", "training.recipe=\"rowwise\"",
                                        "training.framework=\"pytorch\"", "parallel.zero=3",
                                        "parallel.fp8_all_gather=true"}),
      Catch::Contains("supports tensorwise scaling only"));
  // Megatron-FSDP gathers FP8 and FP4 parameters natively, MXFP8 ones in 16 bits.
  CHECK_THAT(
      one_error(llama8b("b200-180gb"), {"training.precision=\"fp8\"", "training.recipe=\"mxfp8\"",
                                        "parallel.zero=3", "parallel.fp8_all_gather=true"}),
      Catch::Contains("Megatron-FSDP gathers MXFP8 parameters in 16 bits"));
  CHECK(test::load_errors(llama8b("b200-180gb"), {"training.precision=\"fp4\"", "parallel.zero=3",
                                                  "parallel.fp8_all_gather=true"})
            .empty());
}

TEST_CASE("recipes: emit writes the frameworks' flags and import reads them back",
          "[recipes][imports][emit]") {
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-recipes-emit";
  std::filesystem::create_directories(dir);
  const std::string plan = (dir / "plan.toml").string();
  const struct {
    std::vector<std::string> sets;
    const char* flags;
    Recipe back;
  } cases[] = {
      {{"training.precision=\"fp8\"", "training.recipe=\"mxfp8\""},
       "--fp8-format e4m3 \\\n  --fp8-recipe mxfp8",
       Recipe::mxfp8},
      {{"training.precision=\"fp8\"", "training.recipe=\"delayed\""},
       "--fp8-format hybrid \\\n  --fp8-recipe delayed",
       Recipe::delayed},
      {{"training.precision=\"fp4\""}, "--fp4-format e2m1 \\\n  --fp4-recipe nvfp4", Recipe::nvfp4},
  };
  for (const auto& c : cases) {
    std::ofstream(plan) << llama8b("b200-180gb");
    std::vector<std::string> args = {"plan", plan, "--emit", "megatron"};
    for (const std::string& s : c.sets) args.insert(args.end(), {"--set", s});
    const auto emitted = test::run_cli(args);
    REQUIRE(emitted.code == 0);
    INFO(emitted.out);
    CHECK_THAT(emitted.out, Catch::Contains(c.flags));
    std::ofstream(dir / "train.sh") << emitted.out;
    std::ofstream(plan) << "[cluster]\ngpu = \"b200-180gb\"\n[import]\nmegatron = \"train.sh\"\n";
    const auto back = config::load_plan_file(plan, {});
    CHECK(back.input.training.recipe == c.back);
  }
  // Megatron-LM's --fp8-recipe defaults to delayed: a script with --fp8-format alone is that.
  std::ofstream(dir / "train.sh") << "torchrun pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
                                     "--num-attention-heads 32 --ffn-hidden-size 14336 "
                                     "--vocab-size 128256 --seq-length 4096 "
                                     "--micro-batch-size 1 --global-batch-size 8 --bf16 "
                                     "--fp8-format hybrid\n";
  CHECK(config::load_plan_file(plan, {}).input.training.recipe == Recipe::delayed);
  // torchtitan's mx converter is MXFP8; its float8 recipe_name rowwise is rowwise.
  std::ofstream(dir / "job.toml") << "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                                     "converters = [\"mx\"]\n";
  std::ofstream(plan) << "[cluster]\ngpu = \"b200-180gb\"\n[import]\ntorchtitan = \"job.toml\"\n";
  CHECK(config::load_plan_file(plan, {}).input.training.recipe == Recipe::mxfp8);
  std::ofstream(dir / "job.toml") << "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                                     "converters = [\"float8\"]\n[float8]\nrecipe_name = "
                                     "\"rowwise\"\n";
  CHECK(config::load_plan_file(plan, {}).input.training.recipe == Recipe::rowwise);
  std::filesystem::remove_all(dir);
}

TEST_CASE("recipes: the levers offer the lower precision the GPU has, with its gain",
          "[recipes][whatif]") {
  const auto offered = [](const PlanResult& p) {
    std::map<std::string, double> gains;
    for (const Lever& l : find_levers(p, 32))
      gains[report::change_text(l.change)] = l.throughput_after / l.throughput_before;
    return gains;
  };
  const PlanResult bf16 = test::plan_text(llama8b("b200-180gb"));
  const auto from_bf16 = offered(bf16);
  REQUIRE(from_bf16.count("precision = fp8"));
  CHECK(from_bf16.at("precision = fp8") > 1.1);
  CHECK_FALSE(from_bf16.count("precision = fp4"));
  // From fp8 on Blackwell: NVFP4, at its own gain; on Hopper (no fp4 peak) nothing lower.
  const auto from_fp8 = offered(test::plan_text(llama8b("b200-180gb"), {"training.precision=fp8"}));
  REQUIRE(from_fp8.count("precision = fp4"));
  CHECK(from_fp8.at("precision = fp4") > 1.0);
  const auto hopper =
      offered(test::plan_text(llama8b("h100-sxm5-80gb"), {"training.precision=fp8"}));
  CHECK_FALSE(hopper.count("precision = fp4"));
  // torchao's NVFP4 training is unoptimized (its README's status table): not offered as a
  // speed-up to the pytorch stack.
  const auto torchao = offered(test::plan_text(
      llama8b("b200-180gb"),
      {"training.precision=fp8", "training.framework=\"pytorch\"", "parallel.zero=3"}));
  CHECK_FALSE(torchao.count("precision = fp4"));
  // The lever's change applied as a plan edit gives the plan it evaluated.
  const PlanResult fp8 = test::plan_text(llama8b("b200-180gb"), {"training.precision=\"fp8\""});
  CHECK(value_of(fp8.time, ItemId::throughput_tokens_per_s_per_gpu) /
            value_of(bf16.time, ItemId::throughput_tokens_per_s_per_gpu) ==
        Approx(from_bf16.at("precision = fp8")));
}
