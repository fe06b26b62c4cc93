// Activations: Korthikanti et al. 2022's closed forms fall out of the tensor-by-tensor list
// for the GPT shape; pipeline schedules hold the documented number of micro-batches.
#include <catch2/catch.hpp>

#include <string>

#include "activations.hpp"
#include "helpers.hpp"

using namespace trainledger;
using test::item_value;

namespace {
double backward(const PlanResult& p, const std::string& id, int stage = 0) {
  return test::phase_value(p, id, stage, Phase::backward);
}
}  // namespace

namespace {

// A GPT-3-style layer: MHA, GELU with f = 4h, LayerNorm, biases, dropout, eager attention.
PlanInput gpt(int tp, bool sp, Recompute mode, double s = 2048, double b = 4, double h = 4096,
              int a = 32) {
  const std::string plan =
      "[model]\nlayers = 32\nhidden = " + std::to_string(int(h)) +
      "\nheads = " + std::to_string(a) + "\nffn = " + std::to_string(int(4 * h)) +
      "\nffn_act = \"gelu\"\nnorm = \"layernorm\"\nbias = \"all\"\n"
      "vocab = 51200\nposition_embeddings = 2048\ntied_embeddings = true\n"
      "[training]\nseq_len = " +
      std::to_string(int(s)) + "\nmicro_batch = " + std::to_string(int(b)) +
      "\ndropout = 0.1\nattention = \"eager\"\nrecompute = \"" + std::string(to_string(mode)) +
      "\"\n[parallel]\ntp = " + std::to_string(tp) +
      "\nsequence_parallel = " + (sp ? "true" : "false") +
      "\n[cluster]\ngpu = \"a100-sxm4-80gb\"\n" + "gpus_per_node = " + std::to_string(tp) + "\n";
  return test::load_text(plan).input;
}

}  // namespace

TEST_CASE("Korthikanti: no parallelism, s·b·h·(34 + 5·a·s/h) per layer", "[activations]") {
  const double s = 2048, b = 4, h = 4096, a = 32;
  const PlanInput in = gpt(1, false, Recompute::none, s, b, h, static_cast<int>(a));
  CHECK(layer_bytes(in, Recompute::none) == s * b * h * (34 + 5 * a * s / h));
}

TEST_CASE("Korthikanti: tensor parallel without SP, s·b·h·(10 + 24/t + 5·a·s/(h·t))",
          "[activations]") {
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const PlanInput in = gpt(8, false, Recompute::none, s, b, h, static_cast<int>(a));
  CHECK(layer_bytes(in, Recompute::none) ==
        Approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t))));
}

TEST_CASE("Korthikanti: tensor + sequence parallel, s·b·h·(34 + 5·a·s/h)/t", "[activations]") {
  const double s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const PlanInput in = gpt(8, true, Recompute::none, s, b, h, static_cast<int>(a));
  CHECK(layer_bytes(in, Recompute::none) == Approx(s * b * h * (34 + 5 * a * s / h) / t));
}

TEST_CASE("Korthikanti: selective recompute with SP, 34·s·b·h/t", "[activations]") {
  const double s = 2048, b = 1, h = 12288, t = 8;
  const PlanInput in = gpt(8, true, Recompute::selective, s, b, h, 96);
  CHECK(layer_bytes(in, Recompute::selective) == Approx(34 * s * b * h / t));
}

TEST_CASE("Korthikanti: full recompute keeps the layer input, 2·s·b·h (/t with SP)",
          "[activations]") {
  const double s = 2048, b = 1, h = 12288;
  CHECK(layer_bytes(gpt(8, true, Recompute::full, s, b, h, 96), Recompute::full) ==
        Approx(2 * s * b * h / 8));
  CHECK(layer_bytes(gpt(8, false, Recompute::full, s, b, h, 96), Recompute::full) ==
        Approx(2 * s * b * h));
}

TEST_CASE("docs/formulas.md#zero golden: 34 × 8192 × 4096 × 32 = 36.5 GB = 34.0 GiB",
          "[activations][golden]") {
  // b·s = 8192 tokens, h = 4096, 32 layers, selective recompute (no s² terms).
  const PlanResult p = test::plan_checked(gpt(1, false, Recompute::selective, 2048, 4));
  const double v = item_value(p, "activations");
  CHECK(v == 34.0 * 8192 * 4096 * 32);
  CHECK(v / 1e9 == Approx(36.5).margin(0.05));
  CHECK(v / k_gib == Approx(34.0).margin(0.05));
}

TEST_CASE("flash attention keeps no s² tensor, only a per-row log-sum-exp", "[activations]") {
  PlanInput in = gpt(1, false, Recompute::none);
  in.training.attention = Attention::flash;
  in.training.dropout = 0;
  const double s = 2048, b = 4, h = 4096, a = 32;
  // 32·s·b·h (34 without the two dropout masks) + 4 B per head per token.
  CHECK(layer_bytes(in, Recompute::none) == s * b * h * 32 + 4 * s * b * a);
  in.training.attention = Attention::eager;
  CHECK(layer_bytes(in, Recompute::none) == s * b * h * 32 + 2 * a * s * s * b);  // no masks
}

