// Architectures beyond the dense Llama (docs/formulas.md#params): multi-head latent attention,
// dense first layers of a MoE model, shared experts, and what they do to the ledger: where the
// parameters lie under pipeline, tensor and expert parallelism, and the attention FLOPs.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "stage_params.hpp"
#include "trainledger/items.hpp"
#include "trainledger/ledger.hpp"
#include "trainledger/model.hpp"

using namespace trainledger;

namespace {

const std::string k_deepseek = R"([model]
preset = "deepseek-v3"
[training]
seq_len = 4096
micro_batch = 1
global_batch = 1920
recompute = "full"
[parallel]
pp = 16
ep = 64
zero = 1
stage_layers = [3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2]
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 256
gpus_per_node = 8
)";

double term(const LineItem& item, const std::string& key) {
  for (const Term& t : item.terms)
    if (t.key == key) return t.value;
  return -1;
}

}  // namespace

TEST_CASE("DeepSeek-V3: the dense first layers lie on the first stage, experts split by ep",
          "[architectures]") {
  const PlanResult plan = test::plan_text(k_deepseek);  // holds the invariant checker
  const ModelSpec& m = plan.input.model;
  const LayerParams dense = layer_params(m, false), moe = layer_params(m, true);
  CHECK(dense.total() == 583483392.0);  // shared/data F-DSV3
  CHECK(moe.total() == 11507286272.0);
  CHECK(dense.latent_matrix == 7168.0 * 1536 + 7168.0 * (512 + 64));
  // Stage 0: the embedding, 3 dense layers (whole: tp = 1) in bf16.
  const double emb = 129280.0 * 7168;
  CHECK(test::item_value(plan, "params", 0) == 2 * (emb + 3 * dense.total()));
  // A middle stage: 4 MoE layers, each with its 256 / 64 = 4 local experts; the shared expert,
  // attention, router and norms whole on every rank.
  const double local = 4 * (moe.total() - moe.expert_matrix + moe.expert_matrix / 64);
  CHECK(test::item_value(plan, "params", 1) == Approx(2 * local).epsilon(1e-12));
  // Flash attention executes half the s² of Q·Kᵀ (d = 192) and P·V (d = 128), forward and
  // backward (×3), on the 4 layers of the slowest stage.
  const LineItem* compute = find_item(plan.time, ItemId::time_compute);
  REQUIRE(compute);
  CHECK(term(*compute, "attention_flops") ==
        Approx(4 * 3 * 0.5 * 2 * 4096.0 * 4096 * 128 * (192 + 128)).epsilon(1e-12));
  // The dense layers must fit on the first stage.
  const auto errors = test::load_errors(k_deepseek, {"parallel.stage_layers=[2, 4, 4, 4, 4, 4, 4, "
                                                     "4, 4, 4, 4, 4, 4, 4, 4, 3]"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("model.dense_layers (3) must lie on the first pipeline stage, which holds "
                       "2 layers first") != std::string::npos);
}

TEST_CASE("MLA under tensor parallelism: latent projections replicated, the rest split",
          "[architectures]") {
  const std::string plan = k_deepseek;
  const PlanResult one = test::plan_text(plan, {"parallel.ep=8", "cluster.nodes=16"});
  const PlanResult two =
      test::plan_text(plan, {"parallel.ep=8", "parallel.tp=2", "cluster.nodes=32"});
  const ModelSpec& m = one.input.model;
  const LayerParams moe = layer_params(m, true);
  // One middle stage (4 MoE layers): halving the split parts keeps the latents and vectors.
  const StageParams a = stage_params(one.input, 4, false, false);
  const StageParams b = stage_params(two.input, 4, false, false);
  const double split = moe.attn_matrix + moe.shared_matrix;
  CHECK(a.dense - b.dense == Approx(4 * split / 2).epsilon(1e-12));
  CHECK(b.expert == Approx(a.expert / 2).epsilon(1e-12));
}

TEST_CASE("shared experts are split by tp, not by ep (Qwen1.5-MoE)", "[architectures]") {
  const std::string plan = R"([model]
hf_config = "hf/qwen1.5-moe-a2.7b.json"
[training]
seq_len = 4096
global_batch = 64
[parallel]
ep = 4
[cluster]
gpu = "h100-sxm5-80gb"
gpus_per_node = 4
)";
  const PlanResult p = test::plan_text(plan);
  const ModelSpec& m = p.input.model;
  CHECK(m.shared_experts == 1);
  CHECK(m.shared_expert_ffn == 5632);
  CHECK(m.shared_expert_gate);
  const LayerParams moe = layer_params(m, true);
  CHECK(moe.shared_matrix == 3.0 * 2048 * 5632);
  CHECK(moe.router == 2048.0 * 60 + 2048);
  // Each rank: everything but 3/4 of the routed experts.
  CHECK(test::item_value(p, "params", 0) ==
        Approx(2 * (total_params(m) - 24 * moe.expert_matrix * 3 / 4)).epsilon(1e-12));
}

