// Latency across nodes, unit-by-unit overlap, and the conventions of the Megatron-LM stack
// that change time or activations (docs/formulas.md#collectives, #step, #frameworks).
#include <catch2/catch.hpp>

#include "activations.hpp"
#include "collectives.hpp"
#include "helpers.hpp"
#include "timing.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/numbers.hpp"

using namespace trainledger;

namespace {

// Llama 3.1 8B on 64 H100s (8 nodes).
const std::string k_64 = R"(
[model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
global_batch = 64
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 8
)";

double time_item(const PlanResult& p, const char* id) {
  const LineItem* i = find_item(p.time, *item_by_name(id));
  REQUIRE(i);
  return i->value;
}

PlanNumbers numbers(const std::string& toml, const std::vector<std::string>& sets) {
  PlanNumbers n;
  evaluate(test::load_text(toml, sets).input, n);
  return n;
}

// The bucket size a plan resolves to; the report lists it among the inputs.
double bucket(const std::string& toml, const std::vector<std::string>& sets) {
  const config::LoadedPlan p = test::load_text(toml, sets);
  bool listed = false;
  for (const config::ResolvedValue& v : p.resolved) listed |= v.key == "parallel.bucket_size";
  CHECK(listed);
  return p.input.parallel.bucket_size;
}

}  // namespace

TEST_CASE("a ring across nodes crosses the network once per node boundary",
          "[overlap][collectives]") {
  // NCCL's tuning model (src/graph/tuning.cc): ring steps split into nNodes − 1 network
  // steps (twice for all-reduce) and NVLink steps for the rest; a tree climbs
  // ranks-per-node − 1 NVLink steps and log2(nodes) network steps, down and up.
  const PlanInput in = test::load_text(k_64).input;
  const Group dp = group_of(in, "dp", 64);
  CHECK(dp.ranks_per_node == 8);
  CHECK(dp.nodes() == 8);
  LatencySteps rs = latency_steps(CollKind::reduce_scatter, dp);
  CHECK(rs.intra == 56);
  CHECK(rs.inter == 7);
  LatencySteps ar = latency_steps(CollKind::all_reduce, dp);
  CHECK(ar.intra == 112);
  CHECK(ar.inter == 14);
  LatencySteps tree = latency_steps(CollKind::tree_all_reduce, dp);
  CHECK(tree.intra == 14);
  CHECK(tree.inter == 6);
  // One rank per node: every step crosses the network.
  const Group spread = regroup(in, dp, 8, 8);
  CHECK(spread.ranks_per_node == 1);
  rs = latency_steps(CollKind::reduce_scatter, spread);
  CHECK(rs.intra == 0);
  CHECK(rs.inter == 7);
  // Inside one node nothing crosses the network.
  const Group node = regroup(in, dp, 8, 1);
  CHECK(node.nodes() == 1);
  CHECK(latency_steps(CollKind::all_reduce, node).inter == 0);
  // A 1 GB reduce-scatter over the 64 ranks: 56 × 8 µs + 7 × 20 µs of latency; the ring's
  // channels use the 8 NICs of each node (8 × 50 GB/s), capped by NVLink's 370 GB/s.
  const double t =
      calls_time(in, CollKind::reduce_scatter, dp, Num::constant(1e9), Num::constant(1)).value();
  CHECK(t == Approx(56 * 8e-6 + 7 * 20e-6 + (63.0 / 64) * 1e9 / 370e9));
}

TEST_CASE("a group moves as much across nodes as its members' NICs carry",
          "[overlap][collectives]") {
  // nccl-tests on 8-GPU nodes: multi-node busbw ≈ the node's NIC bandwidth (4 × 200 Gb/s:
  // 86-96 GB/s measured, NVIDIA/nccl-tests#119, NVIDIA/nccl#1048), not one GPU's share.
  const PlanInput in = test::load_text(k_64).input;
  const Group dp = group_of(in, "dp", 64);
  CHECK(group_busbw<Num>(in, CollKind::all_reduce, dp).value() == 400e9);      // 8 × 50
  CHECK(group_busbw<Num>(in, CollKind::reduce_scatter, dp).value() == 370e9);  // NVLink cap
  CHECK(group_busbw<Num>(in, CollKind::all_reduce, regroup(in, dp, 8, 8)).value() == 50e9);
  CHECK(group_busbw<Num>(in, CollKind::all_reduce, regroup(in, dp, 16, 4)).value() == 100e9);
  CHECK(group_busbw<Num>(in, CollKind::all_reduce, regroup(in, dp, 8, 1)).value() == 480e9);
}