TEST_CASE("SwiGLU and GQA follow from the same list (Llama-3.1-8B)", "[activations]") {
  const PlanInput in = test::load_text(
                           "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 8192\n"
                           "[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 1\n")
                           .input;
  const double T = 8192, h = 4096, kv = 8 * 128.0, f = 14336, a = 32;
  // norms 2×2Th, qkv in 2Th, q 2Th, k,v 2·2T·kv, lse 4Ta, out 2Th, mlp in 2Th, gate/up/act/down
  // 4×2Tf
  const double expected = 2 * T * h * 6 + 4 * T * kv + 4 * T * a + 8 * T * f;
  CHECK(layer_bytes(in, Recompute::none) == expected);
  // torchtitan's op policy: input, q, v, SDPA output (+lse), w1 and w2 outputs.
  CHECK(layer_bytes(in, Recompute::op) == 2 * T * h * 4 + 2 * T * kv + 4 * T * a + 2 * T * f);
  // An attention kernel the save list does not name (torchtitan's cuDNN attention on Blackwell
  // before b39377f9f): its output and log-sum-exp go, the rest of the list stays.
  PlanInput cudnn = in;
  cudnn.training.op_saves_attention = false;
  CHECK(layer_bytes(cudnn, Recompute::op) == 2 * T * h * 3 + 2 * T * kv + 2 * T * f);
  CHECK(layer_bytes(cudnn, Recompute::none) == expected);
  // What the op policy's recompute produces again: the tensors saved without recompute that
  // it drops (mlp_out, which only the op policy saves, is not among them).
  const Tensors layer = layer_tensors(in, false);
  CHECK(recomputed_bytes(in, layer, Recompute::op) ==
        expected - (2 * T * h * 3 + 2 * T * kv + 4 * T * a + 2 * T * f));
  // Under torch.compile the partitioner saves only what the backward reads: the w2 output,
  // which feeds only the residual add, is not saved (torch/_functorch/partitioners.py).
  PlanInput compiled = in;
  compiled.training.compile = true;
  CHECK(layer_bytes(compiled, Recompute::op) == layer_bytes(in, Recompute::op) - 2 * T * h);
  CHECK(recomputed_bytes(compiled, layer, Recompute::op) ==
        recomputed_bytes(in, layer, Recompute::op));
  CHECK(layer_bytes(compiled, Recompute::none) == expected);
  CHECK(layer_bytes(compiled, Recompute::selective) == layer_bytes(in, Recompute::selective));
}

TEST_CASE("context parallelism divides the sequence per rank", "[activations]") {
  PlanInput in = gpt(1, false, Recompute::selective);
  const double whole = layer_bytes(in, Recompute::selective);
  in.parallel.cp = 4;
  CHECK(layer_bytes(in, Recompute::selective) == Approx(whole / 4));
}

TEST_CASE("1F1B: stage i holds min(p − i, m) micro-batches", "[activations][pipeline]") {
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\n[training]\nseq_len = 4096\nglobal_batch = 16\n"
      "recompute = \"full\"\n[parallel]\npp = 4\n[cluster]\ngpu = \"a100-sxm4-80gb\"\n"
      "gpus_per_node = 4\n";
  const PlanResult p = test::plan_text(plan);
  const double layer = 2.0 * 4096 * 4096;  // full recompute keeps the layer input
  for (int i = 0; i < 4; ++i) CHECK(backward(p, "activations", i) == 8 * layer * (4 - i));
  // m = 2 micro-batches caps every stage at 2.
  const PlanResult few = test::plan_text(plan, {"training.global_batch=2"});
  CHECK(backward(few, "activations", 0) == 8 * layer * 2);
  // GPipe keeps all m.
  const PlanResult gp = test::plan_text(plan, {"parallel.schedule=gpipe"});
  CHECK(backward(gp, "activations", 3) == 8 * layer * 16);
}

TEST_CASE("interleaved: the first stage holds L·(1 + (p − 1)/(p·v)) layers' worth",
          "[activations][pipeline]") {
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\n[training]\nseq_len = 4096\nglobal_batch = 64\n"
      "recompute = \"full\"\n[parallel]\npp = 4\nschedule = \"interleaved\"\nvirtual_stages = 2\n"
      "[cluster]\ngpu = \"a100-sxm4-80gb\"\ngpus_per_node = 4\n";
  const PlanResult p = test::plan_text(plan);
  const double layer = 2.0 * 4096 * 4096;
  const double L = 32, pp = 4, v = 2;
  CHECK(backward(p, "activations", 0) == Approx(layer * L * (1 + (pp - 1) / (pp * v))));
}

TEST_CASE("recompute_layers checkpoints only a share of the layers", "[activations]") {
  const std::string plan =
      "[model]\npreset = \"llama-2-7b\"\n[training]\nrecompute = \"full\"\n"
      "recompute_layers = 0.25\n[cluster]\ngpu = \"a100-sxm4-80gb\"\ngpus_per_node = 1\n";
  const PlanResult p = test::plan_text(plan);
  const PlanInput& in = p.input;
  CHECK(backward(p, "activations") ==
        Approx(24 * layer_bytes(in, Recompute::none) + 8 * layer_bytes(in, Recompute::full)));
}

TEST_CASE("the last stage holds the fp32 log-probabilities, a chunked loss does not",
          "[activations][logits]") {
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 8192\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 1\n";
  const PlanResult p = test::plan_text(plan);
  CHECK(item_value(p, "logits") == 4.0 * 8192 * 128256);
  const PlanResult chunked = test::plan_text(plan, {"training.loss=chunked"});
  CHECK(item_value(chunked, "logits") == 0);
  CHECK(chunked.stages[0].peak_bytes < p.stages[0].peak_bytes - 8e9);
}