TEST_CASE("MoE routing load: the busiest rank's tokens scale expert activations and time",
          "[architectures]") {
  const std::string plan = R"([model]
preset = "mixtral-8x7b"
[training]
seq_len = 4096
global_batch = 64
[parallel]
ep = 8
zero = 3
[cluster]
gpu = "h100-sxm5-80gb"
)";
  auto at = [&](const std::vector<std::string>& sets) { return test::plan_text(plan, sets); };
  const PlanResult balanced = at({"training.moe_imbalance=1"});
  const PlanResult busy = at({"training.moe_imbalance=2"});
  const PlanResult capped = at({"training.moe_capacity_factor=1.5", "training.moe_imbalance=2"});
  const PlanResult assumed = at({});
  // explain shows the load as a term of the activations' formula.
  const LineItem* act = find_item(capped.stages[0].items, ItemId::activations);
  REQUIRE(act);
  CHECK(term(*act, "moe_load") == 1.5);
  CHECK(act->formula.find("B expert_out) × 1.5 × the mean: MoE routing load") != std::string::npos);
  const double a1 = test::item_value(balanced, "activations");
  const double a2 = test::item_value(busy, "activations");
  const double a15 = test::item_value(capped, "activations");
  const double a125 = test::item_value(assumed, "activations");
  // Linear in the load: the routed part grows, the rest does not.
  REQUIRE(a2 > a1);
  CHECK(a15 - a1 == Approx((a2 - a1) * 0.5).epsilon(1e-9));    // the capacity factor wins
  CHECK(a125 - a1 == Approx((a2 - a1) * 0.25).epsilon(1e-9));  // the default, 1.25
  // The slowest rank's GEMMs take longer; model FLOPs (MFU's numerator) do not change.
  const LineItem* c1 = find_item(balanced.time, ItemId::time_compute);
  const LineItem* c2 = find_item(busy.time, ItemId::time_compute);
  REQUIRE((c1 && c2));
  CHECK(term(*c2, "gemm_flops") > term(*c1, "gemm_flops"));
  const LineItem* m1 = find_item(balanced.time, ItemId::mfu);
  const LineItem* m2 = find_item(busy.time, ItemId::mfu);
  REQUIRE((m1 && m2));
  CHECK(term(*m1, "model_flops") == term(*m2, "model_flops"));
  // The all-to-all moves the busiest rank's tokens.
  const auto ep_bytes = [](const PlanResult& p) {
    const LineItem* c = find_item(p.communication, ItemId::comm_ep);
    return c ? c->value : 0.0;
  };
  // The report says what the routed tokens were sized for, and by which key.
  auto says = [](const PlanResult& p, const std::string& text) {
    for (const std::string& w : p.warnings)
      if (w.find(text) != std::string::npos) return true;
    return false;
  };
  CHECK(says(assumed, "MoE routing load 1.25 × the mean (training.moe_imbalance, assumed"));
  CHECK(says(capped, "MoE routing load 1.50 × the mean (training.moe_capacity_factor)"));
  REQUIRE(ep_bytes(balanced) > 0);
  CHECK(ep_bytes(busy) == Approx(2 * ep_bytes(balanced)).epsilon(1e-9));
}

TEST_CASE("sliding-window attention executes a window of keys on its local layers",
          "[architectures]") {
  const std::string plan = R"([model]
hf_config = "hf/gemma-2-9b.json"
[training]
seq_len = 8192
global_batch = 8
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult windowed = test::plan_text(plan);
  CHECK(windowed.input.model.sliding_window == 4096);
  CHECK(windowed.input.model.global_every == 2);  // Gemma 2 alternates local and global
  const PlanResult full = test::plan_text(plan, {"model.sliding_window=0", "model.global_every=0"});
  const LineItem* a = find_item(windowed.time, ItemId::time_compute);
  const LineItem* b = find_item(full.time, ItemId::time_compute);
  REQUIRE((a && b));
  // Local layers: 2w − w²/s = 6144 of 8192 keys; half the layers are local: 0.875.
  CHECK(term(*a, "attention_flops") == Approx(0.875 * term(*b, "attention_flops")).epsilon(1e-12));
  // A window at least as long as the sequence changes nothing.
  const PlanResult wide = test::plan_text(plan, {"model.sliding_window=8192"});
  CHECK(term(*find_item(wide.time, ItemId::time_compute), "attention_flops") ==
        term(*b, "attention_flops"));
  // Gemma 3: five local layers to one global.
  const auto g3 = test::load_text(
      "[model]\nhf_config = \"hf/gemma-3-1b.json\"\n[cluster]\ngpu = "
      "\"h100-sxm5-80gb\"\n");
  CHECK(g3.input.model.sliding_window == 512);
  CHECK(g3.input.model.global_every == 6);
}

