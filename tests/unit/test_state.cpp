// The persistent-state ledger against docs/formulas.md#state (the worked examples, 001, 003, 004).
#include <catch2/catch.hpp>

#include <string>

#include "helpers.hpp"

using namespace trainledger;
using test::item_value;
using test::phase_value;
using test::plan_text;

namespace {

std::string count_only(double n, const std::string& training, const std::string& parallel,
                       int gpus) {
  return "[model]\nparams = " + std::to_string(n) + "\n[training]\nframework = \"generic\"\n" +
         training + "\n[parallel]\n" + parallel +
         "\n[cluster]\ngpu_memory = \"1 TB\"\ngpus_per_node = " + std::to_string(gpus) + "\n";
}

double total(const PlanResult& p, int stage = 0) { return test::state_bytes(p, stage); }

}  // namespace

TEST_CASE("7B mixed-precision AdamW: 2+2+4+4+4 = 16 B/param = 112 GB", "[state][golden]") {
  const PlanResult p = plan_text(count_only(7e9, "precision = \"bf16\"", "", 1));
  CHECK(item_value(p, "params") == 14e9);
  CHECK(item_value(p, "grads") == 14e9);
  CHECK(item_value(p, "optimizer.m") == 28e9);
  CHECK(item_value(p, "optimizer.v") == 28e9);
  CHECK(item_value(p, "master") == 28e9);
  CHECK(total(p) == 112e9);
}

TEST_CASE("7B fp32 AdamW: also 112 GB, with no master copy", "[state][golden]") {
  const PlanResult p = plan_text(count_only(7e9, "precision = \"fp32\"", "", 1));
  CHECK(item_value(p, "params") == 28e9);
  CHECK(item_value(p, "grads") == 28e9);
  CHECK(item_value(p, "master") == 0);
  CHECK(total(p) == 112e9);
  const LineItem* master = find_item(p.stages[0].items, ItemId::master);
  REQUIRE(master);
  CHECK(master->label == "no master copy: fp32 weights are the master");
}

TEST_CASE("7B with 8-bit Adam: 2+2+1+1+4 = 10 B/param = 70 GB (37.5 % saved)", "[state][golden]") {
  const PlanResult p = plan_text(count_only(7e9, "optimizer = \"adamw-8bit\"", "", 1));
  // 1 B per state plus one fp32 absmax per 256-element block (bitsandbytes).
  CHECK(item_value(p, "optimizer.m") == Approx(7e9 * (1 + 4.0 / 256)));
  CHECK(total(p) / 1e9 == Approx(70).margin(0.5));
  CHECK(1 - total(p) / 112e9 == Approx(0.375).margin(0.005));
}

TEST_CASE("ZeRO stages over 8 ranks, 7B: 38.5 / 26.25 / 14 GB", "[state][golden][zero]") {
  const std::string t = "global_batch = 8";
  CHECK(total(plan_text(count_only(7e9, t, "zero = 1", 8))) == 38.5e9);
  CHECK(total(plan_text(count_only(7e9, t, "zero = 2", 8))) == 26.25e9);
  CHECK(total(plan_text(count_only(7e9, t, "zero = 3", 8))) == 14e9);
  CHECK(total(plan_text(count_only(7e9, t, "zero = \"fsdp\"", 8))) == 14e9);
}

TEST_CASE("ZeRO stages over 8 ranks, 13B: DP 208, ZeRO-1 71.5, ZeRO-3 26 GB",
          "[state][golden][zero]") {
  CHECK(total(plan_text(count_only(13e9, "", "zero = 0", 8))) == 208e9);
  CHECK(total(plan_text(count_only(13e9, "", "zero = 1", 8))) == 71.5e9);
  CHECK(total(plan_text(count_only(13e9, "", "zero = 3", 8))) == 26e9);
}

TEST_CASE("ZeRO stages over 8 ranks, 1B: 16 / 5.5 / 3.75 / 2 GB", "[state][golden][zero]") {
  CHECK(total(plan_text(count_only(1e9, "", "zero = 0", 8))) == 16e9);
  CHECK(total(plan_text(count_only(1e9, "", "zero = 1", 8))) == 5.5e9);
  CHECK(total(plan_text(count_only(1e9, "", "zero = 2", 8))) == 3.75e9);
  CHECK(total(plan_text(count_only(1e9, "", "zero = 3", 8))) == 2e9);
}

