// The peak beyond state and activations: phases, temporaries, fixed overheads, host memory,
// and the inverse question (--max).
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "trainledger/search.hpp"

using namespace trainledger;
using test::phase_value;

namespace {

const std::string k_fsdp8 =
    "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 4096\n[parallel]\nzero = 3\n"
    "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";

double phase_total(const PlanResult& p, Phase phase, int stage = 0) {
  for (const PhaseTotal& pt : p.stages[stage].phases)
    if (pt.phase == phase) return pt.bytes;
  return 0;
}

}  // namespace

TEST_CASE("the peak is the largest phase, and Adam states appear after init", "[peak][phases]") {
  const PlanResult p = test::plan_text(k_fsdp8);
  const StageMemory& st = p.stages[0];
  REQUIRE(st.phases.size() == 5);
  double highest = 0;
  for (const PhaseTotal& pt : st.phases) highest = std::max(highest, pt.bytes);
  CHECK(st.peak_bytes == highest);
  CHECK(st.peak_phase == Phase::backward);
  CHECK(phase_value(p, "optimizer.m", 0, Phase::init) == 0);
  CHECK(phase_value(p, "optimizer.m", 0, Phase::forward) > 0);
  CHECK(phase_value(p, "activations", 0, Phase::optimizer) == 0);
  CHECK(phase_total(p, Phase::init) < phase_total(p, Phase::optimizer));
}

TEST_CASE("FSDP gathers the head's unit, a layer and the prefetched next one",
          "[peak][temporaries]") {
  const PlanResult p = test::plan_text(k_fsdp8);
  // Llama-3.1-8B: a layer has 218,112,000 params; torchtitan's final norm and head unit
  // 525,340,672 (the embedding's own unit is resharded after its forward).
  const double layer = 218112000.0, root = 128256.0 * 4096 + 4096;
  const double forward = phase_value(p, "temporaries", 0, Phase::forward);
  const double logits = 6.0 * 4096 * 128256;  // bf16 logits + fp32 copy during the loss
  CHECK(forward == Approx(2 * (root + 2 * layer) + logits));
  const double backward = phase_value(p, "temporaries", 0, Phase::backward);
  CHECK(backward > forward);  // + the reduce-scatter buffer and the loss gradients
}

TEST_CASE("no-sync accumulation holds unsharded gradients", "[peak][temporaries]") {
  const std::string plan = k_fsdp8 + "";
  const PlanResult sync = test::plan_text(plan, {"training.global_batch=64"});
  const PlanResult nosync = test::plan_text(
      plan, {"training.global_batch=64", "parallel.grad_sync=\"last_micro_batch\""});
  const double grads = test::item_value(sync, "grads");  // the 1/8 shard
  CHECK(phase_value(nosync, "temporaries", 0, Phase::backward) -
            phase_value(sync, "temporaries", 0, Phase::backward) ==
        Approx(7 * grads));
}

TEST_CASE("PyTorch DDP keeps a second copy of the gradients unless they are bucket views",
          "[peak][temporaries]") {
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n"
      "gpu_memory = \"200 GiB\"\n";
  const PlanResult copy = test::plan_text(plan);
  const PlanResult view = test::plan_text(plan, {"parallel.gradient_as_bucket_view=true"});
  CHECK(phase_value(copy, "temporaries", 0, Phase::backward) -
            phase_value(view, "temporaries", 0, Phase::backward) ==
        Approx(test::item_value(copy, "grads")));
}

TEST_CASE("fixed overheads: context, NCCL per communicator, fragmentation of the dynamic part",
          "[peak][overheads]") {
  const PlanResult p = test::plan_text(
      "[model]\npreset = \"llama-3.1-70b\"\n[parallel]\ntp = 8\npp = 4\n[cluster]\n"
      "gpu = \"h100-sxm5-80gb\"\nnodes = 8\nnccl_channels = 16\nnccl_buffer = \"10 MiB\"\n");
  const LineItem* ctx = find_item(p.stages[0].items, ItemId::overhead_cuda_context);
  REQUIRE(ctx);
  CHECK(ctx->kind == Kind::assumed);
  CHECK(ctx->value == 1.25 * 1024 * 1024 * 1024);  // the H100 preset
  // world, tp, dp, pp: 4 rings of 16 channels × 2 connections × 10 MiB.
  CHECK(test::item_value(p, "overhead.nccl") == 4 * 16 * 2 * 10.0 * 1024 * 1024);
  const StageMemory& st = p.stages[0];
  double dynamic = 0;
  for (const LineItem& i : st.items)
    if (i.id.rfind("activations", 0) == 0 || i.id == "logits" || i.id == "temporaries")
      dynamic += i.value;
  // PyTorch's caching allocator as it comes: 0.3 of the dynamic memory.
  CHECK(p.input.cluster.fragmentation == 0.3);
  CHECK(test::item_value(p, "overhead.fragmentation") == Approx(0.3 * dynamic).margin(1));
}

