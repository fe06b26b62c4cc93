// Numbers that were wrong, each pinned at its corrected value with the source of the
// correction (docs/formulas.md).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "collectives.hpp"
#include "helpers.hpp"
#include "timing.hpp"
#include "trainledger/config.hpp"
#include "trainledger/layout_search.hpp"
#include "trainledger/whatif.hpp"

using namespace trainledger;

namespace {

// Mixtral 8x7B on 16 H100s: tp 2, ep 4, dp 8.
const std::string k_mixtral = R"(
[model]
preset = "mixtral-8x7b"
[training]
seq_len = 4096
global_batch = 16
[parallel]
tp = 2
ep = 4
dp = 8
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 2
)";

// Llama 3 405B as Dubey et al. 2024 (§3.3.2) trained it on 8,192 H100s: tp 8, pp 16, dp 64,
// seq 8192, 16 M tokens per step, the first and last stages one layer short.
const std::string k_llama3_405b = R"(
[model]
preset = "llama-3.1-405b"
[training]
seq_len = 8192
micro_batch = 1
global_batch = 2048
framework = "megatron"
[parallel]
tp = 8
pp = 16
dp = 64
sequence_parallel = true
zero = 3
reshard_after_forward = false
stage_layers = [7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7]
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 1024
)";

const LineItem& comm(const PlanResult& p, ItemId id) {
  const LineItem* i = find_item(p.communication, id);
  REQUIRE(i);
  return *i;
}

double calls_of(const LineItem& item, const std::string& collective) {
  double calls = 0;
  for (const Collective& c : item.collectives)
    if (c.collective == collective) calls += c.calls_per_step;
  return calls;
}

}  // namespace

TEST_CASE("MoE expert gradients are reduced over the expert-data-parallel group",
          "[corrections][comm]") {
  // Megatron-Core parallel_state: experts' gradients are averaged over
  // expert_data_parallel_group, dp × cp / ep ranks. Mixtral 8x7B, tp 2, ep 4, dp 8, DDP:
  // 1.75 × 1.6 GB of dense gradients over 8 ranks + 1.0 × 11.3 GB of expert gradients over
  // 2 ranks = 13.1 GiB per GPU per step (over all 8 ranks it would be 21.0 GiB).
  // bf16 gradients (generic conventions); fp32 ones (PyTorch, Megatron) move twice the bytes.
  const PlanResult p = test::plan_text(k_mixtral, {"training.framework=\"generic\""});
  const LineItem& dp = comm(p, ItemId::comm_dp);
  CHECK(dp.value / k_gib == Approx(13.12).margin(0.01));
  CHECK(comm(test::plan_text(k_mixtral), ItemId::comm_dp).value / k_gib ==
        Approx(26.24).margin(0.01));
  REQUIRE(dp.collectives.size() == 2);
  CHECK(dp.collectives[0].group_size == 8);
  CHECK(dp.collectives[1].group_size == 2);  // the expert-data-parallel group
}

TEST_CASE("full recompute repeats the expert all-to-all and the context-parallel ring",
          "[corrections][comm]") {
  const PlanResult none = test::plan_text(k_mixtral, {"training.recompute=\"none\""});
  const PlanResult full = test::plan_text(k_mixtral, {"training.recompute=\"full\""});
  // Dispatch + combine, forward and backward: 4 per layer; a recomputed forward adds 2.
  CHECK(calls_of(comm(full, ItemId::comm_ep), "all-to-all") ==
        1.5 * calls_of(comm(none, ItemId::comm_ep), "all-to-all"));
  const std::string ring = R"(
[model]
preset = "llama-3.1-8b"
[training]
seq_len = 32768
[parallel]
cp = 4
dp = 2
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult cp_none = test::plan_text(ring, {"training.recompute=\"none\""});
  const PlanResult cp_full = test::plan_text(ring, {"training.recompute=\"full\""});
  // K/V forward, K/V and their gradients backward: 3 rounds per layer; a recomputed forward
  // adds one.
  CHECK(calls_of(comm(cp_full, ItemId::comm_cp), "send/recv") * 3 ==
        calls_of(comm(cp_none, ItemId::comm_cp), "send/recv") * 4);
}

TEST_CASE("FP8 runs attention and the LM head at the bf16 peak", "[corrections][time]") {
  // Transformer Engine and Megatron-LM cast only the linear layers to FP8.
  const std::string plan = R"(
[model]
preset = "llama-3.1-8b"
[training]
seq_len = 8192
precision = "fp8"
[parallel]
dp = 8
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult fp8 = test::plan_text(plan);
  const LineItem* compute = find_item(fp8.time, ItemId::time_compute);
  REQUIRE(compute);
  bool bf16_term = false;
  for (const Term& t : compute->terms) bf16_term = bf16_term || t.key == "peak_flops_bf16";
  CHECK(bf16_term);
  CHECK(compute->formula.find("FLOP/s bf16 peak") != std::string::npos);
  // With the bf16 peak raised to the FP8 peak the step would be faster.
  const PlanResult all_fp8 = test::plan_text(
      plan, {"cluster.peak_flops={ bf16 = \"1978.9 TFLOP/s\", fp8 = \"1978.9 TFLOP/s\" }"});
  CHECK(value_of(all_fp8.time, ItemId::time_compute) < compute->value);
  // fp8 GEMMs at a smaller share of their peak than bf16's (calibrate probe's fp8_matmul_ratio:
  // 0.85 on one H200 at this model's shapes, tests/reference/replica/h200-20261204): the linear
  // layers' FLOPs take 1/0.85 as long; attention and the LM head keep the bf16 rate.
  bool ratio_term = false;
  for (const Term& t : compute->terms) ratio_term = ratio_term || t.key == "fp8_matmul_ratio";
  CHECK(ratio_term);
  const PlanResult slower = test::plan_text(plan, {"cluster.fp8_matmul_ratio=0.85"});
  const StageFlops f = stage_flops(fp8.input, 32, true);
  const double gemm_s = static_cast<double>(fp8.derived.grad_accum) * f.gemm /
                        (1978.9e12 * fp8.input.cluster.matmul_efficiency);
  CHECK(value_of(slower.time, ItemId::time_compute) - compute->value ==
        Approx(gemm_s * (1 / 0.85 - 1)).epsilon(1e-6));
  // bf16 plans do not read it.
  const std::string bf16 = "training.precision=\"bf16\"";
  CHECK(value_of(test::plan_text(plan, {bf16, "cluster.fp8_matmul_ratio=0.5"}).time,
                 ItemId::time_step) ==
        value_of(test::plan_text(plan, {bf16}).time, ItemId::time_step));
}

