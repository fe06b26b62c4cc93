// Memory conventions per training stack (docs/formulas.md#frameworks), each from the stack's
// code, and the wrong numbers found in review, each pinned at its corrected value.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "activations.hpp"
#include "helpers.hpp"
#include "trainledger/items.hpp"
#include "trainledger/ledger.hpp"
#include "trainledger/model.hpp"

using namespace trainledger;

namespace {

const std::string k_fsdp_plan = "configs/plans/llama-3.1-8b-fsdp.toml";

double gib(double bytes) { return bytes / k_gib; }

double state_bytes(const PlanResult& p, int stage = 0) {
  double s = 0;
  for (const char* id : {"params", "grads", "optimizer.m", "optimizer.v", "master"})
    s += test::item_value(p, id, stage);
  return s;
}

std::string deepseek(const std::string& recompute) {
  return R"([model]
preset = "deepseek-v3"
[training]
framework = "megatron"
seq_len = 4096
micro_batch = 1
global_batch = 1920
recompute = ")" +
         recompute + R"("
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
}

const std::string k_bf16_llama = R"([model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
global_batch = 64
[cluster]
gpu = "h100-sxm5-80gb"
)";

}  // namespace

TEST_CASE("FSDP keeps the fp32 shard as the master: 16 B/param, not 18", "[frameworks][state]") {
  const auto loaded = config::load_plan_file(test::source_path(k_fsdp_plan), {});
  const PlanResult p = test::plan_checked(loaded.input);
  const double n = 8030261248.0;
  // 4 B master + 4 B fp32 gradients + 8 B Adam, over 8 ranks: 14.96 GiB (FSDP2's own ledger).
  CHECK(state_bytes(p) == Approx(16 * n / 8).epsilon(1e-12));
  CHECK(gib(state_bytes(p)) == Approx(14.96).margin(0.005));
  CHECK(test::item_value(p, "params") == 0);
  // DeepSpeed ZeRO-3 keeps the 16-bit partition beside its fp32 one: 2 B more.
  const std::string text = test::read_file(test::source_path(k_fsdp_plan));
  const PlanResult ds = test::plan_text(text, {"training.framework=deepspeed"});
  CHECK(test::item_value(ds, "params") == Approx(2 * n / 8).epsilon(1e-12));
  // A frozen part keeps its 16-bit weights under FSDP too.
  const PlanResult frozen = test::plan_text(text, {"training.trainable_params=4e9"});
  CHECK(test::item_value(frozen, "params") == Approx(2 * (n - 4e9) / 8).epsilon(1e-9));
}

TEST_CASE("FSDP under PyTorch's pipelining: no-sync gradients, units kept gathered",
          "[frameworks][temporaries]") {
  // torch.distributed.pipelining runs every micro-batch but the last without gradient sync
  // and without resharding (stage.py backward_maybe_with_nosync); torchtitan keeps the units
  // gathered after forward under pp.
  const std::string plan = k_bf16_llama + "[parallel]\nzero = 3\npp = 2\n";
  const PlanResult p = test::plan_text(plan);
  CHECK(p.input.parallel.grad_sync == GradSync::last_micro_batch);
  CHECK_FALSE(p.input.parallel.reshard_after_forward);
  const PlanResult one = test::plan_text(k_bf16_llama + "[parallel]\nzero = 3\n");
  CHECK(one.input.parallel.grad_sync == GradSync::every_micro_batch);
  CHECK(one.input.parallel.reshard_after_forward);
  // The plan's own choice wins.
  const PlanResult given = test::plan_text(plan, {"parallel.grad_sync=every_micro_batch"});
  CHECK(given.input.parallel.grad_sync == GradSync::every_micro_batch);
  // Megatron and DeepSpeed keep their own rules.
  const PlanResult ds = test::plan_text(plan, {"training.framework=deepspeed"});
  CHECK(ds.input.parallel.grad_sync == GradSync::every_micro_batch);
  CHECK(ds.input.parallel.reshard_after_forward);
  // Kept gathered across micro-batches, each unit is gathered once per step (16 layers + the
  // root per stage), not once per micro-batch.
  auto gathers = [](const PlanResult& r) {
    double calls = 0;
    const LineItem* dp = find_item(r.communication, ItemId::comm_dp);
    REQUIRE(dp);
    for (const Collective& c : dp->collectives)
      if (c.collective == "all-gather") calls += c.calls_per_step;
    return calls;
  };
  const double units = 16 + 1;
  CHECK(gathers(p) == Approx(units));
  const PlanResult resharded = test::plan_text(plan, {"parallel.reshard_after_forward=true"});
  REQUIRE(resharded.derived.grad_accum > 1);
  CHECK(gathers(resharded) == Approx(2 * units * resharded.derived.grad_accum));
}

