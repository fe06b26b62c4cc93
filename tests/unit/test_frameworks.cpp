// Framework conventions (docs/formulas.md#frameworks): what each stack really keeps.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "trainledger/report.hpp"

using namespace trainledger;

namespace {

const std::string k_7b_one_gpu =
    "[model]\npreset = \"llama-2-7b\"\n[training]\nseq_len = 1024\n[cluster]\n"
    "gpu = \"h100-sxm5-80gb\"\ngpus_per_node = 1\n";

}  // namespace

TEST_CASE("Megatron-LM keeps fp32 main_grad: 18 bytes per parameter without ZeRO", "[frameworks]") {
  // megatron/training/theoretical_memory_usage.py: num_bytes_per_parameter = 18 without the
  // distributed optimizer, 6 + 12 / dp with it.
  const PlanResult p = test::plan_text(k_7b_one_gpu, {"training.framework=\"megatron\""});
  CHECK(p.input.training.grad_dtype == DType::fp32);
  CHECK(p.input.provenance.of("training.grad_dtype") == Source::derived);
  CHECK(test::state_bytes(p) == 18 * p.derived.params);
  // fp32 gradients need no upcast at the step.
  CHECK(test::phase_value(p, "temporaries", 0, Phase::optimizer) == 0);
  const std::string eight =
      "[model]\npreset = \"llama-2-7b\"\n[training]\nseq_len = 1024\nframework = \"megatron\"\n"
      "[parallel]\ndp = 8\nzero = 1\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  const PlanResult d = test::plan_text(eight);
  CHECK(test::state_bytes(d) == Approx((6 + 12.0 / 8) * d.derived.params).epsilon(1e-9));
  // A plan that says grad_dtype keeps it.
  const PlanResult given = test::plan_text(
      k_7b_one_gpu, {"training.framework=\"megatron\"", "training.grad_dtype=\"bf16\""});
  CHECK(given.input.training.grad_dtype == DType::bf16);
}

TEST_CASE("Megatron-LM's fused SwiGLU saves three MLP tensors, not four", "[frameworks]") {
  const PlanResult eager = test::plan_text(k_7b_one_gpu);
  const PlanResult fused = test::plan_text(k_7b_one_gpu, {"training.framework=\"megatron\""});
  // One s·b·f tensor of 2 bytes per layer less: 1024 tokens × 11,008 × 2 B × 32 layers.
  CHECK(test::phase_value(eager, "activations", 0, Phase::backward) -
            test::phase_value(fused, "activations", 0, Phase::backward) ==
        1024.0 * 11008 * 2 * 32);
  // The report says which stack's conventions a plan follows, the default included.
  const PlanSource source = test::load_text(k_7b_one_gpu).plan_source();
  CHECK(report::render_table(fused, source, {}).find("conventions megatron") != std::string::npos);
  CHECK(report::render_table(eager, source, {}).find("conventions pytorch") != std::string::npos);
}

TEST_CASE("DeepSpeed: fp32 gradients under BF16_Optimizer, 5e8-element buckets", "[frameworks]") {
  // deepspeed/runtime/bf16_optimizer.py keeps fp32_groups_gradients (ZeRO 0-1 with bf16);
  // deepspeed/runtime/zero/config.py: reduce_bucket_size = allgather_bucket_size = 5e8.
  const PlanResult z1 =
      test::plan_text(k_7b_one_gpu, {"training.framework=\"deepspeed\"", "parallel.zero=1",
                                     "cluster.gpus_per_node=8", "parallel.dp=8"});
  CHECK(z1.input.training.grad_dtype == DType::fp32);
  CHECK(z1.input.parallel.bucket_size == 5e8 * 4);
  const PlanResult z2 =
      test::plan_text(k_7b_one_gpu, {"training.framework=\"deepspeed\"", "parallel.zero=2",
                                     "cluster.gpus_per_node=8", "parallel.dp=8"});
  CHECK(z2.input.training.grad_dtype == DType::bf16);
  CHECK(z2.input.parallel.bucket_size == 5e8 * 2);
  // The buckets are real memory in backward. With overlap_comm DeepSpeed holds 4.5 × its
  // reduce and all-gather buckets (Hugging Face's DeepSpeed guide: 5e8 × 2 B × 2 × 4.5 =
  // 9 GB); without it two buckets, 2 GB (PyTorch's: two of 25 MiB).
  const PlanResult generic =
      test::plan_text(k_7b_one_gpu, {"training.framework=\"pytorch\"", "parallel.zero=2",
                                     "cluster.gpus_per_node=8", "parallel.dp=8"});
  CHECK(test::phase_value(z2, "temporaries", 0, Phase::backward) -
            test::phase_value(generic, "temporaries", 0, Phase::backward) ==
        9e9 - 2 * 25.0 * 1024 * 1024);
  const PlanResult z2_no_overlap = test::plan_text(
      k_7b_one_gpu, {"training.framework=\"deepspeed\"", "parallel.zero=2",
                     "cluster.gpus_per_node=8", "parallel.dp=8", "parallel.overlap_dp=false"});
  const PlanResult generic_no_overlap = test::plan_text(
      k_7b_one_gpu, {"training.framework=\"pytorch\"", "parallel.zero=2", "cluster.gpus_per_node=8",
                     "parallel.dp=8", "parallel.overlap_dp=false"});
  CHECK(test::phase_value(z2_no_overlap, "temporaries", 0, Phase::backward) -
            test::phase_value(generic_no_overlap, "temporaries", 0, Phase::backward) ==
        2 * (1e9 - 25.0 * 1024 * 1024));
}