TEST_CASE("a precision the GPU has no peak for is an error, not another peak",
          "[corrections][errors]") {
  CHECK(test::load_errors("[cluster]\ngpu = \"v100-sxm2-32gb\"\n",
                          {"model.preset=\"llama-2-7b\"", "training.precision=\"bf16\""}) ==
        std::vector<std::string>{
            "trainledger: error: --set training.precision=\"bf16\": training.precision (bf16): "
            "Tesla V100-SXM2-32GB has no bf16 peak FLOP/s (cluster.peak_flops); it has fp16, "
            "fp32"});
  CHECK(test::load_errors("[cluster]\ngpu = \"a100-sxm4-80gb\"\n",
                          {"model.preset=\"llama-2-7b\"", "training.precision=\"fp8\""}) ==
        std::vector<std::string>{
            "trainledger: error: --set training.precision=\"fp8\": training.precision (fp8): "
            "NVIDIA A100-SXM4-80GB has no fp8 peak FLOP/s (cluster.peak_flops); it has bf16, "
            "fp16, fp32"});
}

TEST_CASE("DDP with 16-bit gradients upcasts all of them to fp32 for the update",
          "[corrections][memory]") {
  // Megatron-LM's Float16OptimizerWithFloat16Params copies every bf16 gradient into the fp32
  // main parameters' .grad before the step: 4 B per parameter at the optimizer phase.
  const PlanResult p = test::plan_text(R"(
[model]
preset = "llama-2-7b"
[training]
seq_len = 1024
grad_dtype = "bf16"
optimizer_impl = "fused"  # the upcast alone: no foreach copy of the second moments
[parallel]
dp = 8
zero = 0
[cluster]
gpu = "h100-sxm5-80gb"
)");
  const double params = p.derived.params;
  CHECK(test::phase_value(p, "temporaries", 0, Phase::optimizer) == 4 * params);
  // With fp32 gradients (main_grad) there is nothing to upcast.
  const PlanResult fp32 =
      test::plan_text(test::read_file(test::source_path("configs/plans/default.toml")),
                      {"training.grad_dtype=\"fp32\"", "parallel.zero=0"});
  CHECK(test::phase_value(fp32, "temporaries", 0, Phase::optimizer) == 0);
}

TEST_CASE("the default failure rate is the Llama 3 fleet's", "[corrections][reliability]") {
  // Dubey et al. 2024 (The Llama 3 Herd of Models), §3.3.4: 419 unexpected interruptions in
  // 54 days on 16,384 GPUs: 419 / (54 × 24 h × 16,384) = 1.97e-5 per GPU-hour.
  const PlanInput in =
      test::load_text("[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n")
          .input;
  CHECK(in.checkpoint.gpu_failure_rate == Approx(419.0 / (54 * 24 * 16384.0)).epsilon(0.002));
}

TEST_CASE("an inline GPU with a peak but no HBM bandwidth is an error, not zero time",
          "[corrections][errors]") {
  CHECK(test::load_errors("[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu_memory = \"80 GiB\"\n"
                          "peak_flops = { bf16 = \"989 TFLOP/s\" }\n") ==
        std::vector<std::string>{
            "trainledger: error: test.toml:3:2: cluster.memory_bandwidth is needed to time "
            "element-wise kernels and the optimizer step on custom GPU: give it (e.g. "
            "memory_bandwidth = \"3.35 TB/s\") or name a preset with cluster.gpu"});
  CHECK(test::load_errors("[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu_memory = \"80 GiB\"\n"
                          "peak_flops = { bf16 = \"989 TFLOP/s\" }\n"
                          "memory_bandwidth = \"3.35 TB/s\"\n")
            .empty());
}

namespace {

double term_of(const PlanResult& p, ItemId id, const std::string& key) {
  const LineItem* i = find_item(p.time, id);
  REQUIRE(i);
  for (const Term& t : i->terms)
    if (t.key == key) return t.value;
  FAIL("no term " << key);
  return 0;
}

const std::string k_8b_fsdp = R"(
[model]
preset = "llama-3.1-8b"
[training]
seq_len = 8192
micro_batch = 2
[parallel]
zero = 3
[cluster]
gpu = "h100-sxm5-80gb"
)";

}  // namespace

TEST_CASE("FP8 moves its scaling, casts and transposes through HBM", "[corrections][time]") {
  // torchao float8 (dynamic tensorwise scaling) and Transformer Engine (cast_transpose):
  // 7 B per element of every GEMM operand. Llama 3.1 8B, T = 16,384 tokens per layer:
  // inputs h + q + h + f, output gradients q + 2 kv + h + 2 f + h, weights 218,103,808.
  const PlanResult bf16 = test::plan_text(k_8b_fsdp);
  const PlanResult fp8 = test::plan_text(k_8b_fsdp, {"training.precision=\"fp8\""});
  const double T = 16384, h = 4096, q = 4096, kv = 1024, f = 14336;
  const double per_layer = 7 * (T * (h + q + h + f) + T * (q + 2 * kv + h + 2 * f + h) +
                                (2 * h * q + 2 * h * kv + 3 * h * f));
  CHECK(term_of(fp8, ItemId::time_compute, "elementwise_bytes") -
            term_of(bf16, ItemId::time_compute, "elementwise_bytes") ==
        Approx(32 * per_layer));
  // The end-to-end gain stays well under the 2× of the peaks: torchtitan measured 1.28×
  // (benchmarks/llama3_h100_202412_torchtitan.md, Table 1, with torch.compile).
  const double gain = value_of(fp8.time, ItemId::throughput_tokens_per_s_per_gpu) /
                      value_of(bf16.time, ItemId::throughput_tokens_per_s_per_gpu);
  CHECK(gain > 1.2);
  CHECK(gain < 1.45);
}