TEST_CASE("8B on 4 GPUs: 128 GB of state in all, 32 GB per GPU with ZeRO-3",
          "[state][golden][zero]") {
  const PlanResult ddp = plan_text(count_only(8e9, "", "zero = 0", 4));
  CHECK(total(ddp) == 128e9);
  const PlanResult z3 = plan_text(count_only(8e9, "", "zero = 3", 4));
  CHECK(total(z3) == 32e9);
  CHECK(z3.derived.shard_group == 4);
}

TEST_CASE("plain SGD keeps no optimizer state: 8 B/param", "[state][golden]") {
  const PlanResult p = plan_text(count_only(7e9, "optimizer = \"sgd\"", "", 1));
  CHECK(!find_item(p.stages[0].items, ItemId::optimizer_m));
  CHECK(!find_item(p.stages[0].items, ItemId::optimizer_state));
  CHECK(total(p) == 8 * 7e9);
}

TEST_CASE("SGD with momentum and Lion keep one state each", "[state]") {
  const PlanResult sgd = plan_text(count_only(1e9, "optimizer = \"sgd-momentum\"", "", 1));
  CHECK(item_value(sgd, "optimizer.state") == 4e9);
  CHECK(total(sgd) == 12e9);
  const PlanResult lion =
      plan_text(count_only(1e9, "optimizer = \"lion\"\noptimizer_dtype = \"bf16\"", "", 1));
  CHECK(item_value(lion, "optimizer.state") == 2e9);
}

TEST_CASE("Megatron fp32 main_grad: 2+4+4+4+4 = 18 B/param", "[state][golden]") {
  const PlanResult p = plan_text(count_only(1e9, "grad_dtype = \"fp32\"", "", 1));
  CHECK(item_value(p, "grads") == 4e9);
  CHECK(total(p) == 18e9);
}

TEST_CASE("pure bf16 with bf16 Adam states and no master: 8 B/param", "[state]") {
  const PlanResult p =
      plan_text(count_only(1e9, "master_weights = false\noptimizer_dtype = \"bf16\"", "", 1));
  CHECK(item_value(p, "master") == 0);
  CHECK(item_value(p, "optimizer.m") == 2e9);
  CHECK(total(p) == 8e9);
}

TEST_CASE("1B total, 1e7 trainable: 2 GB + 1e7 × 14 B = 2.14 GB", "[state][golden]") {
  const PlanResult p = plan_text(count_only(1e9, "trainable_params = 1e7", "", 1));
  CHECK(item_value(p, "params") == 2e9);
  CHECK(total(p) == 2.14e9);
  CHECK(p.derived.trainable_params == 1e7);
}

TEST_CASE("HSDP: TP 2 × DP 8 with 2 replicas × 4 shards", "[state][golden][zero]") {
  // 16 processes; the TP shard's state is split over the 4-rank shard group.
  const PlanResult p = plan_text(count_only(8e9, "micro_batch = 2\nglobal_batch = 64",
                                            "tp = 2\ndp = 8\nzero = 3\nzero_shard_size = 4", 8));
  CHECK(p.derived.world_size == 16);
  CHECK(p.derived.shard_group == 4);
  CHECK(p.derived.grad_accum == 4);  // micro 2 × DP 8 × accumulation 4 = 64
  CHECK(total(p) == 16.0 * 8e9 / 2 / 4);
}

TEST_CASE("tensor parallelism splits matrices but replicates norms", "[state][tp]") {
  const std::string base =
      "[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu = \"a100-sxm4-80gb\"\n";
  const PlanResult one = plan_text(base, {"parallel.tp=1", "cluster.gpus_per_node=1"});
  const PlanResult two = plan_text(base, {"parallel.tp=2", "cluster.gpus_per_node=2"});
  // The 16-bit weights at backward (PyTorch autocast: they are not held at the optimizer step).
  const double p1 = phase_value(one, "params", 0, Phase::backward) / 2;
  const double p2 = phase_value(two, "params", 0, Phase::backward) / 2;
  // Norms (2 per layer + final) stay whole on each rank: 65 × 4096 weights.
  const double norms = (2.0 * 32 + 1) * 4096;
  CHECK(p2 == (p1 - norms) / 2 + norms);
}