TEST_CASE("PyTorch (the default): fp32 gradients, fp32 reduction unless reduce_dtype says",
          "[frameworks]") {
  // PyTorch AMP and FSDP keep fp32 parameters, so param.grad is fp32; torchtitan reduces in
  // fp32 (mixed_precision_reduce = "float32"), many FSDP recipes in bf16.
  const std::string fsdp = k_7b_one_gpu + "[parallel]\nzero = 3\n";
  const PlanResult p = test::plan_text(fsdp, {"cluster.gpus_per_node=8"});
  CHECK(p.input.training.framework == Framework::pytorch);
  CHECK(p.input.training.grad_dtype == DType::fp32);
  CHECK(p.input.training.reduce_dtype == DType::fp32);
  CHECK(p.input.provenance.of("training.reduce_dtype") == Source::derived);
  const PlanResult bf16 =
      test::plan_text(fsdp, {"cluster.gpus_per_node=8", "training.reduce_dtype=\"bf16\""});
  // The sharded gradients stay fp32; only the reduce-scatter halves.
  CHECK(test::item_value(bf16, "grads") == test::item_value(p, "grads"));
  const auto reduce_scatter = [](const PlanResult& r) {
    for (const Collective& c : find_item(r.communication, ItemId::comm_dp)->collectives)
      if (c.collective == "reduce-scatter") return c.message_bytes * c.calls_per_step;
    return 0.0;
  };
  CHECK(reduce_scatter(p) == Approx(2 * reduce_scatter(bf16)));
  // Checkpoints: the fp32 weights are the master copy, 12 B per parameter with AdamW.
  CHECK(value_of(p.reliability, ItemId::checkpoint_size) == 12 * p.derived.params);
}

TEST_CASE("Hugging Face Trainer: eager RMSNorm keeps fp32 copies", "[frameworks]") {
  const PlanResult torch = test::plan_text(k_7b_one_gpu);
  const PlanResult hf = test::plan_text(k_7b_one_gpu, {"training.framework=\"hf\""});
  CHECK(hf.input.training.eager_norm);
  CHECK(hf.input.provenance.of("training.norm_impl") == Source::derived);
  CHECK(test::phase_value(hf, "activations", 0, Phase::backward) >
        test::phase_value(torch, "activations", 0, Phase::backward));
  // A plan that names the norm keeps it.
  const PlanResult fused =
      test::plan_text(k_7b_one_gpu, {"training.framework=\"hf\"", "training.norm_impl=\"fused\""});
  CHECK_FALSE(fused.input.training.eager_norm);
}

TEST_CASE("DeepSpeed ZeRO-3 keeps up to 1e9 gathered parameters and one reduce bucket",
          "[frameworks]") {
  // deepspeed/runtime/zero/config.py: stage3_max_live_parameters = stage3_max_reuse_distance =
  // 1e9, stage3_prefetch_bucket_size = 5e7; stage3.py allocates a contiguous reduce bucket of
  // reduce_bucket_size elements.
  const std::string z3 = k_7b_one_gpu + "[parallel]\nzero = 3\n";
  const PlanResult ds = test::plan_text(
      z3, {"cluster.gpus_per_node=8", "training.framework=\"deepspeed\"", "training.seq_len=512"});
  const PlanResult fsdp = test::plan_text(z3, {"cluster.gpus_per_node=8", "training.seq_len=512"});
  // Llama 2 7B: 32 layers of 202 M parameters; 1e9 elements of bf16 live and 5e7 prefetched
  // against FSDP's two layers, plus a 1 GB bucket against one layer's fp32 gradients.
  const double layer = 202383360;
  const double fsdp_gathers = 2 * 2 * layer + 4 * layer;
  // DeepSpeed also keeps the embedding gathered (its root), which torchtitan's FSDP units
  // reshard after forward: 32,000 × 4,096 in bf16.
  const double ds_gathers = 2 * 1e9 + 2 * 5e7 + 2 * 5e8 + 2.0 * 32000 * 4096;
  const double diff = test::phase_value(ds, "temporaries", 0, Phase::backward) -
                      test::phase_value(fsdp, "temporaries", 0, Phase::backward);
  CHECK(diff == Approx(ds_gathers - fsdp_gathers).epsilon(1e-6));
}