TEST_CASE("ZeRO-3 traffic is sorted by the pass it overlaps", "[overlap]") {
  const PlanNumbers n = numbers(k_64, {"parallel.zero=3"});
  const CommDim& dp = n.comm[Dim::dp];
  REQUIRE(dp.present);
  // Forward gathers = backward gathers; the reduce-scatter runs with the backward (every
  // micro-batch: ZeRO-3 synchronizes each one).
  CHECK(dp.forward_s > 0);
  CHECK(dp.forward_s == Approx(dp.backward_s));
  CHECK(dp.sync_s > 0);
  CHECK(dp.tail_s == 0);
  CHECK(dp.units == 33);  // 32 layers and the root
  CHECK(dp.forward_s + dp.backward_s + dp.sync_s == Approx(dp.time_s));
  // Without resharding the backward gathers nothing.
  const PlanNumbers keep =
      numbers(k_64, {"parallel.zero=3", "parallel.reshard_after_forward=false"});
  CHECK(keep.comm[Dim::dp].backward_s == 0);
}

TEST_CASE("FSDP's copies around its collectives take HBM time on the compute stream",
          "[overlap][frameworks]") {
  // FSDP2 copies each all-gather's output into the parameters (2·S) and the 16-bit gradients
  // into the reduce-scatter input in the reduce dtype (fp32 here: 2 + 4 B for each 4 of S);
  // FSDP1 gathers into its flat parameter, then casts (the same 6 per 4) and divides in place
  // (2·S) before its reduce-scatter; DDP copies nothing of the kind (docs/formulas.md#fsdp-copies).
  // (The SMs NCCL's kernels take beside the compute are left out here: cluster.gpu_sms = 0.)
  const std::vector<std::string> fsdp2 = {"parallel.zero=3", "training.framework=\"pytorch\"",
                                          "cluster.gpu_sms=0"};
  const PlanResult two = test::plan_text(k_64, fsdp2);
  REQUIRE(two.input.parallel.fsdp_version == 2);
  REQUIRE(two.input.training.reduce_dtype == DType::fp32);
  const PlanNumbers n = numbers(k_64, fsdp2);
  const CommDim& dp = n.comm[Dim::dp];
  double gathered = 0, scattered = 0;
  for (int i = 0; i < dp.n_calls; ++i) {
    const CollCall& c = dp.calls[static_cast<std::size_t>(i)];
    (c.kind == CollKind::all_gather ? gathered : scattered) += c.message_bytes * c.calls_per_step;
  }
  REQUIRE(gathered > 0);
  REQUIRE(scattered > 0);
  const double hbm = two.input.cluster.gpu.memory_bandwidth * two.input.cluster.memory_efficiency;
  const double ddp = time_item(
      test::plan_text(k_64,
                      {"parallel.zero=0", "training.framework=\"pytorch\"", "cluster.gpu_sms=0"}),
      "time.compute");
  CHECK(time_item(two, "time.compute") - ddp ==
        Approx((2 * gathered + scattered * 6 / 4) / hbm).epsilon(1e-9));
  std::vector<std::string> fsdp1 = fsdp2;
  fsdp1.push_back("parallel.fsdp_version=1");
  CHECK(time_item(test::plan_text(k_64, fsdp1), "time.compute") - ddp ==
        Approx((scattered * 6 / 4 + 2 * scattered) / hbm).epsilon(1e-9));
  // Hugging Face's stack runs FSDP1 unless told otherwise.
  CHECK(test::plan_text(k_64, {"parallel.zero=3", "training.framework=\"hf\""})
            .input.parallel.fsdp_version == 1);
}