TEST_CASE("GEMMs move their operands and results through HBM", "[corrections][time]") {
  // Each linear layer's GEMM (M × K input, K × N weight) reads both operands and writes its
  // result once at the least, and so do its two backward GEMMs: 3 × 2 B × (MK + KN + MN) per
  // trainable layer at 16 bits. Llama 3.1 8B, T = 16,384 tokens per micro-batch: q and o
  // (h × q), k and v (h × kv), gate, up and down (h × f); the LM head (h × V) on the last stage.
  const double T = 16384, h = 4096, q = 4096, kv = 1024, f = 14336, V = 128256;
  auto bytes = [&](double M, double K, double N) { return 3 * 2 * (M * K + K * N + M * N); };
  const double layer = 2 * bytes(T, h, q) + 2 * bytes(T, h, kv) + 3 * bytes(T, h, f);
  const PlanResult bf16 = test::plan_text(k_8b_fsdp);
  CHECK(term_of(bf16, ItemId::time_compute, "gemm_bytes") == Approx(32 * layer + bytes(T, h, V)));
  // Under tensor parallelism each rank's weights (and outputs) are a tp-th: the layer's bytes
  // fall by less than tp (every rank reads the whole input).
  const PlanResult tp2 = test::plan_text(k_8b_fsdp, {"parallel.tp=2"});
  const double layer2 = 2 * bytes(T, h, q / 2) + 2 * bytes(T, h, kv / 2) + 3 * bytes(T, h, f / 2);
  CHECK(term_of(tp2, ItemId::time_compute, "gemm_bytes") ==
        Approx(32 * layer2 + bytes(T, h, V / 2)));
  // Full recomputation repeats the forward GEMMs, and their bytes: a third of the layers'.
  const PlanResult full = test::plan_text(k_8b_fsdp, {"training.recompute=\"full\""});
  CHECK(term_of(full, ItemId::time_recompute, "recompute_gemm_bytes") == Approx(32 * layer / 3));
  // At the same FLOPs a narrower model reads more bytes per FLOP: the term's share of the
  // compute time grows as the hidden size falls (the GEMMs of small models reach less of the
  // peak, docs/formulas.md#compute).
  std::string narrow = k_8b_fsdp;
  const std::string preset = "preset = \"llama-3.1-8b\"";
  narrow.replace(narrow.find(preset), preset.size(),
                 "layers = 32\nhidden = 2048\nheads = 16\nkv_heads = 4\nffn = 7168\n"
                 "vocab = 128256\nffn_act = \"swiglu\"\nnorm = \"rmsnorm\"");
  const PlanResult small = test::plan_text(narrow);
  auto share = [&](const PlanResult& p) {
    return term_of(p, ItemId::time_compute, "gemm_bytes") /
           term_of(p, ItemId::time_compute, "gemm_flops");
  };
  CHECK(share(small) > 1.5 * share(bf16));
}

TEST_CASE("Causal flash attention executes half the s² FLOPs, at its own kernel rate",
          "[corrections][time]") {
  // Llama 3.1 8B, T = 16,384 tokens per micro-batch of 2 × 8,192: QKᵀ and AV are
  // 4·T·s·a·d = 4 · 16,384 · 8,192 · 4,096 FLOP per layer forward, 3× with the backward;
  // FlashAttention-2 skips the masked half (Dao 2023, §3.1.1).
  const double full = 3.0 * 4 * 16384.0 * 8192 * 4096 * 32;
  const PlanResult flash = test::plan_text(k_8b_fsdp);
  CHECK(term_of(flash, ItemId::time_compute, "attention_flops") == Approx(full / 2));
  // The H100 preset's rate is PyTorch SDPA's measured one, 0.3 of the bf16 peak.
  const double at_03 = value_of(flash.time, ItemId::time_compute);
  const PlanResult fa3 = test::plan_text(k_8b_fsdp, {"cluster.attention_efficiency=0.6"});
  CHECK(at_03 - value_of(fa3.time, ItemId::time_compute) ==
        Approx(full / 2 / 989.4e12 * (1 / 0.3 - 1 / 0.6)));
  // MFU keeps its stated convention, the full s² terms: only the time changes.
  CHECK(value_of(fa3.time, ItemId::mfu) / value_of(flash.time, ItemId::mfu) ==
        Approx(value_of(flash.time, ItemId::time_step) / value_of(fa3.time, ItemId::time_step)));
  // Eager attention's batched matmuls compute the masked half too, at the GEMM rate.
  const PlanResult eager = test::plan_text(k_8b_fsdp, {"training.attention=\"eager\""});
  CHECK(term_of(eager, ItemId::time_compute, "core_flops") >= full);
  // Without a preset's rate, the GEMMs' efficiency applies (and the report says so).
  std::string plain = k_8b_fsdp;
  const std::string gpu = "gpu = \"h100-sxm5-80gb\"";
  plain.replace(plain.find(gpu), gpu.size(),
                "gpu_memory = \"80 GiB\"\npeak_flops = { bf16 = \"989.4 TFLOP/s\" }\n"
                "memory_bandwidth = \"3.35 TB/s\"\nmatmul_efficiency = 0.6\ngpu_sms = 132\n"
                "intra_node_bandwidth = \"370 GB/s\"");
  const PlanResult inline_gpu = test::plan_text(plain);
  CHECK(value_of(inline_gpu.time, ItemId::time_compute) ==
        Approx(value_of(fa3.time, ItemId::time_compute)).epsilon(1e-9));
}