TEST_CASE("Megatron-LM's vocab-parallel cross-entropy works in place: 6 B per logit",
          "[frameworks]") {
  // megatron/core/tensor_parallel/cross_entropy.py: the fp32 softmax it saves becomes the
  // gradient in place; with the 16-bit logits that is 6 B per logit, not 12.
  const std::string tp2 = k_7b_one_gpu + "[parallel]\ntp = 2\n";
  const PlanResult m =
      test::plan_text(tp2, {"training.framework=\"megatron\"", "cluster.gpus_per_node=2"});
  const double logits = 1024.0 * 32000 / 2;  // tokens × vocab / tp
  CHECK(test::phase_value(m, "logits", 0, Phase::backward) == 4 * logits);
  const PlanResult p =
      test::plan_text(tp2, {"training.framework=\"pytorch\"", "cluster.gpus_per_node=2"});
  // The loss's transient parts: 2 B (Megatron) against 12 B (PyTorch's loss_parallel under
  // TP, DTensor's decomposition: torch/distributed/tensor/parallel/loss.py).
  CHECK(test::phase_value(p, "temporaries", 0, Phase::backward) -
            test::phase_value(m, "temporaries", 0, Phase::backward) ==
        Approx(10 * logits));
}

TEST_CASE("a Megatron-style plan matches Megatron-LM's own theoretical memory",
          "[frameworks][megatron]") {
  // megatron/training/theoretical_memory_usage.py on GPT-3 175B as Korthikanti et al. ran it
  // (tp 8, pp 8, interleaved over 3 chunks, sequence parallel, selective recompute, s 2048,
  // b 1): activations of the first stage = s·b·h·(18 + 4·ffn/h) per layer × all layers × the
  // interleaving penalty (1 + (p − 1)/(p·v)) / tp, plus the embedding's inputs (8 B per token
  // id) and dropout mask (s·b·h) for p micro-batches; weights and optimizer state = the first
  // stage's parameters × 18 B without the distributed optimizer, 6 + 12/dp with it.
  const config::LoadedPlan loaded =
      config::load_plan_file(test::source_path("tests/reference/time/175B-seqsel.toml"),
                             {{"training.framework=\"megatron\""}, {}});
  const PlanResult p = test::plan_checked(loaded.input);
  const double s = 2048, b = 1, h = 12288, pp = 8, tp = 8, v = 3, layers = 96, ffn = 49152;
  const double penalty = 1 + (pp - 1) / (pp * v);
  const double per_layer = s * b * h * (18 + 4 * ffn / h);
  CHECK(test::item_value(p, "activations") == Approx(per_layer * layers * penalty / tp));
  const double embedding = (8 * s * b * pp + s * b * h * pp) * penalty / tp;
  CHECK(test::item_value(p, "activations.edges") == Approx(embedding).epsilon(0.001));
  // Weights + gradients + optimizer: 18 B per parameter of the most loaded shard (the first
  // stage: 12 layers and the word embedding, over tp): 2·L·h²·(1 + 1 + ffn/h) per layer.
  // Megatron's function leaves out the learned position table (2048 × h, replicated on every
  // TP rank: 0.9 % here), biases and norms (0.04 %); the planner counts them.
  const double vocab = 51200;
  const double shard = (2 * layers * h * h * (2 + ffn / h) / pp + h * vocab) / tp;
  CHECK(test::state_bytes(p) == Approx(18 * (shard + s * h)).epsilon(0.001));
}