double term(const PlanResult& p, const char* id, const char* key) {
  const LineItem* i = find_item(p.time, *item_by_name(id));
  REQUIRE(i);
  for (const Term& t : i->terms)
    if (t.key == key) return t.value;
  return 0;
}

TEST_CASE("NCCL traffic beside the compute holds one SM per channel", "[overlap]") {
  // An overlapped collective runs its kernel with one CTA per channel (NCCL src/enqueue.cc
  // ncclLaunchKernel: grid = channelCount) for as long as it runs; the compute kernels of that
  // stretch have the rest: hidden × channels / (SMs − channels) more compute time
  // (docs/formulas.md#nccl-contention). H100 SXM5: 132 SMs (the preset), 16 channels.
  for (const char* zero : {"parallel.zero=3", "parallel.zero=1"}) {
    CAPTURE(zero);
    const std::vector<std::string> base = {zero, "training.framework=\"pytorch\"",
                                           "parallel.overlap_dp=true"};
    const PlanResult with = test::plan_text(k_64, base);
    REQUIRE(with.input.cluster.gpu.sms == 132);
    REQUIRE(with.input.cluster.nccl_channels == 16);
    std::vector<std::string> unknown = base;
    unknown.push_back("cluster.gpu_sms=0");
    const PlanResult without = test::plan_text(k_64, unknown);
    const PlanNumbers n = numbers(k_64, base);
    const double hidden = n.comm[Dim::dp].time_s - term(with, "time.comm_exposed", "dp_s");
    REQUIRE(hidden > 0);
    CHECK(term(with, "time.compute", "nccl_hidden_s") == Approx(hidden));
    CHECK(time_item(with, "time.compute") - time_item(without, "time.compute") ==
          Approx(hidden * 16.0 / (132 - 16)).epsilon(1e-9));
    // More channels take more SMs.
    std::vector<std::string> wide = base;
    wide.push_back("cluster.nccl_channels=32");
    CHECK(time_item(test::plan_text(k_64, wide), "time.compute") -
              time_item(without, "time.compute") ==
          Approx(hidden * 32.0 / (132 - 32)).epsilon(1e-6));
  }
  // No more SMs than channels is a mistyped count, refused where it stands.
  const auto few = test::run_cli({"plan", "--set", "cluster.gpu_sms=16"});
  CHECK(few.code == 2);
  CHECK(few.err.find("cluster.gpu_sms") != std::string::npos);
  CHECK(test::run_cli({"plan", "--set", "cluster.gpu_sms=17"}).code == 0);
  // Traffic that waits (no overlap) runs beside no compute: nothing is added.
  const std::vector<std::string> serial = {"parallel.zero=3", "training.framework=\"pytorch\"",
                                           "parallel.overlap_dp=false"};
  std::vector<std::string> serial_unknown = serial;
  serial_unknown.push_back("cluster.gpu_sms=0");
  CHECK(time_item(test::plan_text(k_64, serial), "time.compute") ==
        time_item(test::plan_text(k_64, serial_unknown), "time.compute"));
}

TEST_CASE("each unit of traffic hides behind the compute of the unit before it", "[overlap]") {
  // Fast links: every unit hides but the first of each pass. One micro-batch per GPU, so the
  // exposed time is one unit of the forward gathers and one of the backward traffic.
  const std::vector<std::string> one = {"parallel.zero=3", "cluster.nodes=1",
                                        "training.global_batch=8"};
  const PlanResult fast = test::plan_text(k_64, one);
  const PlanNumbers fn = numbers(k_64, one);
  const CommDim& dp = fn.comm[Dim::dp];
  CHECK(time_item(fast, "time.comm_exposed") == Approx(dp.time_s / dp.units));
  // A slow network: at most the compute hides, at least the units' first pieces wait.
  std::vector<std::string> slow = one;
  slow.push_back("cluster.inter_node_bandwidth=\"1 GB/s\"");
  const PlanResult s = test::plan_text(k_64, slow);
  const PlanNumbers sn = numbers(k_64, slow);
  const double exposed = time_item(s, "time.comm_exposed");
  CHECK(exposed <= sn.comm[Dim::dp].time_s);
  CHECK(exposed >= sn.comm[Dim::dp].time_s - time_item(s, "time.compute"));
  // No overlap: all of it.
  std::vector<std::string> none = slow;
  none.push_back("parallel.overlap_dp=false");
  CHECK(time_item(test::plan_text(k_64, none), "time.comm_exposed") ==
        Approx(sn.comm[Dim::dp].time_s));
}