TEST_CASE("torch.compile fuses element-wise kernels and recomputes the SwiGLU output",
          "[corrections][time]") {
  const PlanResult eager = test::plan_text(k_8b_fsdp);
  const PlanResult compiled = test::plan_text(k_8b_fsdp, {"training.compile=true"});
  CHECK(term_of(compiled, ItemId::time_compute, "elementwise_bytes") <
        term_of(eager, ItemId::time_compute, "elementwise_bytes"));
  // One s·b·f bf16 tensor per layer less: 16,384 × 14,336 × 2 B × 32 layers.
  CHECK(test::phase_value(eager, "activations", 0, Phase::backward) -
            test::phase_value(compiled, "activations", 0, Phase::backward) ==
        16384.0 * 14336 * 2 * 32);
  CHECK(value_of(compiled.time, ItemId::throughput_tokens_per_s_per_gpu) >
        value_of(eager.time, ItemId::throughput_tokens_per_s_per_gpu));
}

TEST_CASE("FSDP2 reshard_after_forward = false: one all-gather per unit, the stage stays gathered",
          "[corrections][comm]") {
  const PlanResult reshard = test::plan_text(k_8b_fsdp);
  const PlanResult keep = test::plan_text(k_8b_fsdp, {"parallel.reshard_after_forward=false"});
  const LineItem& a = comm(reshard, ItemId::comm_dp);
  const LineItem& b = comm(keep, ItemId::comm_dp);
  CHECK(calls_of(b, "all-gather") * 2 == calls_of(a, "all-gather"));
  CHECK(calls_of(b, "reduce-scatter") == calls_of(a, "reduce-scatter"));
  // 32 gathered bf16 layers of 218,112,000 parameters instead of two, and the embedding's unit
  // (torchtitan's own, resharded after its forward only when the layers are).
  CHECK(test::phase_value(keep, "temporaries", 0, Phase::forward) -
            test::phase_value(reshard, "temporaries", 0, Phase::forward) ==
        Approx(30 * 2 * 218112000.0 + 2.0 * 128256 * 4096));
  // Only meaningful with FSDP2's ZeRO-3.
  CHECK_THROWS(test::plan_text(
      k_8b_fsdp, {"training.framework=\"deepspeed\"", "parallel.reshard_after_forward=false"}));
  CHECK_THROWS(
      test::plan_text(k_8b_fsdp, {"parallel.zero=1", "parallel.reshard_after_forward=false"}));
}

TEST_CASE("Llama 3 405B's 8,192-GPU layout fits in 80 GB once gradients are sharded",
          "[corrections][memory]") {
  // Dubey et al. 2024 (The Llama 3 Herd of Models) §3.3.2: tp 8, pp 16, dp 64 on H100 80GB,
  // seq 8192, 16 M tokens per step, first and last stages one layer short; FSDP shards
  // optimizer state and gradients and does not reshard after forward. With ZeRO-1 (fp32
  // gradients held whole) the planner said 99 GiB; sharded gradients and fused kernels fit.
  const std::string plan = k_llama3_405b;
  const PlanResult p = test::plan_text(plan);
  CHECK(p.verdict.fits);
  // Stage 1 holds the most: 15 micro-batches of 8 layers in flight (the allocator's reserve
  // takes every stage to the GPU's memory, so it is compared without it).
  const auto allocated = [&](int s) {
    return p.stages[s].peak_bytes - test::item_value(p, "overhead.fragmentation", s);
  };
  for (int s : {0, 2, 15}) CHECK(allocated(1) > allocated(s));
  const PlanResult z1 =
      test::plan_text(plan, {"parallel.zero=1", "parallel.reshard_after_forward=true"});
  CHECK_FALSE(z1.verdict.fits);
}

TEST_CASE("all-gather and reduce-scatter get their own busbw where NVLS speeds up all-reduce",
          "[corrections][comm]") {
  // H100: ~480 GB/s all-reduce busbw with NVLink SHARP, ~370 GB/s for the collectives it does
  // not accelerate (NVIDIA/nccl-tests#212).
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[parallel]\ntp = 8\n[cluster]\n"
      "gpu = \"h100-sxm5-80gb\"\nintra_node_latency = \"0 s\"\n";
  const PlanResult plain = test::plan_text(plan);
  const LineItem& ar = comm(plain, ItemId::comm_tp);
  CHECK(calls_of(ar, "all-reduce") > 0);
  REQUIRE(ar.time_s);
  CHECK(*ar.time_s == Approx(ar.value / 480e9));
  const PlanResult sp = test::plan_text(plan, {"parallel.sequence_parallel=true"});
  const LineItem& ag = comm(sp, ItemId::comm_tp);
  CHECK(calls_of(ag, "all-reduce") == 0);
  REQUIRE(ag.time_s);
  CHECK(*ag.time_s == Approx(ag.value / 370e9));
  CHECK(sp.input.provenance.of("cluster.intra_node_gather_bandwidth") == Source::preset);
  // Without the key every collective uses intra_node_bandwidth.
  const PlanResult a100 =
      test::plan_text(plan, {"cluster.gpu=\"a100-sxm4-80gb\"", "parallel.sequence_parallel=true"});
  const LineItem& a = comm(a100, ItemId::comm_tp);
  CHECK(*a.time_s == Approx(a.value / a100.input.cluster.intra_node_bandwidth));
}

TEST_CASE("failure rates split by component: per GPU and per node", "[corrections][reliability]") {
  // 1,024 nodes of 8 GPUs: M = 1 / (8,192 × 1e-5 + 1,024 × 4e-5) h = 1 / 0.12288 h.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 1024\n"
      "[checkpoint]\ngpu_failure_rate = \"1e-5 /h\"\nnode_failure_rate = \"4e-5 /h\"\n";
  const PlanResult p = test::plan_text(plan);
  CHECK(value_of(p.reliability, ItemId::mtbf) == Approx(3600 / (8192 * 1e-5 + 1024 * 4e-5)));
  const PlanResult gpu_only = test::plan_text(plan, {"checkpoint.node_failure_rate=0 /h"});
  CHECK(value_of(gpu_only.reliability, ItemId::mtbf) == Approx(3600 / (8192 * 1e-5)));
}