TEST_CASE("Llama 4: MoE on every n-th layer, chunked attention, whole groups per stage",
          "[architectures]") {
  const std::string maverick = R"([model]
preset = "llama-4-maverick"
[training]
seq_len = 8192
global_batch = 64
recompute = "full"
[parallel]
tp = 8
ep = 8
pp = 4
dp = 8
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 32
gpus_per_node = 8
)";
  const PlanResult plan = test::plan_text(maverick);  // holds the invariant checker
  const ModelSpec& m = plan.input.model;
  CHECK(moe_layers(m) == 24);
  CHECK(stage_moe_layers(m, 12, true) == 6);
  CHECK(stage_moe_layers(m, 12, false) == 6);
  // A middle stage: 6 MoE layers (128 / 8 = 16 local experts, split by tp too; the shared
  // expert by tp) and 6 dense layers of width 16384, in bf16.
  const LayerParams dense = layer_params(m, false), moe = layer_params(m, true);
  CHECK(dense.mlp_matrix == 3.0 * 5120 * 16384);
  CHECK(moe.shared_matrix == 3.0 * 5120 * 8192);
  const double kv_local = 2.0 * 5120 * 8 * 128 / 8;  // tp = kv_heads: one kv head each
  auto local = [&](const LayerParams& p) {
    return (p.attn_matrix - p.kv_matrix) / 8 + kv_local + p.mlp_matrix / 8 + p.shared_matrix / 8 +
           p.expert_matrix / 64 + p.router + p.norm;
  };
  CHECK(test::item_value(plan, "params", 1) ==
        Approx(2 * 6 * (local(dense) + local(moe))).epsilon(1e-12));
  // The all-to-all runs on the MoE layers only: dispatch and combine forward and backward and
  // in the recomputed forward, 6 per MoE layer, 6 MoE layers, 8 micro-batches.
  const LineItem* ep = find_item(plan.communication, ItemId::comm_ep);
  REQUIRE(ep);
  double calls = 0;
  for (const Collective& c : ep->collectives)
    if (c.collective == "all-to-all") calls += c.calls_per_step;
  CHECK(calls == 6.0 * 6 * 8);
  // Chunked attention: three of four layers attend within 8192-token chunks.
  const PlanResult full = test::plan_text(
      maverick, {"training.seq_len=32768", "model.attention_chunk=0", "model.global_every=0"});
  const PlanResult chunked = test::plan_text(maverick, {"training.seq_len=32768"});
  CHECK(term(*find_item(chunked.time, ItemId::time_compute), "attention_flops") ==
        Approx((0.25 + 0.75 * 8192.0 / 32768) *
               term(*find_item(full.time, ItemId::time_compute), "attention_flops"))
            .epsilon(1e-12));
  // Every stage holds whole pairs of MoE and dense layers.
  const auto errors = test::load_errors(maverick, {"parallel.stage_layers=[13, 11, 12, 12]"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("model.moe_every (2): stage 0 holds 13 layers, not a multiple of it") !=
        std::string::npos);
  // moe_every needs experts, and must leave some MoE layer.
  CHECK(!test::load_errors(maverick, {"model.moe_every=49"}).empty());
}

TEST_CASE("config.json MoE layouts: decoder_sparse_step read, other patterns refused",
          "[architectures][hf]") {
  const std::string cluster = "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  // Qwen2-MoE with experts on every second layer (layers 2, 4, ...): the others dense.
  const auto every =
      test::load_text("[model]\nhf_config = \"hf/qwen-moe-sparse-step-2.json\"\n" + cluster);
  const auto all =
      test::load_text("[model]\nhf_config = \"hf/qwen1.5-moe-a2.7b.json\"\n" + cluster);
  const ModelSpec& m = every.input.model;
  CHECK(m.moe_every == 2);
  CHECK(moe_layers(m) == 12);
  CHECK(total_params(m) == total_params(all.input.model) - 12 * (layer_params(m, true).total() -
                                                                 layer_params(m, false).total()));
  // A Llama 4 moe_layers list that is not every n-th layer: refused, naming the key.
  const auto errors =
      test::load_errors("[model]\nhf_config = \"hf/llama4-odd-moe-layers.json\"\n" + cluster);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("moe_layers = [0, 2]: MoE layers other than every "
                       "interleave_moe_layer_step-th are not modelled") != std::string::npos);
}