TEST_CASE("the after-step parameter gather can hide behind the next forward", "[overlap]") {
  // Megatron-LM --overlap-param-gather: ZeRO-1's all-gather of updated parameters runs layer
  // by layer ahead of the next step's forward; only its first bucket waits.
  const std::vector<std::string> z1 = {"parallel.zero=1", "cluster.nodes=1",
                                       "training.global_batch=8"};
  std::vector<std::string> hidden = z1;
  hidden.push_back("parallel.overlap_param_gather=true");
  const PlanNumbers n = numbers(k_64, z1);
  const CommDim& dp = n.comm[Dim::dp];
  REQUIRE(dp.tail_s > 0);
  const double saved = time_item(test::plan_text(k_64, z1), "time.comm_exposed") -
                       time_item(test::plan_text(k_64, hidden), "time.comm_exposed");
  CHECK(saved == Approx(dp.tail_s - dp.tail_s / dp.units));
  // The traffic itself does not change.
  CHECK(numbers(k_64, hidden).comm[Dim::dp].time_s == Approx(dp.time_s));
}

TEST_CASE("TP communication overlap leaves one chunk of each collective exposed", "[overlap]") {
  // Decomposed collectives (Wang et al. 2022; Transformer Engine's TP comm overlap, PyTorch
  // AsyncTP) overlap all but one of their tp chunks with the GEMM they feed.
  const std::vector<std::string> tp = {"parallel.tp=4", "parallel.sequence_parallel=true"};
  std::vector<std::string> overlapped = tp;
  overlapped.push_back("parallel.overlap_tp=true");
  const double tp_s = numbers(k_64, tp).comm[Dim::tp].time_s;
  REQUIRE(tp_s > 0);
  const double saved = time_item(test::plan_text(k_64, tp), "time.comm_exposed") -
                       time_item(test::plan_text(k_64, overlapped), "time.comm_exposed");
  CHECK(saved == Approx(tp_s * 3 / 4));
}

TEST_CASE("Megatron-LM's gradient buckets scale with the data-parallel size", "[frameworks]") {
  // distributed_data_parallel.py: bucket_size = max(40,000,000, 1,000,000 × dp) elements, in
  // the reduction's dtype (fp32 main_grad by default).
  const std::vector<std::string> megatron = {"training.framework=\"megatron\"", "parallel.zero=1"};
  CHECK(bucket(k_64, megatron) == 64e6 * 4);
  std::vector<std::string> small = megatron;
  small.push_back("parallel.tp=8");  // dp 8
  CHECK(bucket(k_64, small) == 40e6 * 4);
  std::vector<std::string> bf16 = megatron;
  bf16.push_back("training.reduce_dtype=\"bf16\"");
  CHECK(bucket(k_64, bf16) == 64e6 * 2);
  std::vector<std::string> given = megatron;
  given.push_back("parallel.bucket_size=\"25 MiB\"");
  CHECK(test::load_text(k_64, given).input.parallel.bucket_size == 25.0 * 1024 * 1024);
  // Its buckets are views of the contiguous gradient buffer: no bucket copies in memory.
  auto has_buckets = [](const PlanResult& plan) {
    const LineItem* t = find_item(plan.stages[0].items, ItemId::temporaries);
    REQUIRE(t);
    for (const Term& term : t->terms)
      if (term.key == "bucket") return true;
    return false;
  };
  CHECK_FALSE(has_buckets(test::plan_text(k_64, megatron)));
  CHECK(has_buckets(test::plan_text(k_64, {"parallel.zero=1"})));
}