TEST_CASE("offloading the optimizer costs the host's step and the PCIe return",
          "[corrections][time]") {
  // ZeRO-Offload (Ren et al. 2021, §4). Llama 2 7B, ZeRO-2 over 8 A100s, optimizer offloaded:
  // each rank's fp32 gradients, master weights, m and v (16 B per parameter of its 1/8 shard)
  // stream in and out of the node's 200 GB/s of DRAM for all 8 ranks, and the shard's updated
  // bf16 parameters return over 25 GB/s of PCIe.
  const double n = 6738415616.0;
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\n[training]\nseq_len = 4096\n[parallel]\nzero = 2\n"
      "offload = \"optimizer\"\n[cluster]\ngpu = \"a100-sxm4-80gb\"\n";
  // Named: zero = 2 alone infers DeepSpeed, whose 16-bit ZeRO-2 gradients would be 14 B.
  const PlanResult p = test::plan_text(plan, {"training.framework=\"pytorch\""});
  const LineItem* off = find_item(p.time, ItemId::time_offload);
  REQUIRE(off);
  const double host_step = 2 * (16 * n / 8) * 8 / 200e9;
  const double upload = (n / 8) * 2 / 25e9;
  CHECK(off->value == Approx(host_step + upload));
  CHECK(off->kind == Kind::assumed);
  // Without offload there is no such item and the step is shorter by more than it.
  const PlanResult on_gpu =
      test::plan_text(plan, {"parallel.offload=\"none\"", "training.framework=\"pytorch\""});
  CHECK_FALSE(find_item(on_gpu.time, ItemId::time_offload));
  CHECK(value_of(p.time, ItemId::time_step) - value_of(on_gpu.time, ItemId::time_step) >
        0.9 * off->value);
  // Parameters on the host too: every micro-batch fetches them, so it costs more.
  const PlanResult params =
      test::plan_text(plan, {"parallel.zero=3", "parallel.offload=\"optimizer+params\"",
                             "cluster.pcie_bandwidth=\"5 GB/s\""});
  const LineItem* fetch = find_item(params.time, ItemId::time_offload);
  REQUIRE(fetch);
  CHECK(fetch->value > 2 * (14 * n / 8) * 8 / 200e9);
}

TEST_CASE("uneven stages: data-parallel traffic comes from the stage that sets the pace",
          "[corrections][comm]") {
  // Llama 3.1 405B split 7, 8 × 14, 7 over 16 stages: a middle stage of 8 layers is the
  // slowest; its data-parallel traffic is its own parameters', not 8 layers with the LM head.
  const PlanResult p = test::plan_text(
      k_llama3_405b, {"parallel.zero=1", "parallel.reshard_after_forward=true", "parallel.dp=8",
                      "cluster.nodes=128", "training.global_batch=512"});
  const LineItem* compute = find_item(p.time, ItemId::time_compute);
  REQUIRE(compute);
  CHECK(compute->label.find("slowest stage (1)") != std::string::npos);
  const LineItem& dp = comm(p, ItemId::comm_dp);
  double gathered = 0;
  for (const Collective& c : dp.collectives)
    if (c.collective == "all-gather") gathered = c.message_bytes;
  // ZeRO-1 gathers the stage's updated bf16 parameters: stage 1's weights, not the last one's.
  CHECK(gathered == test::item_value(p, "params", 1));
  CHECK(gathered != test::item_value(p, "params", 15));
}

TEST_CASE("MLA: K and V at their own head sizes under CP, latents gathered under Megatron's TP",
          "[corrections][comm]") {
  // DeepSeek-V2-Lite: 27 MLA layers, 16 heads, d_nope 128 + d_rope 64 = 192 for keys, d_v 128,
  // no query bottleneck, KV latent 512; hidden 2048. 4,096 tokens over cp 2: 2,048 per rank.
  const std::string plan = std::string("[model]\nhf_config = \"") +
                           test::source_path("tests/data/hf/deepseek-v2-lite.json") +
                           "\"\n[training]\nseq_len = 4096\nframework = \"megatron\"\n"
                           "[parallel]\ntp = 2\nsequence_parallel = true\ncp = 2\n"
                           "[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 4\n";
  const PlanResult p = test::plan_text(plan);
  const double tokens = 2048, layers = 27;
  // The ring passes K (192) and V (128) per head, 8 heads per TP rank, not 2 × 192 (+20 %):
  // 3 passes per layer (forward K/V, backward K/V and their gradients), cp − 1 = 1 step each.
  const LineItem& cp = comm(p, ItemId::comm_cp);
  CHECK(cp.value == tokens * 8 * (192 + 128) * 2 * 3 * layers);
  // Megatron-Core runs the down-projections replicated on the sequence shard and gathers the
  // latents: the query's input (the hidden state, 2048: no bottleneck) + the KV latent (512)
  // + the rope key (64) on the attention side, the hidden state on the MLP side.
  const double hidden = tokens * 2048 * 2, latent = tokens * (2048 + 512 + 64) * 2;
  const double half = 0.5;  // (n − 1)/n of each message for 2 ranks
  const LineItem& tp = comm(p, ItemId::comm_tp);
  CHECK(tp.value == Approx(half * (hidden * (4 + 3) + latent * (2 + 1)) * layers).epsilon(1e-12));
  // torchtitan's DeepSeek plan gathers the hidden state before attention: 10 hidden-sized
  // messages per layer.
  const PlanResult pt = test::plan_text(plan, {"training.framework=\"pytorch\""});
  CHECK(comm(pt, ItemId::comm_tp).value == Approx(half * hidden * 10 * layers).epsilon(1e-12));
  // DeepSeek-V3 (query rank 1536, KV latent 512, rope 64 against a hidden of 7168): the hidden
  // gathered everywhere moves 27 % more than Megatron-Core does.
  const std::string v3 =
      "[model]\npreset = \"deepseek-v3\"\n[training]\nseq_len = 4096\nframework = \"megatron\"\n"
      "[parallel]\ntp = 8\nsequence_parallel = true\nep = 8\nzero = 1\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 8\n";
  const double mcore = comm(test::plan_text(v3), ItemId::comm_tp).value;
  const double hidden_everywhere =
      comm(test::plan_text(v3, {"training.framework=\"pytorch\""}), ItemId::comm_tp).value;
  CHECK(hidden_everywhere / mcore == Approx((4.0 + 3 + 3) / (7 + 3 * 2112.0 / 7168)));
}