TEST_CASE("the allocator's reserve: expandable segments, and never past the GPU's memory",
          "[peak][overheads]") {
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 8192\n[parallel]\n"
      "zero = \"fsdp\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  auto dynamic = [](const PlanResult& p, int s) {
    double d = 0;
    for (const LineItem& i : p.stages[s].items)
      if (i.id.rfind("activations", 0) == 0 || i.id == "logits" || i.id == "temporaries")
        d += i.value;
    return d;
  };
  // Recompute keeps the phase well inside 80 GB: the reserve is its share of the dynamic part,
  // 0.3 by default and 0.1 with PYTORCH_ALLOC_CONF=expandable_segments:True.
  const PlanResult caching = test::plan_text(plan, {"training.recompute=\"full\""});
  const PlanResult expandable =
      test::plan_text(plan, {"training.recompute=\"full\"", "training.expandable_segments=true"});
  CHECK(test::item_value(caching, "overhead.fragmentation") ==
        Approx(0.3 * dynamic(caching, 0)).margin(1));
  CHECK(test::item_value(expandable, "overhead.fragmentation") ==
        Approx(0.1 * dynamic(expandable, 0)).margin(1));
  // A given cluster.fragmentation wins over both.
  const PlanResult given =
      test::plan_text(plan, {"training.recompute=\"full\"", "training.expandable_segments=true",
                             "cluster.fragmentation=0.2"});
  CHECK(test::item_value(given, "overhead.fragmentation") ==
        Approx(0.2 * dynamic(given, 0)).margin(1));
  // Without recompute the allocated part is ~70 GiB: 0.3 of ~54 GiB of dynamic memory would
  // pass 80 GB, but the allocator frees its cache and retries before it reports OOM, so the
  // reserve is what the GPU has left and the peak is the GPU's memory.
  const PlanResult full = test::plan_text(plan);
  const double cap = static_cast<double>(full.input.cluster.gpu.memory_bytes);
  const double reserve = test::item_value(full, "overhead.fragmentation");
  CHECK(reserve < 0.3 * dynamic(full, 0) - 1e9);
  CHECK(full.stages[0].peak_bytes == Approx(cap).margin(1));
  CHECK(full.verdict.fits);
  CHECK(full.verdict.headroom == Approx(0).margin(1e-9));  // at the edge: check's headroom fails it
}

TEST_CASE("offloaded optimizer state moves to host memory", "[peak][host]") {
  const std::string plan = k_fsdp8 + "host_memory = \"2 TiB\"\n";
  const PlanResult gpu = test::plan_text(plan);
  const PlanResult off = test::plan_text(plan, {"parallel.offload=\"optimizer\""});
  CHECK(test::item_value(off, "optimizer.m") == 0);
  CHECK(test::item_value(off, "master") == 0);
  const LineItem* host = find_item(off.host.items, ItemId::host_offload);
  REQUIRE(host);
  const double moved = test::item_value(gpu, "optimizer.m") + test::item_value(gpu, "optimizer.v") +
                       test::item_value(gpu, "master") + test::item_value(gpu, "grads");
  CHECK(host->value == Approx(8 * moved));
  CHECK(off.host.capacity_bytes == 2.0 * 1024 * 1024 * 1024 * 1024);
  CHECK(off.host.fits);
}