// torch/distributed/pipelining/stage.py, _PipelineStageBase.forward_one_chunk: every
// micro-batch's output is appended to output_chunks and kept until the schedule merges them at
// the end of step(); on the last stage that output is the logits (fp32 in torchtitan's Llama).
TEST_CASE("PyTorch's pipelining keeps the last stage's logits of every micro-batch",
          "[frameworks][loss][pipeline]") {
  const std::string plan = k_bf16_llama + "[parallel]\nzero = 3\npp = 2\n";
  const PlanResult p = test::plan_text(plan);
  const double m = p.derived.grad_accum;
  REQUIRE(m == 16);  // 64 sequences over 4 data-parallel ranks, one per micro-batch
  // 4,096 tokens × 128,256 vocabulary × 4 B (fp32), for the one at the loss and 15 kept.
  const double one = 4096.0 * 128256 * 4;
  CHECK(test::item_value(p, "logits", 1) == Approx(m * one).epsilon(1e-9));
  CHECK(test::item_value(p, "logits", 0) == 0);
  // Megatron's schedules free each output once sent or reduced; GPipe holds them all anyway.
  CHECK(test::item_value(test::plan_text(plan, {"training.framework=megatron"}), "logits", 1) <
        2 * one);
  CHECK(test::item_value(test::plan_text(plan, {"parallel.schedule=gpipe"}), "logits", 1) ==
        Approx(m * one).epsilon(1e-9));
  // step(return_outputs=False): only the one at the loss.
  CHECK(test::item_value(test::plan_text(plan, {"parallel.keep_stage_outputs=false"}), "logits",
                         1) == Approx(one).epsilon(1e-9));
  // Without pipelining, the one micro-batch at the loss.
  CHECK(test::item_value(test::plan_text(k_bf16_llama + "[parallel]\nzero = 3\n"), "logits") ==
        Approx(one).epsilon(1e-9));
}