TEST_CASE("MoE all-to-all across nodes: each GPU's own NIC, and DeepEP's one copy per node",
          "[corrections][comm]") {
  // DeepSeek-V3's EP 64 over 8 nodes of 8 (tp 1): NCCL's all-to-all sends 56/64 of every GPU's
  // routed tokens off the node through that GPU's NIC, all eight at once. busbw = NIC ×
  // (n − 1)/(n − r) = 1.125 × 50 GB/s, not 8 × (the pooled channels of a ring).
  const std::string plan =
      "[model]\npreset = \"deepseek-v3\"\n[training]\nseq_len = 4096\nframework = \"megatron\"\n"
      "recompute = \"full\"\n[parallel]\nep = 64\npp = 1\nzero = 1\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 8\ninter_node_bandwidth = \"50 GB/s\"\n"
      "inter_node_latency = \"0 s\"\nintra_node_latency = \"0 s\"\n";
  const PlanInput in = test::load_text(plan).input;
  const Group g = group_of(in, "ep", 64);
  REQUIRE(g.nodes() == 8);
  REQUIRE(g.ranks_per_node == 8);
  const double s = 1e9;
  const double t =
      calls_time<Num>(in, CollKind::all_to_all, g, Num::constant(s), Num::constant(1)).value();
  CHECK(t == Approx(56.0 / 64 * s / 50e9));
  // DeepEP: a token crosses the network once per remote node with one of its 8 experts,
  // 7 × (1 − (7/8)^8) = 4.59 copies, not 8 × 56/64 = 7.
  const PlanResult nccl = test::plan_text(plan);
  const PlanResult deepep = test::plan_text(plan, {"parallel.ep_dispatch=\"deepep\""});
  const double ratio = 7 * (1 - std::pow(7.0 / 8, 8)) / 7.0;
  CHECK(comm(deepep, ItemId::comm_ep).value / comm(nccl, ItemId::comm_ep).value == Approx(ratio));
  CHECK(*comm(deepep, ItemId::comm_ep).time_s / *comm(nccl, ItemId::comm_ep).time_s ==
        Approx(ratio));
  // Inside one node the dispatch is NVLink's either way.
  const PlanResult node = test::plan_text(
      plan, {"cluster.nodes=1", "parallel.ep=8", "parallel.ep_dispatch=\"deepep\""});
  const PlanResult node_nccl = test::plan_text(plan, {"cluster.nodes=1", "parallel.ep=8"});
  CHECK(comm(node, ItemId::comm_ep).value == comm(node_nccl, ItemId::comm_ep).value);
}

TEST_CASE("MoE allgather dispatcher: every rank gathers the group's tokens whole",
          "[corrections][comm]") {
  // Megatron-Core's MoEAllGatherTokenDispatcher (NeMo-RL v0.5's default): per MoE layer
  // and micro-batch an all-gather of the hidden states and a reduce-scatter of the outputs, each
  // way, (ep − 1)/ep of ep × tokens × hidden × 2 B; the all-to-all sends a copy per routed expert
  // (8 of DeepSeek-V3's 256, at the 1.25 imbalance): 7 × 1.25 × 2 ... against 2 × 7.
  const std::string plan =
      "[model]\npreset = \"deepseek-v3\"\n[training]\nseq_len = 4096\nframework = \"megatron\"\n"
      "[parallel]\nep = 8\npp = 1\nzero = 1\n[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 1\n";
  const PlanResult nccl = test::plan_text(plan);
  const PlanResult gather = test::plan_text(plan, {"parallel.ep_dispatch=\"allgather\""});
  const LineItem& g = comm(gather, ItemId::comm_ep);
  REQUIRE(g.collectives.size() == 2);
  CHECK(g.collectives[0].collective == "all-gather");
  CHECK(g.collectives[1].collective == "reduce-scatter");
  const double tokens = 4096, hidden = 7168;
  CHECK(g.collectives[0].message_bytes == Approx(tokens * hidden * 2 * 8));
  // Bytes per GPU: 2 calls of 7/8 × the gathered tensor against 2 all-to-alls of 7/8 × k ×
  // imbalance × the local tokens, per layer pass.
  CHECK(g.value / comm(nccl, ItemId::comm_ep).value == Approx(2.0 * 8 / (2 * 8 * 1.25)));
  CHECK(gather.input.parallel.ep_dispatch == EpDispatch::allgather);
  // Emitted for Megatron-LM (the default plan with experts: Mixtral 8x7B, ep 2).
  const auto emitted =
      test::run_cli({"plan", test::source_path("configs/plans/default.toml"), "--set",
                     "model.preset=\"mixtral-8x7b\"", "--set", "parallel.ep=2", "--set",
                     "parallel.ep_dispatch=\"allgather\"", "--emit", "megatron"});
  REQUIRE(emitted.code == 0);
  CHECK(emitted.out.find("--moe-token-dispatcher-type allgather") != std::string::npos);
}

namespace {

// Mixtral 8x7B on 16 H100s as Megatron-Core runs it: tp 2 with sequence parallelism, ep 4,
// dp 8, the distributed optimizer.
const std::string k_mixtral_mcore = R"(
[model]
preset = "mixtral-8x7b"
[training]
seq_len = 4096
global_batch = 16
framework = "megatron"
[parallel]
tp = 2
sequence_parallel = true
ep = 4
dp = 8
zero = 1
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 2
)";

double stage_term(const PlanResult& p, ItemId id, const std::string& key) {
  const LineItem* i = find_item(p.stages.at(0).items, id);
  REQUIRE(i);
  for (const Term& t : i->terms)
    if (t.key == key) return t.value;
  FAIL("no term " << key);
  return 0;
}

