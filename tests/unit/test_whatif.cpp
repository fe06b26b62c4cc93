// What-if in the core: typed changes, validation by the plan's rules, levers and fix-it hints
// evaluated by the numbers-only path (and equal to re-planning with compute_plan).
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/report.hpp"
#include "trainledger/whatif.hpp"

using namespace trainledger;

namespace {

const std::string k_fsdp = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");

PlanInput default_input() { return config::load_default_plan({}).input; }

}  // namespace

TEST_CASE("a change holds the global batch, the accumulation follows", "[whatif]") {
  const PlanInput in = default_input();
  const PlanResult before = test::plan_checked(in);
  const PlanInput changed = apply(in, Change().set(in, Knob::micro_batch, 2));
  const PlanResult after = test::plan_checked(changed);
  CHECK(after.derived.global_batch == before.derived.global_batch);
  CHECK(after.derived.grad_accum * 2 == before.derived.grad_accum);
  CHECK(changed.provenance.of("training.micro_batch") == Source::change);
  CHECK(report::change_text(Change().set(in, Knob::micro_batch, 2)) == "micro_batch 1 → 2");
}

TEST_CASE("a change of ZeRO stage derives grad_sync again unless the plan gave it", "[whatif]") {
  const PlanInput in = config::load_plan_file(k_fsdp, {}).input;  // zero 3, grad_sync derived
  REQUIRE(in.parallel.grad_sync == GradSync::every_micro_batch);
  REQUIRE(in.provenance.of("parallel.grad_sync") == Source::derived);
  CHECK(apply(in, Change().set(in, Knob::zero, 1)).parallel.grad_sync ==
        GradSync::last_micro_batch);
  config::LoadOptions o;
  o.sets = {"parallel.grad_sync=\"every_micro_batch\""};
  const PlanInput given = config::load_plan_file(k_fsdp, o).input;
  CHECK(given.provenance.of("parallel.grad_sync") == Source::set);
  CHECK(apply(given, Change().set(given, Knob::zero, 1)).parallel.grad_sync ==
        GradSync::every_micro_batch);
}

TEST_CASE("a change that breaks a plan rule is not a candidate", "[whatif]") {
  const PlanInput in = default_input();
  CHECK(!apply_valid(in, Change().set(in, Knob::tp, 3)));  // 3 divides neither heads nor world
  CHECK(apply_valid(in, Change().set(in, Knob::tp, 4).set(in, Knob::dp, 4)));
  CHECK(report::change_text(Change().set(in, Knob::tp, 4).set(in, Knob::dp, 4)) ==
        "tp 8 → 4, dp 2 → 4");
}

TEST_CASE("levers equal re-planning with the change, and the report renders them in its units",
          "[whatif][levers]") {
  const PlanInput in = default_input();
  const PlanResult plan = test::plan_checked(in);
  const std::vector<Lever> levers = find_levers(plan);
  REQUIRE(levers.size() >= 3);
  for (const Lever& l : levers) {
    INFO(report::change_text(l.change));
    const PlanResult again = test::plan_checked(apply(in, l.change));
    CHECK(l.throughput_after == value_of(again.time, ItemId::throughput_tokens_per_s_per_gpu));
    CHECK(l.peak_bytes == again.verdict.peak_bytes);
    CHECK(l.grad_accum_after == again.derived.grad_accum);
    CHECK(l.fits);
    CHECK(l.throughput_after > l.throughput_before * 1.005);
  }
  for (std::size_t i = 1; i < levers.size(); ++i)
    CHECK(levers[i - 1].throughput_after >= levers[i].throughput_after);
  // FP8 GEMMs on the H100 first (the numerics change; the report says so); then, with a fifth
  // of the step in exposed TP traffic, overlapping it.
  CHECK(report::change_text(levers[0].change) == "precision = fp8");
  CHECK(report::change_text(levers[1].change) == "overlap_tp = true");
  CHECK(report::change_text(levers[2].change) == "global_batch 256 → 1024");
}