TEST_CASE("FSDP1 without limit_all_gathers may hold every unit gathered", "[frameworks]") {
  const std::string plan = k_bf16_llama + "[parallel]\nzero = 3\n";
  const PlanResult limited = test::plan_text(plan);
  const PlanResult ahead = test::plan_text(plan, {"parallel.limit_all_gathers=false"});
  // 32 layers gathered in bf16 instead of two: 30 more layers of 218,112,000 parameters.
  const double layer = layer_params(limited.input.model, false).total();
  CHECK(test::item_value(ahead, "temporaries") - test::item_value(limited, "temporaries") ==
        Approx(2.0 * 30 * layer).epsilon(1e-9));
  const auto errors = test::load_errors(k_bf16_llama, {"parallel.limit_all_gathers=false"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("parallel.limit_all_gathers = false is a PyTorch FSDP option") !=
        std::string::npos);
}

TEST_CASE("offload per stack: Megatron keeps main_grad, FSDP CPUOffload takes NF4 weights too",
          "[frameworks][offload]") {
  const std::string dense = k_bf16_llama + "[parallel]\nzero = 1\n";
  const PlanResult ds =
      test::plan_text(dense, {"parallel.offload=optimizer", "training.framework=deepspeed"});
  const PlanResult mg =
      test::plan_text(dense, {"parallel.offload=optimizer", "training.framework=megatron"});
  CHECK(test::item_value(ds, "grads") == 0);
  // --optimizer-cpu-offload: the fp32 main_grad buffer stays on the GPU (hybrid_optimizer.py).
  CHECK(test::item_value(mg, "grads") == Approx(4 * 8030261248.0).epsilon(1e-12));
  CHECK(test::item_value(mg, "optimizer.m") == 0);
  CHECK(test::item_value(mg, "master") == 0);
  // FSDP's CPUOffload(offload_params=True) on a QLoRA plan: the NF4 base leaves the GPU.
  const std::string qlora_plan = R"([model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
global_batch = 64
finetune = "qlora"
[parallel]
zero = 3
offload = "optimizer+params"
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult fsdp = test::plan_text(qlora_plan);
  CHECK(test::item_value(fsdp, "params.nf4") == 0);
  CHECK(test::item_value(fsdp, "params.nf4_constants") == 0);
  const PlanResult dsq = test::plan_text(qlora_plan, {"training.framework=deepspeed"});
  CHECK(test::item_value(dsq, "params.nf4") > 0);
  // What left the GPU is in the host's ledger (8 GPUs per node; the adapters' gradient
  // dtypes differ between the stacks by a few MB).
  const double nf4 =
      test::item_value(dsq, "params.nf4") + test::item_value(dsq, "params.nf4_constants");
  const double more = value_of(fsdp.host.items, ItemId::host_offload) -
                      value_of(dsq.host.items, ItemId::host_offload);
  CHECK(more == Approx(8 * nf4).epsilon(0.01));
}

TEST_CASE("Megatron's --optimizer-cpu-offload imports as the optimizer offload",
          "[frameworks][imports]") {
  const std::string plan = R"([import]
megatron = "imports/megatron-optimizer-offload.sh"
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult p = test::plan_text(plan);
  CHECK(p.input.parallel.offload == Offload::optimizer);
  CHECK(p.input.training.framework == Framework::megatron);
  CHECK(test::item_value(p, "grads") > 0);
  // --cross-entropy-fusion-impl te: the 16-bit fused kernel.
  CHECK(p.input.training.loss == Loss::fused);
}

TEST_CASE("the loss in 16 bits where the stack does not upcast", "[frameworks][loss]") {
  const PlanResult mixed = test::plan_text(k_bf16_llama);
  CHECK(mixed.input.training.loss_dtype == DType::fp32);
  // DeepSpeed's fp16 engine casts the module (no autocast); pure-bf16 recipes run bf16 logits.
  const PlanResult ds =
      test::plan_text(k_bf16_llama, {"training.framework=deepspeed", "training.precision=fp16"});
  CHECK(ds.input.training.loss_dtype == DType::fp16);
  const PlanResult pure = test::plan_text(k_bf16_llama, {"training.master_weights=false"});
  CHECK(pure.input.training.loss_dtype == DType::bf16);
  // Hugging Face's modeling code upcasts the logits itself (logits.float()).
  const PlanResult hf =
      test::plan_text(k_bf16_llama, {"training.master_weights=false", "training.framework=hf"});
  CHECK(hf.input.training.loss_dtype == DType::fp32);
  // The saved log-probabilities halve: 2 B per logit instead of 4.
  CHECK(test::item_value(pure, "logits") == Approx(test::item_value(mixed, "logits") / 2));
  const PlanResult given = test::plan_text(k_bf16_llama, {"training.loss_dtype=bf16"});
  CHECK(test::item_value(given, "logits") == Approx(test::item_value(mixed, "logits") / 2));
}

TEST_CASE("DeepSpeed's BF16_Optimizer: 16-bit param.grad beside the fp32 buffer",
          "[frameworks][temporaries]") {
  const std::string plan = k_bf16_llama + "[parallel]\nzero = 1\n";
  const PlanResult ds = test::plan_text(plan, {"training.framework=deepspeed"});
  const PlanResult pt = test::plan_text(plan);
  REQUIRE(ds.input.training.grad_dtype == DType::fp32);
  // Same fp32 gradients; DeepSpeed's backward also holds 2 B per parameter of param.grad.
  CHECK(test::item_value(ds, "grads") == test::item_value(pt, "grads"));
  const auto& st = ds.stages[0];
  REQUIRE(st.peak_phase == Phase::backward);
  const LineItem* t = find_item(st.items, ItemId::temporaries);
  REQUIRE(t);
  CHECK(t->formula.find("16-bit gradients before they are added to the fp32 buffer") !=
        std::string::npos);
}

TEST_CASE("a MoE model's dense first layers save a dense MLP's tensors",
          "[architectures][activations]") {
  // DeepSeek-V3, stage 0 of 16: the 3 dense layers (ffn 18432), min(16 stages, 15
  // micro-batches) in flight. They were counted with the MoE layer's tensors (112.08 GiB here,
  // 115.43 GiB in the review's plan); a dense layer's are about half (review: 58.99 GiB).
  const PlanResult p = test::plan_text(deepseek("none"));
  const Tensors dense = layer_tensors(p.input, false);
  const double per_layer = layer_bytes(p.input, dense, Recompute::none);
  CHECK(test::item_value(p, "activations", 0) == Approx(3 * 15 * per_layer).epsilon(1e-12));
  CHECK(gib(test::item_value(p, "activations", 0)) == Approx(58.99).epsilon(0.02));
  // Middle stages hold MoE layers only: unchanged.
  const Tensors moe = layer_tensors(p.input, true);
  CHECK(test::item_value(p, "activations", 1) ==
        Approx(4 * 15 * layer_bytes(p.input, moe, Recompute::none)).epsilon(1e-12));
  // Under full recompute both kinds keep the layer input only.
  const PlanResult full = test::plan_text(deepseek("full"));
  CHECK(test::item_value(full, "activations", 0) ==
        Approx(3.0 / 4 * test::item_value(full, "activations", 1)).epsilon(1e-12));
}

TEST_CASE("the all-to-all communicator: 2 channels per network peer", "[overheads]") {
  // EP 64 over 8 nodes: 7 NVLink peers with the communicator's 16 channels, 56 network peers
  // with NCCL_NCHANNELS_PER_NET_PEER = 2 (src/graph/paths.cc ncclTopoGetNchannels), 10 MiB
  // per connection per channel: 2.19 GiB, not 16 × 63 × 10 MiB = 9.84 GiB.
  const PlanResult p = test::plan_text(deepseek("full"));
  const LineItem* nccl = find_item(p.stages[0].items, ItemId::overhead_nccl);
  REQUIRE(nccl);
  double ep = 0;
  for (const Term& t : nccl->terms)
    if (t.key == "connections_ep") ep += t.value;
  CHECK(ep == 7);
  const double mib = 1024.0 * 1024;
  const PlanResult one_node = test::plan_text(deepseek("full"), {"parallel.ep=8"});
  // With the whole group on one node every peer is an NVLink peer.
  CHECK(test::item_value(p, "overhead.nccl") - test::item_value(one_node, "overhead.nccl") ==
        Approx((16 * 7 + 2 * 56) * 10 * mib - 16 * 7 * 10 * mib).epsilon(1e-9));
  CHECK(gib((16 * 7 + 2 * 56) * 10 * mib) == Approx(2.1875));
}

TEST_CASE("the report names the stack's conventions that moved the numbers",
          "[frameworks][report]") {
  const auto r = test::run_cli({"plan", test::source_path(k_fsdp_plan)});
  REQUIRE(r.code <= 1);
  CHECK(r.out.find("conventions of pytorch (docs/formulas.md#frameworks): fp32 gradients") !=
        std::string::npos);
  CHECK(r.out.find("the fp32 FSDP shard is the master") != std::string::npos);
  // A key the plan gives is its choice, not a convention.
  const auto given =
      test::run_cli({"plan", test::source_path(k_fsdp_plan), "--set", "training.grad_dtype=fp32"});
  CHECK(given.out.find("fp32 gradients (the fp32 parameters' .grad)") == std::string::npos);
  const auto j = nlohmann::json::parse(
      test::run_cli({"plan", test::source_path(k_fsdp_plan), "--format", "json"}).out);
  const auto& conv = j["inputs"]["training"]["conventions"];
  REQUIRE(conv.is_array());
  REQUIRE(conv.size() >= 2);
  CHECK(conv[0]["key"] == "training.grad_dtype");
}

TEST_CASE("DeepSpeed's ZeRO knobs come from its JSON and change the buffers",
          "[frameworks][imports]") {
  const std::string ds = R"([model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
global_batch = 64
framework = "deepspeed"
[parallel]
zero = 3
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult base = test::plan_text(ds);
  CHECK(base.input.parallel.zero3_live_params == 1e9);
  CHECK(base.input.parallel.zero3_prefetch == 5e7);
  // Fewer live parameters: the gathered layers kept for reuse shrink to two layers.
  const PlanResult small = test::plan_text(
      ds, {"parallel.zero3_max_live_parameters=1e6", "parallel.zero3_prefetch_bucket_size=0"});
  const double layer = layer_params(base.input.model, false).total();
  const double live = std::min(1e9, 32 * layer);
  CHECK(test::phase_value(base, "temporaries", 0, Phase::forward) -
            test::phase_value(small, "temporaries", 0, Phase::forward) ==
        Approx(2 * (live - 2 * layer) + 2 * 5e7).epsilon(1e-9));
  // Imported from zero_optimization.
  const PlanResult imported = test::plan_text(R"([import]
deepspeed = "imports/deepspeed-knobs.json"
[model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
global_batch = 64
[cluster]
gpu = "h100-sxm5-80gb"
)");
  CHECK(imported.input.parallel.zero3_live_params == 3e8);
  CHECK(imported.input.parallel.zero3_prefetch == 1e7);
  CHECK(imported.input.parallel.allgather_bucket == 2e8);
}

TEST_CASE("FSDP with QLoRA gathers 4-bit layers, and LoRA layers have adapter gradients only",
          "[frameworks][temporaries]") {
  const std::string qlora = R"([model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
global_batch = 64
finetune = "qlora"
[parallel]
zero = 3
[cluster]
gpu = "h100-sxm5-80gb"
)";
  const PlanResult q = test::plan_text(qlora);
  const auto& st = q.stages[0];
  const LineItem* t = find_item(st.items, ItemId::temporaries);
  REQUIRE(t);
  double bytes = -1, grads = -1;
  for (const Term& term : t->terms) {
    if (term.key.rfind("param_bytes", 0) == 0 && term.value < 2) bytes = term.value;
    if (term.key == "unit_trainable_params") grads = term.value;
  }
  // The layer's matrices in NF4 (0.5 B + double-quantized constants), its norms in bf16.
  CHECK(bytes > 0.5);
  CHECK(bytes < 0.55);
  // Gradients of the layer's adapters only (q and v, rank 8).
  CHECK(grads == Approx(8.0 * (4096 + 4096) + 8.0 * (4096 + 1024)));
}

TEST_CASE("training.framework = auto infers the stack from the plan and says why", "[frameworks]") {
  auto stack = [](const std::vector<std::string>& sets) {
    const PlanResult p = test::plan_text(k_bf16_llama, sets);
    return std::make_pair(std::string(to_string(p.input.training.framework)),
                          p.input.training.framework_basis);
  };
  // Nothing but FSDP: PyTorch, the default stack.
  CHECK(stack({}).first == "pytorch");
  CHECK(stack({"parallel.zero=\"fsdp\""}).first == "pytorch");
  CHECK(stack({"parallel.zero=3"}).first == "pytorch");
  // ZeRO-1 beside model parallelism: Megatron-LM's distributed optimizer.
  const auto z1tp = stack({"parallel.zero=1", "parallel.tp=8"});
  CHECK(z1tp.first == "megatron");
  CHECK(z1tp.second.find("parallel.zero = 1 with model parallelism") != std::string::npos);
  CHECK(stack({"parallel.zero=1", "parallel.ep=8", "model.preset=\"mixtral-8x7b\""}).first ==
        "megatron");
  // Tensor or pipeline parallelism without sharding: Megatron-LM; torchtitan shards with FSDP.
  CHECK(stack({"parallel.tp=8"}).first == "megatron");
  CHECK(stack({"parallel.tp=8", "parallel.zero=\"fsdp\""}).first == "pytorch");
  // ZeRO-1/2 alone, or DeepSpeed's own knobs: DeepSpeed.
  CHECK(stack({"parallel.zero=2"}).first == "deepspeed");
  CHECK(stack({"parallel.zero=1", "cluster.gpus_per_node=8"}).first == "deepspeed");
  CHECK(stack({"parallel.zero=3", "parallel.zero3_max_live_parameters=1e8"}).first == "deepspeed");
  // LoRA and QLoRA: Hugging Face transformers + PEFT.
  const auto lora = stack({"training.finetune=\"lora\""});
  CHECK(lora.first == "hf");
  CHECK(lora.second.find("PEFT") != std::string::npos);
  // Naming the stack always wins, and leaves no reason.
  const auto named = stack({"parallel.zero=2", "training.framework=\"pytorch\""});
  CHECK(named.first == "pytorch");
  CHECK(named.second.empty());
  // An import names its stack.
  const auto imported =
      config::load_plan_file(test::source_path("tests/data/imports/deepspeed.toml"), {});
  CHECK(imported.input.training.framework == Framework::deepspeed);
  CHECK(imported.input.training.framework_basis.empty());
  // The reports say it: the header and the JSON.
  const auto table = test::run_cli({"plan"});
  CHECK(table.out.find("conventions megatron (inferred from the plan: parallel.zero = 1 with "
                       "model parallelism") != std::string::npos);
  const auto j = nlohmann::json::parse(test::run_cli({"plan", "--format", "json"}).out);
  CHECK(j["inputs"]["training"]["framework"] == "megatron");
  CHECK(j["inputs"]["training"]["framework_inferred_from"].get<std::string>().find(
            "distributed optimizer") != std::string::npos);
  const auto named_json = nlohmann::json::parse(
      test::run_cli({"plan", "--set", "training.framework=deepspeed", "--format", "json"}).out);
  CHECK(named_json["inputs"]["training"]["framework"] == "deepspeed");
  CHECK(named_json["inputs"]["training"]["framework_inferred_from"].is_null());
}

TEST_CASE("search keeps the inferred stack and prints it with the best layout", "[frameworks]") {
  const auto r = test::run_cli({"search", "--top", "1"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("--set training.framework=megatron\n") != std::string::npos);
}

TEST_CASE("torchtitan compiles its loss with the model: the 16-bit logits, no fp32 copy",
          "[frameworks][loss]") {
  const std::string plan = k_bf16_llama + "[parallel]\nzero = \"fsdp\"\n";
  const PlanResult eager = test::plan_text(plan);
  const PlanResult compiled = test::plan_text(plan, {"training.compile=true"});
  CHECK(eager.input.training.loss == Loss::standard);
  REQUIRE(compiled.input.training.loss == Loss::fused);
  // Saved for backward: 2 B per logit + a 4 B log-sum-exp per token, not 4 B per logit.
  const double tokens = 4096;
  const double vocab = 128256;
  CHECK(test::item_value(compiled, "logits") == Approx(tokens * (2 * vocab + 4)));
  CHECK(test::item_value(eager, "logits") == Approx(tokens * 4 * vocab));
  // Naming the loss wins; other stacks keep their own loss under compile.
  const PlanResult named =
      test::plan_text(plan, {"training.compile=true", "training.loss=standard"});
  CHECK(named.input.training.loss == Loss::standard);
  const PlanResult hf = test::plan_text(plan, {"training.compile=true", "training.framework=hf"});
  CHECK(hf.input.training.loss == Loss::standard);
}

TEST_CASE("PyTorch's loss_parallel: DTensor's log-softmax and its backward hold more",
          "[frameworks][loss]") {
  // torch/distributed/tensor/parallel/loss.py: _log_softmax keeps x, x - max and exp(x - max)
  // (8 B per logit besides the saved output); _nll_loss_and_log_softmax_backward builds
  // zeros_like(x), exp(x), their sum and its product (12 B besides the saved log-probs).
  const std::string plan = k_bf16_llama + "[parallel]\ntp = 2\n";
  const std::string torch = "training.framework=pytorch";
  const PlanResult eager = test::plan_text(plan, {torch});
  REQUIRE(eager.input.training.framework == Framework::pytorch);
  REQUIRE(eager.input.training.loss == Loss::standard);
  const double logits = 4096.0 * 128256 / 2;  // tokens × vocab / tp
  CHECK(test::phase_value(eager, "temporaries", 0, Phase::forward) == Approx(8 * logits));
  const double backward = test::phase_value(eager, "temporaries", 0, Phase::backward);
  const PlanResult fused = test::plan_text(plan, {torch, "training.loss=fused"});
  CHECK(backward - test::phase_value(fused, "temporaries", 0, Phase::backward) ==
        Approx((12 - 2) * logits));
  // Without TP the aten kernels: 8 B in backward (the gradients of the log-probs and logits).
  const PlanResult one = test::plan_text(k_bf16_llama, {torch});
  const PlanResult one_fused = test::plan_text(k_bf16_llama, {torch, "training.loss=fused"});
  CHECK(test::phase_value(one, "temporaries", 0, Phase::backward) -
            test::phase_value(one_fused, "temporaries", 0, Phase::backward) ==
        Approx((8 - 2) * 2 * logits));
}

TEST_CASE("DeepSpeed's FP16_Optimizer copies every gradient to fp32, then flattens the copies",
          "[frameworks][temporaries]") {
  const PlanResult p =
      test::plan_text(k_bf16_llama, {"training.framework=deepspeed", "training.precision=fp16",
                                     "training.grad_dtype=fp16", "parallel.zero=0"});
  const std::vector<LineItem> items = phase_ledger(p.input, 0, Phase::optimizer);
  const LineItem* t = find_item(items, ItemId::temporaries);
  REQUIRE(t);
  // 8 B per gradient element: the per-parameter fp32 copies and the flat fp32 group.
  CHECK(t->value == Approx(8.0 * test::item_value(p, "grads") / 2));
  CHECK(t->formula.find("FP16_Optimizer") != std::string::npos);
}

TEST_CASE("Megatron's --fp8-param-gather keeps the GEMM weights in FP8 only", "[stack][fp8]") {
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nframework = \"megatron\"\n"
      "precision = \"fp8\"\nseq_len = 8192\n[parallel]\ntp = 2\nzero = 1\n[cluster]\n"
      "gpu = \"h100-sxm5-80gb\"\n";
  const PlanResult base = test::plan_text(plan);
  const PlanResult gather = test::plan_text(plan, {"parallel.fp8_param_gather=true"});
  const double fp8 = test::item_value(base, "params.fp8");
  REQUIRE(fp8 > 0);
  // The bf16 copy of every GEMM weight goes (2 B each); the FP8 data and its transpose (2 B on
  // Hopper) stay.
  CHECK(test::item_value(gather, "params.fp8") == fp8);
  CHECK(test::item_value(base, "params") - test::item_value(gather, "params") ==
        Approx(fp8).epsilon(1e-9));
  // The distributed optimizer gathers the updated GEMM weights in FP8: less traffic.
  auto gathered = [](const PlanResult& p) {
    double bytes = 0;
    for (const LineItem& i : p.communication)
      for (const Collective& c : i.collectives)
        if (c.collective == "all-gather") bytes += c.message_bytes * c.calls_per_step;
    return bytes;
  };
  CHECK(gathered(gather) < gathered(base));
  // Megatron's own flag: another stack, bf16 or no distributed optimizer is refused at the key.
  for (const std::string& set :
       {std::string("training.framework=pytorch"), std::string("training.precision=bf16"),
        std::string("parallel.zero=0")}) {
    INFO(set);
    const auto errors = test::load_errors(plan, {"parallel.fp8_param_gather=true", set});
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].find("parallel.fp8_param_gather is Megatron-LM's --fp8-param-gather") !=
          std::string::npos);
  }
  // NVIDIA's Llama 3 8B FP8 example passes the flag: imported, it fits on its H100s.
  const config::LoadedPlan imported =
      config::load_plan_file(test::source_path("tests/data/imports/megatron.toml"), {});
  CHECK(imported.input.parallel.fp8_param_gather);
  CHECK(test::plan_checked(imported.input).verdict.fits);
}