TEST_CASE("pipeline stages hold the embedding first and the LM head last", "[state][pp]") {
  const PlanResult p = plan_text(
      "[model]\npreset = \"llama-2-7b\"\n[parallel]\npp = 4\n[cluster]\ngpu = "
      "\"a100-sxm4-80gb\"\ngpus_per_node = 4\n");
  REQUIRE(p.stages.size() == 4);
  CHECK(p.stages[0].role == "first");
  CHECK(p.stages[1].role == "middle");
  CHECK(p.stages[3].role == "last");
  const double layer = 202383360;
  CHECK(item_value(p, "params", 0) / 2 == 8 * layer + 32000.0 * 4096);
  CHECK(item_value(p, "params", 1) / 2 == 8 * layer);
  CHECK(item_value(p, "params", 3) / 2 == 8 * layer + 32000.0 * 4096 + 4096);
  CHECK(p.worst_stage == 3);  // the head and the final norm
}

TEST_CASE("tied embeddings: one tensor without pp, a copy on the last stage with pp",
          "[state][pp]") {
  const std::string base =
      "[model]\npreset = \"gpt2-xl\"\n[training]\nseq_len = 1024\n"
      "[cluster]\ngpu = \"a100-sxm4-80gb\"\n";
  auto weights = [](const PlanResult& p, int stage) {
    return phase_value(p, "params", stage, Phase::backward) / 2;
  };
  const PlanResult one = plan_text(base, {"cluster.gpus_per_node=1"});
  CHECK(weights(one, 0) == 1557611200);
  const PlanResult two = plan_text(base, {"parallel.pp=2", "cluster.gpus_per_node=2"});
  const double emb = 50257.0 * 1600;
  CHECK(weights(two, 0) + weights(two, 1) == 1557611200 + emb);
}

TEST_CASE("uneven stage_layers follow the split", "[state][pp]") {
  const PlanResult p = plan_text(
      "[model]\npreset = \"llama-2-7b\"\n[parallel]\npp = 2\nstage_layers = [15, 17]\n"
      "[cluster]\ngpu = \"a100-sxm4-80gb\"\ngpus_per_node = 2\n");
  CHECK(p.stages[0].layers == 15);
  CHECK(p.stages[1].layers == 17);
}

TEST_CASE("GQA with tp above kv_heads replicates one kv head per rank", "[state][tp]") {
  // Llama-3.1-8B: 8 kv heads; tp 16 would need replication (but 32 heads / 16 = 2 q heads).
  const PlanResult p = plan_text(
      "[model]\npreset = \"llama-3.1-8b\"\n[parallel]\ntp = 16\n[cluster]\ngpu = "
      "\"h100-sxm5-80gb\"\nnodes = 2\n");
  const double h = 4096, d = 128;
  const double per_layer = h * 2 * d + 2 * h * d + 2 * d * h + 3 * h * 14336.0 / 16 + 2 * h;
  const double expected = 32 * per_layer + 2 * (128256.0 / 16) * h + h;
  CHECK(item_value(p, "params") / 2 == Approx(expected));
}

TEST_CASE("MoE experts are split by expert parallelism and sharded over dp/ep", "[state][moe]") {
  const PlanResult p = plan_text(
      "[model]\npreset = \"mixtral-8x7b\"\n[parallel]\nep = 8\nzero = 1\n[cluster]\ngpu = "
      "\"h100-sxm5-80gb\"\n");
  const double experts = 32.0 * 8 * 3 * 4096 * 14336;
  const double dense = 46702792704.0 - experts;
  CHECK(item_value(p, "params") == Approx(2 * (dense + experts / 8)));
  // Dense states shard over 8 ranks, expert states over 8 / ep = 1.
  CHECK(item_value(p, "optimizer.m") == Approx(4 * (dense / 8 + experts / 8)));
}

TEST_CASE("LoRA on Llama-2-7B, r = 8 on q and v: 4,194,304 adapters (0.062 %)",
          "[state][golden][lora]") {
  const PlanResult p = plan_text(
      "[model]\npreset = \"llama-2-7b\"\n[training]\nfinetune = \"lora\"\nlora_rank = 8\n"
      "lora_targets = [\"q_proj\", \"v_proj\"]\nframework = \"generic\"\n[cluster]\n"
      "gpu = \"a100-sxm4-80gb\"\ngpus_per_node = 1\n");
  CHECK(p.derived.trainable_params == 4194304);
  CHECK(p.derived.trainable_params / p.derived.params * 100 == Approx(0.0622).margin(0.0005));
  CHECK(item_value(p, "grads") == 2 * 4194304);
  CHECK(item_value(p, "params.frozen") == 2 * 6738415616.0);
  CHECK(item_value(p, "params") == 2 * 4194304.0);
  // The checkpoint holds the adapters and their optimizer state, not the frozen base
  // (PEFT's save_pretrained writes the adapter weights only).
  CHECK(value_of(p.reliability, ItemId::checkpoint_size) == (2 + 4 + 8) * 4194304.0);
  // The trainable state (the source documents' "≈0.08 GB"): 16 B per adapter parameter.
  const double adapters_state = 2 * 4194304.0 + item_value(p, "grads") +
                                item_value(p, "optimizer.m") + item_value(p, "optimizer.v") +
                                item_value(p, "master");
  CHECK(adapters_state == 16 * 4194304.0);
}