const Collective& call(const LineItem& item, const std::string& collective) {
  for (const Collective& c : item.collectives)
    if (c.collective == collective) return c;
  FAIL("no " << collective);
  return item.collectives.front();
}

}  // namespace

TEST_CASE("expert tensor parallelism: parallel.etp splits the experts, not tp",
          "[corrections][comm][memory]") {
  const PlanResult split = test::plan_text(k_mixtral_mcore);  // etp 0: tp, Megatron's default
  const PlanResult whole = test::plan_text(k_mixtral_mcore, {"parallel.etp=1"});
  CHECK(split.input.parallel.etp == 0);
  CHECK(expert_tp(split.input.parallel) == 2);
  CHECK(expert_tp(whole.input.parallel) == 1);
  // Mixtral's routed experts: 32 layers × 8 × 3 × 4096 × 14336 parameters, over etp × ep.
  const double experts = 32.0 * 8 * 3 * 4096 * 14336;
  CHECK(stage_term(split, ItemId::params, "expert_params") == Approx(experts / 8));
  CHECK(stage_term(whole, ItemId::params, "expert_params") == Approx(experts / 4));
  // The distributed optimizer shards them over the expert-data-parallel group
  // (tp × dp / (etp × ep): 2 or 4 ranks): the same state per GPU either way.
  CHECK(find_item(whole.stages[0].items, ItemId::optimizer_m)->value ==
        Approx(find_item(split.stages[0].items, ItemId::optimizer_m)->value));
  CHECK(comm(split, ItemId::comm_dp).collectives.back().group_size == 2);
  CHECK(comm(whole, ItemId::comm_dp).collectives.back().group_size == 4);

  // The all-to-all moves the rank's sequence-parallel share of the tokens (4096 / 2), k = 2
  // copies at the 1.25 imbalance; with etp = tp the dispatcher then gathers the received tokens
  // over the expert-tensor-parallel group and reduce-scatters the outputs (per MoE layer and
  // micro-batch one pair each way); with etp = 1 there is nothing to gather.
  const double a2a = 2048.0 * 2 * 1.25 * 4096 * 2;
  const LineItem& ep_split = comm(split, ItemId::comm_ep);
  const LineItem& ep_whole = comm(whole, ItemId::comm_ep);
  CHECK(call(ep_split, "all-to-all").message_bytes == Approx(a2a));
  CHECK(call(ep_whole, "all-to-all").message_bytes == Approx(a2a));
  CHECK(call(ep_split, "all-to-all").calls_per_step == 4 * 32 * 2);
  CHECK(call(ep_split, "all-gather").message_bytes == Approx(2 * a2a));
  CHECK(call(ep_split, "all-gather").group_size == 2);
  CHECK(call(ep_split, "all-gather").calls_per_step == 2 * 32 * 2);
  CHECK(call(ep_split, "reduce-scatter").calls_per_step == 2 * 32 * 2);
  CHECK(ep_whole.collectives.size() == 1);
  // Megatron's MoE layer has no tensor-parallel gather of its own (no shared experts): the
  // attention's 3 gathers and 2 reduce-scatters per layer remain, of the 6 and 4 a dense layer
  // (or PyTorch's MoE layer) has.
  CHECK(calls_of(comm(split, ItemId::comm_tp), "all-gather") == 3 * 32 * 2);
  CHECK(calls_of(comm(split, ItemId::comm_tp), "reduce-scatter") == 2 * 32 * 2);
  const PlanResult torch = test::plan_text(k_mixtral_mcore, {"training.framework=\"pytorch\""});
  CHECK(calls_of(comm(torch, ItemId::comm_tp), "all-gather") == 6 * 32 * 2);
  // The experts' first GEMM keeps the gathered input: etp times the rank's share.
  CHECK(find_item(split.stages[0].items, ItemId::activations)->value >
        find_item(whole.stages[0].items, ItemId::activations)->value);
}

TEST_CASE("expert tensor parallelism: the expert rank order places ep inside the node",
          "[corrections][comm]") {
  // Megatron-Core's expert RankGenerator (tp = etp, cp folded, ep just inside dp): with tp 2 ·
  // cp 2 · dp 4 on 2 nodes of 8, ep 4 is 4 ranks 2 apart (etp = tp) or consecutive (etp = 1),
  // one node either way; dp's stride (tp × cp = 4) would span both nodes.
  const PlanInput cp = test::load_text(k_mixtral_mcore, {"parallel.cp=2", "parallel.dp=4"}).input;
  const Group ep = group_of(cp, "ep", 4);
  CHECK(ep.stride == 2);
  CHECK(ep.nodes() == 1);
  CHECK(group_of(cp, "dp_expert", expert_dp(cp.parallel)).stride == 8);
  CHECK(expert_dp(cp.parallel) == 2);
  PlanInput one = cp;
  one.parallel.etp = 1;
  CHECK(group_of(one, "ep", 4).stride == 1);
  CHECK(group_of(one, "dp_expert", expert_dp(one.parallel)).stride == 4);
  CHECK(expert_dp(one.parallel) == 4);
}