TEST_CASE("host memory: checkpoint staging, data workers, and a verdict when a size is given",
          "[peak][host]") {
  const PlanResult p =
      test::plan_text(k_fsdp8 + "host_memory = \"64 GiB\"\n",
                      {"training.data_workers=4", "training.data_worker_memory=2 GiB"});
  CHECK(find_item(p.host.items, ItemId::host_checkpoint_staging));
  CHECK(find_item(p.host.items, ItemId::host_data_workers)->value ==
        8 * 4 * 2.0 * 1024 * 1024 * 1024);
  CHECK_FALSE(p.host.fits);  // 64 GiB is not enough for 8 ranks' staging and workers
}

TEST_CASE("checkpoint staging counts each replicated tensor once", "[peak][host]") {
  // torch.distributed.checkpoint writes a replicated tensor from one rank (dedup_save_plans):
  // 8B under DDP on one node stages one checkpoint (89.75 GiB), not eight; on two nodes each
  // stages half.
  const std::string ddp =
      "[model]\npreset = \"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  const PlanResult p = test::plan_text(ddp);
  const LineItem* size = find_item(p.reliability, ItemId::checkpoint_size);
  REQUIRE(size);
  CHECK(find_item(p.host.items, ItemId::host_checkpoint_staging)->value == Approx(size->value));
  const PlanResult two = test::plan_text(ddp, {"cluster.nodes=2"});
  CHECK(find_item(two.host.items, ItemId::host_checkpoint_staging)->value ==
        Approx(size->value / 2));
  // Fully sharded on one node: the node's GPUs hold one copy of every shard.
  const PlanResult sharded = test::plan_text(k_fsdp8);
  CHECK(find_item(sharded.host.items, ItemId::host_checkpoint_staging)->value ==
        Approx(find_item(sharded.reliability, ItemId::checkpoint_size)->value));
}

TEST_CASE("max finds the largest micro-batch by bisection over the ledger", "[peak][max]") {
  const config::LoadedPlan loaded = test::load_text(k_fsdp8);
  const double limit = static_cast<double>(loaded.input.cluster.gpu.memory_bytes);
  const MaxFit fit = find_max(loaded.input, MaxKnob::micro_batch, limit);
  REQUIRE(fit.found);
  CHECK(fit.plan.verdict.peak_bytes <= limit);
  CHECK(fit.next_peak_bytes > limit);
  CHECK(fit.evaluations < 20);
  PlanInput next = loaded.input;
  next.training.micro_batch = fit.value + 1;
  next.training.global_batch = next.training.micro_batch * next.parallel.dp;
  CHECK(compute_plan(next).verdict.peak_bytes > limit);
  test::plan_checked(fit.plan.input);
}

TEST_CASE("max seq_len respects cp and sequence-parallel multiples", "[peak][max]") {
  config::LoadedPlan loaded = test::load_text(k_fsdp8, {"parallel.cp=2"});
  const MaxFit fit = find_max(loaded.input, MaxKnob::seq_len,
                              static_cast<double>(loaded.input.cluster.gpu.memory_bytes));
  REQUIRE(fit.found);
  CHECK(fit.step == 2);
  CHECK(fit.value % 2 == 0);
  const MaxFit none = find_max(loaded.input, MaxKnob::seq_len, 1e9);  // 1 GB: nothing fits
  CHECK_FALSE(none.found);
}

TEST_CASE("a fused cross-entropy keeps only the 16-bit logits", "[peak][logits]") {
  // flash-attn's CrossEntropyLoss (llm-foundry's fused_crossentropy): the saved 16-bit logits
  // and a per-row fp32 log-sum-exp; backward writes a 16-bit gradient. 4096 tokens, 32,000
  // vocabulary entries: 2 B per logit + 4 B per token instead of 4 B per logit saved, and
  // 2 B per logit instead of 8 in backward.
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\n[training]\nseq_len = 4096\nloss = \"fused\"\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 1\n";
  const PlanResult p = test::plan_text(plan);
  const double logits = 4096.0 * 32000;
  CHECK(test::item_value(p, "logits") == 2 * logits + 4 * 4096.0);
  const PlanResult standard = test::plan_text(plan, {"training.loss=\"standard\""});
  CHECK(test::item_value(standard, "logits") == 4 * logits);
  CHECK(test::phase_value(standard, "temporaries", 0, Phase::backward) -
            test::phase_value(p, "temporaries", 0, Phase::backward) ==
        Approx(6 * logits));
}