TEST_CASE("Megatron-LM runs element-wise chains as fused kernels", "[frameworks]") {
  // The same traffic as torch.compile's fusions: te.LayerNormLinear, bias_swiglu_impl, fused
  // RoPE and softmax read their inputs and write their outputs once.
  const PlanInput megatron = test::load_text(k_64, {"training.framework=\"megatron\""}).input;
  // (torch.compile compiles torchtitan's loss too: compared with the eager loss here.)
  const PlanInput compiled =
      test::load_text(k_64, {"training.compile=true", "training.loss=\"standard\""}).input;
  const PlanInput compiled_loss = test::load_text(k_64, {"training.compile=true"}).input;
  const PlanInput eager = test::load_text(k_64).input;
  CHECK(megatron.training.fused_elementwise);
  CHECK_FALSE(eager.training.fused_elementwise);
  const StageFlops fm = stage_flops(megatron, 32, true);
  CHECK(fm.elementwise_bytes == Approx(stage_flops(compiled, 32, true).elementwise_bytes));
  CHECK(stage_flops(compiled_loss, 32, true).elementwise_bytes < fm.elementwise_bytes);
  CHECK(fm.elementwise_bytes < stage_flops(eager, 32, true).elementwise_bytes);
}

TEST_CASE("element-wise traffic is counted op by op", "[compute]") {
  // Llama 3.1 8B (h 4096, q 4096, kv 1024, f 14336), bf16, per token and layer, forward +
  // backward (docs/formulas.md#compute):
  //   eager: two decomposed RMSNorms 2 × (36 + 58) h, two residual adds 2 × 12 h, RoPE on q
  //   and k (q + kv) × (20 + 24), the attention output's copy 8 q, SwiGLU 26 f;
  //   fused: norms 2 × 10 h, residual adds 2 × 12 h, RoPE (q + kv) × 8, SwiGLU 16 f.
  const std::string one = R"(
[model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
micro_batch = 1
global_batch = 1
[cluster]
gpu = "h100-sxm5-80gb"
gpus_per_node = 1
)";
  const double T = 4096, h = 4096, q = 4096, kv = 1024, f = 14336;
  const Traffic eager = layer_traffic(test::load_text(one).input);
  CHECK(eager.forward + eager.backward ==
        Approx(T * (2 * 94 * h + 24 * h + 44 * (q + kv) + 8 * q + 26 * f)));
  const Traffic fused = layer_traffic(test::load_text(one, {"training.compile=true"}).input);
  CHECK(fused.forward + fused.backward == Approx(T * (20 * h + 24 * h + 8 * (q + kv) + 16 * f)));
  // Tensor parallelism splits the heads and the MLP; sequence parallelism the residual side.
  const Traffic tp = layer_traffic(
      test::load_text(one, {"parallel.tp=4", "parallel.sequence_parallel=true",
                            "cluster.gpus_per_node=4", "training.framework=\"pytorch\""})
          .input);
  CHECK(tp.forward + tp.backward == Approx((eager.forward + eager.backward) / 4));
  // GPT-2 XL (h 1600, f 6400, learned positions, GELU): LayerNorm is PyTorch's native kernel
  // even eager (2 × 10 h), no RoPE, GELU 10 f.
  const Traffic ln = layer_traffic(
      test::load_text(one, {"model.preset=\"gpt2-xl\"", "training.seq_len=1024"}).input);
  // (1,024 tokens: GPT-2's learned positions end there.)
  const double T_gpt2 = 1024;
  CHECK(ln.forward + ln.backward ==
        Approx(T_gpt2 * (20 * 1600 + 24 * 1600 + 8 * 1600 + 10 * 6400)));
  // Under Hugging Face autocast the norm runs in fp32 between two casts: forward (2 + 4) +
  // 4 + 4 + (4 + 2) = 20 B, backward (2 + 4) + 12 + (4 + 2) = 24 B per element.
  const Traffic hf =
      layer_traffic(test::load_text(one, {"model.preset=\"gpt2-xl\"", "training.seq_len=1024",
                                          "training.framework=\"hf\""})
                        .input);
  CHECK(hf.forward + hf.backward - (ln.forward + ln.backward) ==
        Approx(T_gpt2 * 2 * 1600 * ((20 + 24) - (4 + 6))));
}