TEST_CASE("QLoRA: NF4 base at 0.5 B/param plus block constants, 16-bit embeddings and head",
          "[state][golden][lora]") {
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\n[training]\nfinetune = \"qlora\"\n[cluster]\n"
      "gpu = \"rtx-4090-24gb\"\ngpus_per_node = 1\n";
  const PlanResult dq = plan_text(plan);
  const double matrices = 32.0 * (4 * 4096.0 * 4096 + 3 * 4096.0 * 11008);
  CHECK(item_value(dq, "params.nf4") == Approx(0.5 * matrices).margin(1));
  // Double quantization: 8-bit absmax per 64 + fp32 per 256 blocks ≈ 0.127 bit/param.
  CHECK(item_value(dq, "params.nf4_constants") * 8 / matrices == Approx(0.127).margin(0.001));
  const double unquantized = 6738415616.0 - matrices;  // embeddings, head, norms
  CHECK(item_value(dq, "params.frozen") == Approx(2 * unquantized).margin(1));
  CHECK(item_value(dq, "params") == 2 * 4194304.0);
  const PlanResult single = plan_text(plan, {"training.double_quant=false"});
  CHECK(item_value(single, "params.nf4_constants") == Approx(matrices * 4 / 64).margin(1));
}

TEST_CASE("Adafactor keeps a factored second moment", "[state]") {
  const PlanResult p = plan_text(
      "[model]\npreset = \"llama-2-7b\"\n[training]\noptimizer = \"adafactor\"\n"
      "[cluster]\ngpu = \"a100-sxm4-80gb\"\ngpus_per_node = 1\n");
  const double h = 4096, f = 11008;
  const double per_layer = 4 * (h + h) + 2 * (h + f) + (f + h) + 2 * h;
  const double expected = 32 * per_layer + (32000 + h) * 2 + h;
  CHECK(item_value(p, "optimizer.state") == 4 * expected);
  CHECK(!find_item(p.stages[0].items, ItemId::optimizer_m));
}

TEST_CASE("fp8 training keeps bf16 weights and cached fp8 copies", "[state]") {
  const PlanResult p = plan_text(count_only(1e9, "precision = \"fp8\"", "", 1));
  CHECK(item_value(p, "params") == 2e9);
  // Transformer Engine caches the FP8 data and, where FP8 GEMMs are TN-only (Hopper, and a GPU
  // that names no block-scaled peak), its transpose: 2 B per GEMM weight.
  CHECK(item_value(p, "params.fp8") == 2e9);
  const LineItem* copies = find_item(p.stages[0].items, ItemId::params_fp8);
  REQUIRE(copies);
  CHECK(copies->kind == Kind::estimated);
  CHECK(copies->label.find("tensorwise") != std::string::npos);
  // A GPU with block-scaled tensor cores (an fp4 peak) reads one copy in both layouts.
  const PlanResult blackwell = plan_text(count_only(1e9, "precision = \"fp8\"", "", 1) +
                                         "peak_flops = { bf16 = \"2.25 PFLOP/s\", fp8 = \"4.5 "
                                         "PFLOP/s\", fp4 = \"9 PFLOP/s\" }\nmemory_bandwidth = "
                                         "\"8 TB/s\"\n");
  CHECK(item_value(blackwell, "params.fp8") == 1e9);
}

TEST_CASE("formula text carries the terms of the value", "[state]") {
  const PlanResult p = plan_text(count_only(7e9, "global_batch = 8", "zero = 1", 8));
  const LineItem* m = find_item(p.stages[0].items, ItemId::optimizer_m);
  REQUIRE(m);
  CHECK(m->formula == "4 B/param × 7,000,000,000 trainable params / 8 shard ranks");
  CHECK(m->value == 3.5e9);
  CHECK(m->label == "Adam m (fp32, ZeRO-1 shard)");
  CHECK(m->source.find("Rajbhandari") != std::string::npos);
}