TEST_CASE("fix-it hints: the change that frees the most on the worst stage", "[whatif][check]") {
  const PlanInput in = config::load_plan_file(k_fsdp, {}).input;
  const PlanResult plan = test::plan_checked(in);
  const double limit = plan.verdict.limit_bytes * 0.9;
  const std::vector<Fix> fixes = find_fixes(plan, limit);
  REQUIRE(fixes.size() == 3);
  CHECK(fixes[0].item == ItemId::activations);
  CHECK(fixes[0].bytes >= fixes[1].bytes);
  CHECK(fixes[1].bytes >= fixes[2].bytes);
  REQUIRE(fixes[0].change);
  CHECK(report::change_text(*fixes[0].change) == "recompute = full");
  const PlanResult fixed = test::plan_checked(apply(in, *fixes[0].change));
  CHECK(plan.verdict.peak_bytes - fixed.stages[plan.worst_stage].peak_bytes ==
        fixes[0].freed_bytes);
  CHECK(fixes[0].then_fits == (fixed.verdict.peak_bytes <= limit));
  // With expandable segments on, the fragmentation reserve has no knob of its own.
  CHECK(fixes[2].item == ItemId::overhead_fragmentation);
  CHECK(!fixes[2].change);
}

TEST_CASE("fix-it hints: expandable segments shrink the caching allocator's reserve",
          "[whatif][check]") {
  config::LoadOptions o;
  // A GPU with room to spare: the reserve is not capped by its memory.
  o.sets = {"training.expandable_segments=false", "cluster.gpu_memory=\"200 GiB\""};
  const PlanInput in = config::load_plan_file(k_fsdp, o).input;
  const PlanResult plan = test::plan_checked(in);
  const std::vector<Fix> fixes = find_fixes(plan, plan.verdict.limit_bytes * 0.5, 8);
  const auto frag = std::find_if(fixes.begin(), fixes.end(), [](const Fix& f) {
    return f.item == ItemId::overhead_fragmentation;
  });
  REQUIRE(frag != fixes.end());
  REQUIRE(frag->change);
  CHECK(report::change_text(*frag->change) == "expandable_segments = true");
  const PlanResult fixed = test::plan_checked(apply(in, *frag->change));
  CHECK(fixed.input.cluster.fragmentation == 0.1);  // the default follows the knob
  CHECK(frag->freed_bytes == plan.verdict.peak_bytes - fixed.stages[0].peak_bytes);
  // 0.3 → 0.1 of the same dynamic memory: two thirds of the reserve.
  CHECK(frag->freed_bytes ==
        Approx(test::item_value(plan, "overhead.fragmentation") * 2 / 3).epsilon(0.01));
  // A reserve the plan gives is its own: no hint.
  o.sets.push_back("cluster.fragmentation=0.3");
  const PlanResult given = test::plan_checked(config::load_plan_file(k_fsdp, o).input);
  for (const Fix& f : find_fixes(given, given.verdict.limit_bytes * 0.5, 8))
    if (f.item == ItemId::overhead_fragmentation) CHECK(!f.change);
}

TEST_CASE("the loader records where each input came from", "[whatif][provenance]") {
  config::LoadOptions o;
  o.sets = {"parallel.tp=4", "cluster.nodes=4"};
  const PlanInput in = config::load_default_plan(o).input;
  CHECK(in.provenance.of("parallel.tp") == Source::set);
  CHECK(in.provenance.of("parallel.pp") == Source::file);
  CHECK(in.provenance.of("model.layers") == Source::preset);
  CHECK(in.provenance.of("training.grad_dtype") == Source::derived);
  // The allocator's reserve follows training.expandable_segments unless the plan gives it.
  CHECK(in.provenance.of("cluster.fragmentation") == Source::derived);
  CHECK(in.cluster.fragmentation == 0.3);
}

TEST_CASE("a step that waits for the host has CUDA graphs among its levers", "[whatif][host]") {
  const std::string small = R"(
[model]
preset = "llama-3.2-1b"
[training]
framework = "hf"
seq_len = 256
micro_batch = 1
global_batch = 8
[cluster]
gpu = "h100-sxm5-80gb"
gpus_per_node = 1
)";
  const PlanResult plan = test::plan_text(small);
  REQUIRE(value_of(plan.time, ItemId::time_host) > 0);
  bool graphs = false;
  for (const Lever& l : find_levers(plan))
    if (report::change_text(l.change) == "cuda_graphs = true") {
      graphs = true;
      // The layers' dispatch is one launch each: the host wait goes, the compute stays.
      CHECK(l.throughput_after > 1.5 * l.throughput_before);
    }
  CHECK(graphs);
  // A GPU-bound plan is not offered it.
  for (const Lever& l : find_levers(test::plan_text(small, {"training.seq_len=4096"})))
    CHECK(report::change_text(l.change) != "cuda_graphs = true");
}