TEST_CASE("torch.compile's measured speed-up follows from the op-by-op traffic",
          "[compute][reference]") {
  // torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3: Llama 3.1 8B,
  // FSDP, op AC, 8 and 128 H100s; compile gains 6667 / 5762 = 1.157 and 6514 / 5605 = 1.162.
  // The ratio follows from the element-wise kernels' bytes and their HBM rate alone: these two
  // gains are the fit set of cluster.memory_efficiency (0.72; docs/formulas.md#compute), so
  // the fit must hold them within 0.5 %.
  for (const auto& [plan, measured] :
       {std::pair<const char*, double>{"torchtitan-h100-llama3.1-8b-fsdp8", 6667.0 / 5762},
        {"torchtitan-h100-llama3.1-8b-fsdp128", 6514.0 / 5605}}) {
    const std::string path = test::source_path(std::string("tests/reference/time/") + plan);
    const PlanResult eager = test::plan_checked(config::load_plan_file(path + ".toml", {}).input);
    const PlanResult compiled =
        test::plan_checked(config::load_plan_file(path + "-compile.toml", {}).input);
    const double gain = time_item(compiled, "throughput.tokens_per_s_per_gpu") /
                        time_item(eager, "throughput.tokens_per_s_per_gpu");
    INFO(plan);
    CHECK(gain == Approx(measured).epsilon(0.005));
  }
}

TEST_CASE("Transformer Engine saves FP8 GEMM inputs for the weight gradients",
          "[frameworks][activations]") {
  // Megatron-LM's FP8 (Transformer Engine): the norms' outputs inside LayerNormLinear /
  // LayerNormMLP and the SwiGLU output before the down projection are saved as 1-byte FP8, the
  // attention output (kept in bf16 by flash attention) gets an FP8 copy for the o projection.
  // Per layer and token: −h (qkv input) − h (MLP input) − f (down input) + q (FP8 copy) bytes.
  const std::string one_gpu =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 4096\nframework = "
      "\"megatron\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  const PlanResult bf16 = test::plan_text(one_gpu);
  const PlanResult fp8 = test::plan_text(one_gpu, {"training.precision=\"fp8\""});
  const double per_layer_token = -4096.0 - 4096.0 - 14336.0 + 4096.0;
  CHECK(test::item_value(fp8, "activations") - test::item_value(bf16, "activations") ==
        Approx(32 * 4096 * per_layer_token));
  // PyTorch's Float8 (torchao) keeps the 16-bit inputs.
  const std::vector<std::string> pytorch = {"training.framework=\"pytorch\""};
  std::vector<std::string> pytorch_fp8 = pytorch;
  pytorch_fp8.push_back("training.precision=\"fp8\"");
  CHECK(test::item_value(test::plan_text(one_gpu, pytorch_fp8), "activations") ==
        Approx(test::item_value(test::plan_text(one_gpu, pytorch), "activations")));
}