TEST_CASE("expert tensor parallelism: the rules and the stacks' flags", "[corrections][errors]") {
  // ep must fit the ranks left beside etp: ep 16 with tp 2 · dp 8 needs etp 1.
  const auto refused = test::load_errors(k_mixtral_mcore, {"parallel.ep=16", "model.experts=16"});
  REQUIRE(!refused.empty());
  CHECK_THAT(refused.front(), Catch::Contains("parallel.ep (16) must divide dp × cp = 8") &&
                                  Catch::Contains("parallel.etp = 1"));
  CHECK(test::load_errors(k_mixtral_mcore, {"parallel.ep=16", "model.experts=16", "parallel.etp=1"})
            .empty());
  auto first_error = [](const std::vector<std::string>& sets) {
    const auto errors = test::load_errors(k_mixtral_mcore, sets);
    REQUIRE(!errors.empty());
    return errors.front();
  };
  CHECK_THAT(first_error({"parallel.ep=8", "parallel.etp=4"}),
             Catch::Contains("parallel.etp × parallel.ep (4 × 8) must divide tp × cp × dp = 16"));
  // A dense model has no experts to split.
  CHECK_THAT(first_error({"model.preset=\"llama-3.1-8b\"", "parallel.ep=1", "parallel.etp=1"}),
             Catch::Contains("parallel.etp (1) splits routed experts"));
  // Megatron-LM's flag out and back in; torchtitan's default degree is 1.
  const auto dir =
      std::filesystem::path(test::scratch_folder("etp-emit", {{"train.sh", ""}})).parent_path();
  const auto emitted = test::run_cli({"plan", test::source_path("configs/plans/default.toml"),
                                      "--set", "model.preset=\"mixtral-8x7b\"", "--set",
                                      "parallel.ep=2", "--set", "parallel.etp=1", "--set",
                                      "training.framework=\"megatron\"", "--emit", "megatron"});
  REQUIRE(emitted.code == 0);
  CHECK_THAT(emitted.out, Catch::Contains("--expert-tensor-parallel-size 1"));
  std::ofstream(dir / "train.sh") << emitted.out;
  std::ofstream(dir / "plan.toml") << "[import]\nmegatron = \"train.sh\"\n[cluster]\ngpu = "
                                      "\"h100-sxm5-80gb\"\n";
  const auto back = config::load_plan_file((dir / "plan.toml").string(), {});
  CHECK(back.input.parallel.etp == 1);
  std::ofstream(dir / "job.toml") << "[parallelism]\nexpert_parallel_degree = 2\n"
                                     "tensor_parallel_degree = 2\n";
  std::ofstream(dir / "plan.toml") << "[import]\ntorchtitan = \"job.toml\"\n[model]\npreset = "
                                      "\"mixtral-8x7b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  CHECK(config::load_plan_file((dir / "plan.toml").string(), {}).input.parallel.etp == 1);
}

TEST_CASE("expert tensor parallelism: a lever and a searched dimension", "[corrections][search]") {
  // Qwen3-30B-A3B with tp 2 · ep 8 · dp 8 on two nodes of 8: with the experts split over tp the
  // ep group's ranks are 2 apart and span both nodes; whole experts put it in one node.
  const PlanResult split =
      test::plan_text(k_mixtral_mcore, {"model.preset=\"qwen3-30b-a3b\"", "parallel.ep=8"});
  const PlanResult whole = test::plan_text(
      k_mixtral_mcore, {"model.preset=\"qwen3-30b-a3b\"", "parallel.ep=8", "parallel.etp=1"});
  CHECK(call(comm(split, ItemId::comm_ep), "all-to-all").link == "inter-node");
  CHECK(call(comm(whole, ItemId::comm_ep), "all-to-all").link == "intra-node");
  const double before = value_of(split.time, ItemId::throughput_tokens_per_s_per_gpu);
  const double after = value_of(whole.time, ItemId::throughput_tokens_per_s_per_gpu);
  REQUIRE(after > before * 1.1);
  bool offered = false;
  for (const Lever& l : find_levers(split, 10))
    if (l.change.size() == 1 && l.change.begin()->knob == Knob::etp) {
      offered = true;
      CHECK(l.change.begin()->to == 1);
      CHECK(l.throughput_after == Approx(after));
    }
  CHECK(offered);
  // search tries both sizes for a MoE model under tp > 1.
  SearchOptions o;
  o.top = 100000;
  const SearchResult r = search_layouts(split.input, o);
  int whole_layouts = 0;
  for (const Layout& l : r.top) whole_layouts += l.tp > 1 && l.etp == 1;
  CHECK(whole_layouts > 0);
}

TEST_CASE("selective recompute of named modules: Megatron-LM's --recompute-modules",
          "[corrections][memory][time]") {
  // Qwen3-30B-A3B (128 experts, no shared experts) under Megatron-Core, tp 2 · ep 8 · etp 1.
  const std::vector<std::string> base = {"model.preset=\"qwen3-30b-a3b\"", "parallel.ep=8",
                                         "parallel.etp=1"};
  auto with = [&](std::vector<std::string> sets) {
    sets.insert(sets.end(), base.begin(), base.end());
    return test::plan_text(k_mixtral_mcore, sets);
  };
  const PlanResult none = with({});
  const PlanResult attn = with({"training.recompute=\"selective\""});
  const PlanResult moe = with(
      {"training.recompute=\"selective\"", "training.recompute_modules=[\"layernorm\", \"moe\"]"});
  auto activations = [](const PlanResult& p) {
    return find_item(p.stages[0].items, ItemId::activations)->value;
  };
  auto step = [](const PlanResult& p) { return value_of(p.time, ItemId::time_step); };
  // The MoE block's saved tensors (and its input, the pre-MLP norm's output) are dropped ...
  CHECK(activations(moe) < 0.5 * activations(attn));
  // ... and its forward runs again: the routed and router GEMMs, and the dispatcher's
  // all-to-alls (dispatch and combine once more: 6 per MoE layer and micro-batch, not 4).
  CHECK(value_of(moe.time, ItemId::time_recompute) > 0);
  CHECK(value_of(attn.time, ItemId::time_recompute) == 0);
  CHECK(step(moe) > step(none));
  CHECK(calls_of(comm(moe, ItemId::comm_ep), "all-to-all") ==
        1.5 * calls_of(comm(none, ItemId::comm_ep), "all-to-all"));
  // moe_act drops only the experts' activation output.
  const PlanResult act =
      with({"training.recompute=\"selective\"", "training.recompute_modules=[\"moe_act\"]"});
  CHECK(activations(act) < activations(attn));
  CHECK(activations(act) > activations(moe));
  // The modules are selective recompute's.
  const auto errors = test::load_errors(
      k_mixtral_mcore, {"training.recompute=\"full\"", "training.recompute_modules=[\"moe\"]"});
  REQUIRE(!errors.empty());
  CHECK_THAT(errors.front(), Catch::Contains("training.recompute_modules") &&
                                 Catch::Contains("needs training.recompute = \"selective\""));
}