TEST_CASE("under autocast eager attention saves its softmax in fp32", "[frameworks]") {
  // PyTorch's autocast runs softmax in fp32 (the Hugging Face Trainer's fp16/bf16 is autocast):
  // per layer, heads × s × s × 4 bytes instead of 2. BERT-large shape, batch 4, seq 512.
  const std::string plan =
      "[model]\nlayers = 24\nhidden = 1024\nheads = 16\nffn = 4096\nffn_act = \"gelu\"\n"
      "vocab = 30522\n[training]\nseq_len = 512\nmicro_batch = 4\nprecision = \"fp16\"\n"
      "attention = \"eager\"\n[cluster]\ngpu = \"v100-sxm2-32gb\"\n";
  const PlanResult hf =
      test::plan_text(plan, {"training.framework=\"hf\"", "training.norm_impl=\"fused\""});
  const PlanResult plain = test::plan_text(plan);
  const double scores = 16.0 * 4 * 512 * 512;
  CHECK(test::item_value(hf, "activations") - test::item_value(plain, "activations") ==
        Approx(24 * scores * 2));
}

TEST_CASE("the stacks' other names select their conventions", "[frameworks]") {
  for (const auto& [alias, framework] :
       std::vector<std::pair<std::string, Framework>>{{"torchtitan", Framework::pytorch},
                                                      {"fsdp", Framework::pytorch},
                                                      {"hf-trainer", Framework::hf},
                                                      {"nemo", Framework::megatron},
                                                      {"megatron-core", Framework::megatron}}) {
    INFO(alias);
    const PlanInput in =
        test::load_text(k_7b_one_gpu, {"training.framework=\"" + alias + "\""}).input;
    CHECK(in.training.framework == framework);
  }
  // NeMo's buckets follow Megatron-Core's rule, as under "megatron".
  CHECK(test::load_text(k_7b_one_gpu, {"training.framework=\"nemo\""}).input.parallel.bucket_size ==
        4e7 * 4);
}

TEST_CASE("DeepSpeed upcasts the gradient partition one sub-group at a time", "[frameworks]") {
  // stage3.py _prepare_fp32_grad_for_sub_group: the sub-group's 16-bit gradients are flattened
  // and copied to fp32, sub_group_size = 1e9 elements at most. Llama 2 70B over 8 GPUs: the
  // 8.6e9-element partition is upcast 1e9 elements at a time (6 GB), not all at once.
  const std::string plan =
      "[model]\npreset = \"llama-2-70b\"\n[training]\nseq_len = 2048\nframework = "
      "\"deepspeed\"\n[parallel]\nzero = 3\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  const PlanResult p = test::plan_text(plan);
  CHECK(test::phase_value(p, "temporaries", 0, Phase::optimizer) == 1e9 * (4 + 2));
  // ZeRO-2 upcasts its whole partition.
  const PlanResult z2 = test::plan_text(plan, {"parallel.zero=2"});
  const double partition = test::item_value(z2, "grads") / 2;
  CHECK(test::phase_value(z2, "temporaries", 0, Phase::optimizer) == Approx(partition * 6));
}

TEST_CASE("Hugging Face's tensor parallelism gathers the logits to every rank", "[frameworks]") {
  // transformers' tp_plan shards lm_head column-wise and gathers its output ("colwise_rep"):
  // every TP rank holds the whole vocabulary's logits and computes the loss on them; Megatron-LM
  // and torchtitan (loss_parallel) split the vocabulary over tp.
  const std::string tp2 = k_7b_one_gpu + "[parallel]\ntp = 2\n";
  const double logits = 1024.0 * 32000;  // tokens × vocab
  const PlanResult hf =
      test::plan_text(tp2, {"training.framework=\"hf\"", "cluster.gpus_per_node=2"});
  CHECK(test::phase_value(hf, "logits", 0, Phase::backward) == 4 * logits);
  const PlanResult pt = test::plan_text(tp2, {"cluster.gpus_per_node=2"});
  CHECK(test::phase_value(pt, "logits", 0, Phase::backward) == 4 * logits / 2);
}

TEST_CASE("Megatron-LM's attention is Transformer Engine's fused kernel: the preset's fused rate",
          "[frameworks][time]") {
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 8192\n[parallel]\ntp = 8\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  CHECK(test::plan_text(plan, {"training.framework=\"megatron\""})
            .input.cluster.attention_efficiency == 0.6);
  CHECK(test::plan_text(plan, {"training.framework=\"pytorch\""})
            .input.cluster.attention_efficiency == 0.3);
  // The plan's own value wins; a GPU without a fused rate keeps its flash-attention one.
  CHECK(
      test::plan_text(plan, {"training.framework=\"megatron\"", "cluster.attention_efficiency=0.4"})
          .input.cluster.attention_efficiency == 0.4);
  CHECK(test::plan_text(plan, {"training.framework=\"megatron\"", "cluster.gpu=\"a100-sxm4-80gb\""})
            .input.cluster.attention_efficiency == 0.55);
  // Faster attention, a shorter step.
  CHECK(
      value_of(test::plan_text(plan, {"training.framework=\"megatron\""}).time, ItemId::time_step) <
      value_of(test::plan_text(
                   plan, {"training.framework=\"megatron\"", "cluster.attention_efficiency=0.3"})
                   .time,
               ItemId::time_step));
}