TEST_CASE("FSDP's Float8 all-gather moves and holds the GEMM weights in one byte",
          "[overlap][fp8]") {
  // torchtitan enable_fsdp_float8_all_gather (torchao float8): each shard's GEMM weights are
  // cast to FP8 before the all-gather. Llama 3.1 8B: 6,979,321,856 of 8,030,261,248 parameters
  // are GEMM weights of the layers; embeddings, norms and the LM head stay in bf16.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 8192\nprecision = \"fp8\"\n"
      "global_batch = 8\n[parallel]\nzero = 3\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  const PlanResult bf16 = test::plan_text(plan);
  const PlanResult fp8 = test::plan_text(plan, {"parallel.fp8_all_gather=true"});
  auto gather_message = [](const PlanResult& p) {
    const LineItem* dp = find_item(p.communication, ItemId::comm_dp);
    REQUIRE(dp);
    for (const Collective& c : dp->collectives)
      if (c.collective == "all-gather") return c.message_bytes;
    FAIL("no all-gather");
    return 0.0;
  };
  const double total = 8030261248.0, matrix = 6979321856.0;
  CHECK(gather_message(fp8) / gather_message(bf16) == Approx((2 * total - matrix) / (2 * total)));
  // The gathered layer and the prefetched one are held in FP8: one byte less per GEMM weight.
  CHECK(test::phase_value(bf16, "temporaries", 0, Phase::forward) -
            test::phase_value(fp8, "temporaries", 0, Phase::forward) ==
        Approx(2 * matrix / 32));
  // Only with FSDP and FP8 training.
  CHECK_FALSE(test::load_errors(plan, {"parallel.fp8_all_gather=true", "parallel.zero=1"}).empty());
  CHECK_FALSE(
      test::load_errors(plan, {"parallel.fp8_all_gather=true", "training.precision=\"bf16\""})
          .empty());
}

TEST_CASE("packed documents attend only within themselves", "[overlap][compute]") {
  // FlashAttention varlen / document masks: a token's keys are its document's, so the s²
  // FLOPs scale with the document length, not the packed sequence's.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 8192\n[cluster]\n"
      "gpu = \"h100-sxm5-80gb\"\n";
  const PlanInput whole = test::load_text(plan).input;
  const PlanInput packed = test::load_text(plan, {"training.document_length=2048"}).input;
  const StageFlops a = stage_flops(whole, 32, true);
  const StageFlops b = stage_flops(packed, 32, true);
  CHECK(b.attention == Approx(a.attention / 4));
  CHECK(a.gemm == b.gemm);
  // A document longer than the sequence is the sequence.
  const PlanInput longer = test::load_text(plan, {"training.document_length=100000"}).input;
  CHECK(stage_flops(longer, 32, true).attention == Approx(a.attention));
}

TEST_CASE("the invariant checker sees the step's parts and the exposed traffic", "[overlap]") {
  // With offload the step has a sixth part (time.offload); the checker adds every step part.
  PlanResult p = test::plan_text(k_64, {"parallel.zero=2", "parallel.offload=\"optimizer\""});
  REQUIRE(find_item(p.time, ItemId::time_offload));
  CHECK(check_invariants(p).empty());
  PlanResult broken_step = p;
  for (LineItem& i : broken_step.time)
    if (i.item == ItemId::time_offload) i.value *= 2;
  CHECK_FALSE(check_invariants(broken_step).empty());
  // Overlap never exposes more than the traffic takes.
  PlanResult broken_overlap = p;
  double traffic = 0;
  for (const LineItem& c : p.communication)
    if (c.time_s) traffic += *c.time_s;
  const double exposed = value_of(p.time, ItemId::time_comm_exposed);
  for (LineItem& i : broken_overlap.time) {
    if (i.item == ItemId::time_comm_exposed) i.value = 2 * traffic;
    if (i.item == ItemId::time_step) i.value += 2 * traffic - exposed;  // still adds up
  }
  const std::vector<std::string> found = check_invariants(broken_overlap);
  REQUIRE(found.size() == 1);
  CHECK(found[0].find("exposed communication") != std::string::npos);
}