TEST_CASE("Megatron-Core's activation offloading keeps N - k layers' activations on the GPU",
          "[stack][offload]") {
  // Llama 3 70B with Megatron-FSDP on 16 GB200 trays, as Megatron-Bridge's recipe offloads it.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-70b\"\n[training]\nframework = \"megatron\"\nseq_len = "
      "8192\nglobal_batch = 128\nprecision = \"fp8\"\n[parallel]\nzero = 3\n[cluster]\ngpu = "
      "\"gb200-186gb\"\nnodes = 16\n";
  const PlanResult all = test::plan_text(plan);
  const PlanResult half = test::plan_text(plan, {"training.activation_offload_layers=40"});
  const double resident = test::item_value(half, "activations");
  CHECK(resident == Approx(test::item_value(all, "activations") * 40 / 80).epsilon(1e-9));
  CHECK(half.verdict.peak_bytes < all.verdict.peak_bytes);
  // The host holds the other 40 layers' (one micro-batch) in pinned buffers, per rank.
  const LineItem* host = find_item(half.host.items, ItemId::host_activations);
  REQUIRE(host);
  CHECK(host->value == Approx(resident * 4).epsilon(1e-9));  // 4 GPUs per tray
  CHECK_FALSE(find_item(all.host.items, ItemId::host_activations));
  // The copies overlap the compute: over GB200's host link they hide behind 78 layers of
  // compute; over a slow link the compute waits, and the step says so.
  const LineItem* hidden = find_item(half.time, ItemId::time_offload);
  REQUIRE(hidden);
  CHECK(hidden->value == 0);
  const PlanResult slow = test::plan_text(
      plan, {"training.activation_offload_layers=40", "cluster.pcie_bandwidth=\"2 GB/s\""});
  const double waits = value_of(slow.time, ItemId::time_offload);
  CHECK(waits > 0);
  CHECK(value_of(slow.time, ItemId::time_step) ==
        Approx(value_of(half.time, ItemId::time_step) + waits).epsilon(1e-6));
  // What Megatron-Core refuses is refused, at the key.
  const auto error = [&](std::vector<std::string> sets) {
    sets.push_back("training.activation_offload_layers=40");
    const auto errors = test::load_errors(plan, sets);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  CHECK_THAT(error({"parallel.pp=2"}),
             Catch::Contains("without pipeline parallelism only (parallel.pp is 2)"));
  CHECK_THAT(error({"training.recompute=\"full\""}), Catch::Contains("with recompute"));
  CHECK_THAT(error({"training.framework=\"pytorch\""}),
             Catch::Contains("it needs training.framework = \"megatron\""));
  CHECK_THAT(test::load_errors(plan, {"training.activation_offload_layers=80"}).at(0),
             Catch::Contains("at most the model's layers less one (79)"));
}