TEST_CASE("torchtitan's FSDP units: the embedding reshards after forward, the head stays",
          "[frameworks]") {
  // torchtitan's apply_fsdp (since 83e694105): fully_shard(tok_embeddings), each layer,
  // fully_shard([norm, output], reshard_after_forward=False), then the model. Backward holds
  // the head's unit, not the embedding's: Llama 3.1 8B's 128,256 × 4,096 embedding in bf16.
  const std::string fsdp =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 1024\n[parallel]\nzero = 3\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 8\n";
  const PlanResult split = test::plan_text(fsdp);
  CHECK(split.input.parallel.fsdp_split_root);
  CHECK(split.input.provenance.of("parallel.fsdp_root") == Source::derived);
  const PlanResult root = test::plan_text(fsdp, {"parallel.fsdp_root=\"model\""});
  CHECK_FALSE(root.input.parallel.fsdp_split_root);
  const double embedding = 2.0 * 128256 * 4096;
  for (Phase phase : {Phase::forward, Phase::backward})
    CHECK(test::phase_value(root, "temporaries", 0, phase) -
              test::phase_value(split, "temporaries", 0, phase) ==
          Approx(embedding));
  // The other stacks keep the ends in the root (FSDP1's auto-wrap, DeepSpeed's ZeRO-3).
  CHECK_FALSE(test::plan_text(fsdp, {"training.framework=\"hf\""}).input.parallel.fsdp_split_root);
  CHECK_FALSE(
      test::plan_text(fsdp, {"training.framework=\"deepspeed\""}).input.parallel.fsdp_split_root);
  // Tied embeddings are one unit (Llama 3.2 1B): nothing to split.
  const std::string tied =
      "[model]\npreset = \"llama-3.2-1b\"\n[training]\nseq_len = 1024\n[parallel]\nzero = 3\n"
      "[cluster]\ngpu = \"h100-sxm5-80gb\"\ngpus_per_node = 8\n";
  CHECK(test::phase_value(test::plan_text(tied), "temporaries", 0, Phase::backward) ==
        test::phase_value(test::plan_text(tied, {"parallel.fsdp_root=\"model\""}), "temporaries", 0,
                          Phase::backward));
  // Without resharding after forward (pipelining) the embedding's unit stays gathered too.
  const PlanResult kept = test::plan_text(fsdp, {"parallel.reshard_after_forward=false"});
  const PlanResult kept_root = test::plan_text(
      fsdp, {"parallel.reshard_after_forward=false", "parallel.fsdp_root=\"model\""});
  CHECK(test::phase_value(kept, "temporaries", 0, Phase::backward) ==
        test::phase_value(kept_root, "temporaries", 0, Phase::backward));
}

TEST_CASE("an attention kernel off the op save list runs again in backward", "[frameworks]") {
  // torchtitan on B200 from 3b85aa31f to b39377f9f: cuDNN attention first, the save list names
  // the flash and efficient kernels only. Its output and log-sum-exp are not kept; the
  // recompute runs the attention's forward: half of 4·s²·h per layer, causal.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 8192\nrecompute = \"op\"\n"
      "compile = true\n[parallel]\nzero = 3\n[cluster]\ngpu = \"b200-180gb\"\n"
      "gpus_per_node = 8\n";
  const PlanResult saved = test::plan_text(plan);
  const PlanResult cudnn = test::plan_text(plan, {"training.op_saves_attention=false"});
  const double layers = 32, T = 8192, h = 4096, a = 32;
  CHECK(test::phase_value(saved, "activations", 0, Phase::backward) -
            test::phase_value(cudnn, "activations", 0, Phase::backward) ==
        Approx(layers * (2 * T * h + 4 * T * a)));
  const LineItem* r = find_item(cudnn.time, ItemId::time_recompute);
  REQUIRE(r);
  double flash = -1;
  for (const Term& t : r->terms)
    if (t.key == "recompute_attention_flops") flash = t.value;
  CHECK(flash == Approx(0.5 * layers * 4 * T * T * h));
  CHECK(find_item(cudnn.time, ItemId::time_step)->value >
        find_item(saved.time, ItemId::time_step)->value);
}