TEST_CASE("multi-token prediction: one more MoE layer, a projection and an LM-head pass",
          "[architectures]") {
  const PlanResult base = test::plan_text(k_deepseek);
  const PlanResult mtp = test::plan_text(k_deepseek, {"model.mtp_layers=1"});
  const ModelSpec& m = mtp.input.model;
  const LayerParams moe = layer_params(m, true);
  const double h = 7168;
  // DeepSeek-V3's module: a MoE layer, eh_proj (h × 2h), enorm, hnorm, shared_head.norm.
  CHECK(total_params(m) - total_params(base.input.model) == moe.total() + 2 * h * h + 3 * h);
  CHECK(total_params(m) - total_params(base.input.model) == 11610068224.0);
  // It lies on the last stage (15): its experts split by ep, the rest whole (tp = 1), bf16,
  // and the word embedding Megatron-Core builds on the stage that runs it (mtp_process: a
  // second copy, V·h/t, with its gradients and optimizer state).
  const double local = moe.total() - moe.expert_matrix + moe.expert_matrix / 64;
  const double embedding = 129280.0 * h;
  CHECK(test::item_value(mtp, "params", 15) - test::item_value(base, "params", 15) ==
        Approx(2 * (local + 2 * h * h + 3 * h + embedding)).epsilon(1e-12));
  CHECK(test::item_value(mtp, "grads", 15) - test::item_value(base, "grads", 15) ==
        Approx(4 * (local + 2 * h * h + 3 * h + embedding)).epsilon(1e-12));
  CHECK(test::item_value(mtp, "params", 1) == test::item_value(base, "params", 1));
  // One more pass of the LM head and its loss: the logits are kept twice.
  CHECK(test::item_value(mtp, "logits", 15) == 2 * test::item_value(base, "logits", 15));
  // The last stage's activations hold one more layer (2 → 3, full recompute: the inputs).
  CHECK(test::item_value(mtp, "activations", 15) ==
        Approx(1.5 * test::item_value(base, "activations", 15)).epsilon(1e-12));
  // Model FLOPs grow by the layer, the projection and the head pass.
  const LineItem* f0 = find_item(base.time, ItemId::mfu);
  const LineItem* f1 = find_item(mtp.time, ItemId::mfu);
  REQUIRE((f0 && f1));
  CHECK(term(*f1, "model_flops") > term(*f0, "model_flops"));
}

TEST_CASE("presets keep the sliding window their config.json names", "[architectures][presets]") {
  // gemma-2-9b, gemma-3-1b and mistral-7b: the same window and global layers as the import of
  // their own config.json (tests/data/hf, the Hub's files).
  for (const auto& [preset, config] :
       std::vector<std::pair<std::string, std::string>>{{"gemma-2-9b", "hf/gemma-2-9b.json"},
                                                        {"gemma-3-1b", "hf/gemma-3-1b.json"},
                                                        {"mistral-7b", "hf/mistral-7b.json"}}) {
    const auto p = test::load_text("[model]\npreset = \"" + preset +
                                   "\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
    const auto h = test::load_text("[model]\nhf_config = \"" + config +
                                   "\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n");
    INFO(preset);
    CHECK(p.input.model.sliding_window > 0);
    CHECK(p.input.model.sliding_window == h.input.model.sliding_window);
    CHECK(p.input.model.global_every == h.input.model.global_every);
  }
  // Gemma-3-1B at 32k: five local layers of 512 keys to one global layer. The local layers do
  // 2w − w²/s = 1,016 of 32,768 keys, so attention costs 1/6 + 5/6 × 1016/32768 = 0.1925 of
  // full attention. Without the window it was 5.2× too much.
  const std::string g3 = R"([model]
preset = "gemma-3-1b"
[training]
seq_len = 32768
global_batch = 8
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult windowed = test::plan_text(g3);
  const PlanResult full = test::plan_text(g3, {"model.sliding_window=0", "model.global_every=0"});
  const double a = term(*find_item(windowed.time, ItemId::time_compute), "attention_flops");
  const double b = term(*find_item(full.time, ItemId::time_compute), "attention_flops");
  CHECK(a == Approx(b * (1.0 / 6 + 5.0 / 6 * 1016 / 32768)).epsilon(1e-12));
  CHECK(b / a == Approx(5.19).epsilon(0.01));
}