// Host dispatch (docs/formulas.md#dispatch): the kernels a layer launches, and the GPU waiting
// for them when they are shorter than their dispatch.
TEST_CASE("host dispatch: kernels per layer and the GPU waiting for the host", "[time][host]") {
  const std::string one = R"(
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
  // Hugging Face's Llama layer, eager: two RMSNorms of 8 kernels (10 backward), q/k/v/o,
  // RoPE 5 per tensor, flash attention and the output copy, gate/up/down, SiLU and the
  // product, two residual adds: 39 forward; backward 2 per GEMM, 3 for flash attention.
  const Kernels eager = layer_kernels(test::load_text(one).input);
  CHECK(eager.forward == 39);
  CHECK(eager.backward == 53);
  // Transformer Engine: qkv and fc1 as one GEMM each, every chain one kernel.
  const Kernels te = layer_kernels(test::load_text(one, {"training.framework=\"megatron\""}).input);
  CHECK(te.forward == 2 + 2 + 2 + 2 + 2 + 1 + 1);
  CHECK(te.forward < eager.forward / 3);

  auto value = [](const PlanResult& p, ItemId id) {
    const LineItem* i = find_item(p.time, id);
    REQUIRE(i);
    return i->value;
  };
  // 256 tokens per micro-batch on an H100: the host is slower than the GPU's kernels.
  const PlanResult small = test::plan_text(one);
  const double wait = value(small, ItemId::time_host);
  CHECK(wait > 0.2 * value(small, ItemId::time_step));
  // Its size: 8 micro-batches × (the forward's dispatch − its GPU time), dispatch = 16 layers
  // × 39 × 20 µs plus the head's norm, GEMM and loss; the backward (53 kernels per layer at
  // 5 µs, from the C++ autograd engine) outlasts its dispatch.
  const double dispatch = 16 * 39 * 20e-6 + (8 + 1 + 3) * 20e-6;
  const MicroBatchSplit split = micro_batch_split(small.input, {16});
  CHECK(split.backward_s > 16 * 53 * 5e-6 + (8 + 2 + 3) * 5e-6);
  CHECK(wait == Approx(8 * (dispatch - split.forward_s)).epsilon(1e-6));
  // 2,048 tokens: the kernels outlast their dispatch.
  CHECK(value(test::plan_text(one, {"training.seq_len=2048"}), ItemId::time_host) == 0);
  // CUDA graphs replay a layer with one launch; torch.compile's kernels are fewer and cheaper.
  CHECK(value(test::plan_text(one, {"training.cuda_graphs=true"}), ItemId::time_host) == 0);
  CHECK(value(test::plan_text(one, {"training.compile=true"}), ItemId::time_host) < wait / 4);
  // A slower host waits longer; a free one not at all.
  CHECK(value(test::plan_text(one, {"cluster.op_overhead=\"40 us\""}), ItemId::time_host) >
        wait * 1.5);
  CHECK(value(test::plan_text(one,
                              {"cluster.op_overhead=\"0 us\"", "cluster.launch_overhead=\"0 us\""}),
              ItemId::time_host) == 0);

  // The optimizer's step: foreach and the for-loop run the same unfused element-wise ops, 84 B
  // per fp32 parameter through HBM (43 ms for the 1.24 B parameters at 3.35 TB/s × 0.72); a
  // fused kernel streams the state once (18 ms). The for-loop dispatches 8 ops per tensor from
  // Python (16 layers of 9 tensors + 3): on a slower host that is the step.
  const PlanResult loop = test::plan_text(one, {"training.optimizer_impl=\"for-loop\""});
  const PlanResult foreach = test::plan_text(one);
  const PlanResult fused = test::plan_text(one, {"training.optimizer_impl=\"fused\""});
  const double params = foreach.derived.params;
  CHECK(value(foreach, ItemId::time_optimizer) ==
        Approx(params * 84 / (3.35e12 * 0.72)).epsilon(1e-6));
  CHECK(value(loop, ItemId::time_optimizer) == Approx(value(foreach, ItemId::time_optimizer)));
  CHECK(value(fused, ItemId::time_optimizer) < value(foreach, ItemId::time_optimizer) / 2);
  CHECK(value(test::plan_text(
                  one, {"training.optimizer_impl=\"for-loop\"", "cluster.op_overhead=\"60 us\""}),
              ItemId::time_optimizer) == Approx(147 * 8 * 60e-6).epsilon(1e-6));
  // Megatron-LM and DeepSpeed step with FusedAdam.
  CHECK(test::load_text(one, {"training.framework=\"megatron\""}).input.training.optimizer_impl ==
        OptimizerImpl::fused);
  CHECK(foreach.input.training.optimizer_impl == OptimizerImpl::foreach);
}
