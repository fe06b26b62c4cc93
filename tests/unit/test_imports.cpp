// Importing the training configs people have (docs/config.md#importing-training-configs): a
// DeepSpeed JSON, a Megatron-LM launch script and a torchtitan TOML posted publicly
// (tests/data/imports/SOURCES.md) give the same plan as the hand-written equivalent; every
// imported value points into its file; what is not modelled is listed; bad input is located.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "helpers.hpp"
#include "trainledger/config.hpp"
#include "trainledger/plan.hpp"

using namespace trainledger;

namespace {

config::LoadedPlan load(const std::string& rel, const config::LoadOptions& o = {}) {
  return config::load_plan_file(test::source_path("tests/data/imports/" + rel), o);
}

// Every memory item of every stage and every time item, equal.
void same_numbers(const PlanResult& a, const PlanResult& b) {
  REQUIRE(a.stages.size() == b.stages.size());
  for (std::size_t s = 0; s < a.stages.size(); ++s) {
    REQUIRE(a.stages[s].items.size() == b.stages[s].items.size());
    for (std::size_t i = 0; i < a.stages[s].items.size(); ++i) {
      INFO("stage " << s << " item " << i);
      CHECK(a.stages[s].items[i].item == b.stages[s].items[i].item);
      CHECK(a.stages[s].items[i].value == b.stages[s].items[i].value);
    }
  }
  REQUIRE(a.time.size() == b.time.size());
  for (std::size_t i = 0; i < a.time.size(); ++i) CHECK(a.time[i].value == b.time[i].value);
}

}  // namespace

TEST_CASE("imports: a real Megatron-LM launch script gives the hand-written plan", "[imports]") {
  const auto imported = load("megatron.toml");
  const auto by_hand = load("megatron-by-hand.toml");
  same_numbers(test::plan_checked(imported.input), test::plan_checked(by_hand.input));
  // Values point at the script's lines: variables followed (TP_SIZE=1 → $TP_SIZE), arrays, the
  // torchrun arguments (--nproc_per_node $GPUS_PER_NODE) for the cluster's shape.
  CHECK(test::origin_of(imported, "parallel.tp").find("megatron-llama3-8b-h100-fp8.sh:117") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "model.layers").find("megatron-llama3-8b-h100-fp8.sh:57") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "cluster.gpus_per_node").find(".sh:") != std::string::npos);
  CHECK(imported.input.training.precision == DType::fp8);    // --fp8-format beside --bf16
  CHECK(imported.input.training.grad_dtype == DType::bf16);  // --grad-reduce-in-bf16
  CHECK(imported.input.parallel.fp8_param_gather);           // --fp8-param-gather
  CHECK(test::origin_of(imported, "parallel.fp8_param_gather").find(".sh:") != std::string::npos);
  CHECK(test::warned(imported,
                     "--sequence-parallel (Megatron-LM turns sequence parallelism off when "
                     "tp = 1)"));
  CHECK(test::warned(imported, "--lr;"));
  // --cross-entropy-loss-fusion with the native implementation keeps the fp32 softmax.
  CHECK(imported.input.training.loss == Loss::standard);
  CHECK(
      test::warned(imported, "--cross-entropy-loss-fusion (the native fused cross-entropy keeps"));
}

TEST_CASE("imports: a real torchtitan job TOML gives the hand-written plan", "[imports]") {
  const auto imported = load("torchtitan.toml");
  const auto by_hand = load("torchtitan-by-hand.toml");
  same_numbers(test::plan_checked(imported.input), test::plan_checked(by_hand.input));
  CHECK(imported.input.model.name == "Llama-3.1-70B");  // [model] llama3 / 70B → the preset
  CHECK(test::origin_of(imported, "parallel.tp").find("torchtitan-llama3-70b.toml:41") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "training.recompute").find("torchtitan-llama3-70b.toml") !=
        std::string::npos);
  // [optimizer]: AdamW, torchtitan's fused step by default (job_config.py); its lr is no input.
  CHECK(imported.input.training.optimizer_impl == OptimizerImpl::fused);
  CHECK(test::origin_of(imported, "training.optimizer").find("torchtitan-llama3-70b.toml:24") !=
        std::string::npos);
  CHECK(test::warned(imported, "optimizer.lr (does not change memory or time)"));
  // torchtitan's launcher runs with PYTORCH_ALLOC_CONF=expandable_segments:True.
  CHECK(imported.input.training.expandable_segments);
  CHECK(imported.input.cluster.fragmentation == 0.1);
}

TEST_CASE("imports: a launch script's PYTORCH_CUDA_ALLOC_CONF sets expandable segments",
          "[imports]") {
  auto plan = [](const std::string& script) {
    const auto dir = std::filesystem::temp_directory_path() / "tl-alloc-conf";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "train.sh") << script;
    std::ofstream(dir / "plan.toml")
        << "[import]\nmegatron = \"train.sh\"\n[model]\n"
           "preset = \"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
    return config::load_plan_file((dir / "plan.toml").string(), {});
  };
  const std::string run =
      "torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2\n";
  // ms-swift's style: the variable before the command, quoted.
  const auto prefixed = plan("PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True' \\\n" + run);
  CHECK(prefixed.input.training.expandable_segments);
  CHECK(prefixed.input.cluster.fragmentation == 0.1);
  CHECK(test::origin_of(prefixed, "training.expandable_segments").find("train.sh:1") !=
        std::string::npos);
  // export, the newer name, and other options beside it.
  CHECK(plan("export PYTORCH_ALLOC_CONF=max_split_size_mb:128,expandable_segments:True\n" + run)
            .input.training.expandable_segments);
  // Off, or absent: the caching allocator as it comes.
  const auto off = plan("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False\n" + run);
  CHECK_FALSE(off.input.training.expandable_segments);
  CHECK(off.input.cluster.fragmentation == 0.3);
  CHECK_FALSE(plan(run).input.training.expandable_segments);
}

TEST_CASE("imports: a launch script's NCCL_ALGO sets the all-reduce algorithm", "[imports]") {
  const auto dir = std::filesystem::temp_directory_path() / "tl-nccl-algo";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& env) {
    std::ofstream(dir / "train.sh")
        << env << "\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2\n";
    std::ofstream(dir / "plan.toml")
        << "[import]\nmegatron = \"train.sh\"\n[model]\n"
           "preset = \"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
    return (dir / "plan.toml").string();
  };
  auto algo = [&](const std::string& env) {
    return config::load_plan_file(write(env), {}).input.parallel.nccl_algo;
  };
  auto load = [&](const std::string& env) {
    std::vector<std::string> errors;
    try {
      config::load_plan_file(write(env), {});
    } catch (const config::ConfigError& e) {
      for (const auto& d : e.diagnostics()) errors.push_back(d.to_string());
    }
    return errors;
  };
  // As NCCL's parseList reads it (src/graph/tuning.cc): a list enables only its algorithms, '^'
  // disables them, later entries name their function; case does not matter.
  CHECK(algo("export NCCL_ALGO=Ring") == NcclAlgo::ring);
  CHECK(algo("export NCCL_ALGO=Tree") == NcclAlgo::tree);
  CHECK(algo("export NCCL_ALGO=^tree") == NcclAlgo::ring);
  CHECK(algo("export NCCL_ALGO='ring;allreduce:tree'") == NcclAlgo::tree);
  CHECK(algo("export NCCL_ALGO='tree;allgather:ring'") == NcclAlgo::tree);
  CHECK(algo("export NCCL_ALGO=^NVLS") == NcclAlgo::tuner);
  CHECK(algo("export NCCL_ALGO=Ring,Tree") == NcclAlgo::tuner);
  CHECK(algo("") == NcclAlgo::tuner);
  // What NCCL refuses, refused with the script's line.
  auto errors = load("export NCCL_ALGO=rings");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("train.sh:1"));
  CHECK_THAT(errors[0], Catch::Contains("unknown algorithm \"rings\""));
  errors = load("export NCCL_ALGO='ring;tree'");
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Catch::Contains("needs a function prefix"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("imports: Megatron-LM's MoE token dispatcher", "[imports]") {
  auto plan = [](const std::string& flags) {
    const auto dir = std::filesystem::temp_directory_path() / "tl-dispatcher";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "train.sh")
        << "torchrun --nproc_per_node 8 pretrain_gpt.py --expert-model-parallel-size 8 " + flags +
               "\n";
    std::ofstream(dir / "plan.toml")
        << "[import]\nmegatron = \"train.sh\"\n[model]\n"
           "preset = \"mixtral-8x7b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
    return config::load_plan_file((dir / "plan.toml").string(), {});
  };
  const auto gather = plan("--moe-token-dispatcher-type allgather");
  CHECK(gather.input.parallel.ep_dispatch == EpDispatch::allgather);
  CHECK(test::origin_of(gather, "parallel.ep_dispatch").find("train.sh:1") != std::string::npos);
  const auto a2a = plan("--moe-token-dispatcher-type alltoall");
  CHECK(a2a.input.parallel.ep_dispatch != EpDispatch::allgather);
  CHECK(a2a.input.parallel.ep_dispatch != EpDispatch::deepep);
  // flex with DeepEP, in either order.
  CHECK(plan("--moe-token-dispatcher-type flex --moe-enable-deepep").input.parallel.ep_dispatch ==
        EpDispatch::deepep);
  CHECK(plan("--moe-enable-deepep --moe-token-dispatcher-type flex").input.parallel.ep_dispatch ==
        EpDispatch::deepep);
  CHECK(
      plan("--moe-enable-deepep --moe-token-dispatcher-type alltoall").input.parallel.ep_dispatch ==
      EpDispatch::deepep);
  // A dispatcher Megatron-LM does not have is located.
  CHECK_THROWS_WITH(
      plan("--moe-token-dispatcher-type ring"),
      Catch::Contains("train.sh:1") && Catch::Contains("expected allgather, alltoall or flex"));
}

TEST_CASE("imports: a real DeepSpeed JSON gives the hand-written plan", "[imports]") {
  const auto imported = load("deepspeed.toml");
  const auto by_hand = load("deepspeed-by-hand.toml");
  same_numbers(test::plan_checked(imported.input), test::plan_checked(by_hand.input));
  CHECK(test::origin_of(imported, "parallel.zero")
            .find("deepspeed-zero3-bf16.json#/zero_optimization/"
                  "stage") != std::string::npos);
  // reduce_bucket_size counts elements: 5e7 of 2 B.
  CHECK(imported.input.parallel.bucket_size == 1e8);
  // gradient_accumulation_steps: global = micro × dp × accum.
  CHECK(imported.input.training.global_batch == 4 * 8 * 1);
  CHECK(test::warned(imported, "stage3_param_persistence_threshold"));
  // The plan's own keys win over the import.
  const auto mine = load("deepspeed.toml", {{"parallel.zero=2"}, {}});
  CHECK(mine.input.parallel.zero == 2);
}

TEST_CASE("imports: --from on the command line", "[imports][cli]") {
  const std::string json = test::source_path("tests/data/imports/deepspeed-zero3-bf16.json");
  const auto r = test::run_cli({"plan", test::source_path("tests/data/imports/deepspeed.toml")});
  const auto f =
      test::run_cli({"plan", "--from", "deepspeed", json, "--set", "model.preset=\"llama-2-7b\"",
                     "--set", "training.seq_len=4096", "--set", "cluster.gpu=\"a100-sxm4-80gb\""});
  REQUIRE(r.code == 0);
  REQUIRE(f.code == 0);
  // Same report but for the plan's name.
  CHECK(r.out.substr(r.out.find('\n')) == f.out.substr(f.out.find('\n')));
  const auto bad = test::run_cli({"plan", "--from", "accelerate", json});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("unknown kind \"accelerate\""));
}

TEST_CASE("imports: bad input is located", "[imports][errors]") {
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-imports";
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  auto errors = [&](const std::string& plan) {
    try {
      config::load_plan_file(write("plan.toml", plan), {});
    } catch (const config::ConfigError& e) {
      std::string all;
      for (const auto& d : e.diagnostics()) all += d.to_string() + "\n";
      return all;
    }
    return std::string();
  };
  const std::string cluster =
      "[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  write("train.sh",
        "torchrun pretrain_gpt.py \\\n  --tensor-model-parallel-size $TP \\\n  --bf16\n");
  CHECK_THAT(errors(cluster + "[import]\nmegatron = \"train.sh\"\n"),
             Catch::Contains("train.sh:1:1: --tensor-model-parallel-size $TP: the script does "
                             "not define TP"));
  write("ds.json",
        "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": "
        "\"nvme\"}}}");
  CHECK_THAT(errors(cluster + "[import]\ndeepspeed = \"ds.json\"\n"),
             Catch::Contains("ds.json#/zero_optimization/offload_param/device: "
                             "zero_optimization.offload_param.device = \"nvme\""));
  CHECK_THAT(errors(cluster + "[import]\ndeepspeed = \"../x.json\"\n"),
             Catch::Contains("is outside the plan's folder"));
  write("accum.json",
        "{\"train_micro_batch_size_per_gpu\": 2, \"train_batch_size\": 64, "
        "\"gradient_accumulation_steps\": 2}");
  CHECK_THAT(errors(cluster + "[import]\ndeepspeed = \"accum.json\"\n"),
             Catch::Contains("training.grad_accum (2) × micro_batch (2) × dp (8) = 32, but "
                             "training.global_batch is 64"));
  // A script whose variables double and double again is refused, not expanded.
  std::string bomb = "A=xxxxxxxx\n";
  for (char c = 'B'; c <= 'K'; ++c)
    bomb += std::string(1, c) + "=$" + std::string(1, static_cast<char>(c - 1)) + "$" +
            std::string(1, static_cast<char>(c - 1)) + "$" +
            std::string(1, static_cast<char>(c - 1)) + "$" +
            std::string(1, static_cast<char>(c - 1)) + "\n";
  bomb += "--seq-length $K\n";
  write("bomb.sh", bomb);
  CHECK_THAT(errors(cluster + "[import]\nmegatron = \"bomb.sh\"\n"),
             Catch::Contains("expands beyond 16 KiB"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("emit → import round-trips: the emitted config gives the plan back", "[imports][emit]") {
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-emit";
  std::filesystem::create_directories(dir);
  struct Case {
    const char* stack;
    const char* plan;  // the plan emitted
    const char* file;  // what the emitted config is saved as
    const char* rest;  // what the emitted file does not carry, stated by the importing plan
  };
  const Case cases[] = {
      {"megatron", "megatron-by-hand.toml", "train.sh", "[cluster]\ngpu = \"h100-sxm5-80gb\"\n"},
      {"deepspeed", "deepspeed-by-hand.toml", "ds_config.json",
       "[model]\npreset = \"llama-2-7b\"\n[training]\nseq_len = 4096\n[cluster]\ngpu = "
       "\"a100-sxm4-80gb\"\n"},
      {"torchtitan", "torchtitan-by-hand.toml", "job.toml",
       "[cluster]\ngpu = \"a100-sxm4-80gb\"\nnodes = 8\n"},
  };
  for (const Case& c : cases) {
    INFO(c.stack);
    const std::string plan = test::source_path(std::string("tests/data/imports/") + c.plan);
    const auto emitted = test::run_cli({"plan", plan, "--emit", c.stack});
    REQUIRE(emitted.code == 0);
    std::ofstream(dir / c.file) << emitted.out;
    std::ofstream(dir / "plan.toml")
        << std::string(c.rest) + "[import]\n" + c.stack + " = \"" + c.file + "\"\n";
    const auto back = config::load_plan_file((dir / "plan.toml").string(), {});
    same_numbers(test::plan_checked(back.input),
                 test::plan_checked(config::load_plan_file(plan, {}).input));
  }
  // What a stack cannot express is said, not dropped.
  const auto ds =
      test::run_cli({"plan", test::source_path("tests/data/imports/torchtitan-by-hand.toml"),
                     "--emit", "megatron"});
  REQUIRE(ds.code == 0);
  CHECK_THAT(ds.out, Catch::Contains("# not emitted: parallel.zero = 3"));
  // The allocator's option travels in the launch script's environment.
  const auto env =
      test::run_cli({"plan", test::source_path("tests/data/imports/megatron-by-hand.toml"), "--set",
                     "training.expandable_segments=true", "--emit", "megatron"});
  REQUIRE(env.code == 0);
  CHECK_THAT(env.out, Catch::Contains("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"));
  std::ofstream(dir / "train.sh") << env.out;
  std::ofstream(dir / "plan.toml") << "[cluster]\ngpu = \"h100-sxm5-80gb\"\n[import]\n"
                                      "megatron = \"train.sh\"\n";
  CHECK(
      config::load_plan_file((dir / "plan.toml").string(), {}).input.training.expandable_segments);
  std::filesystem::remove_all(dir);
}

TEST_CASE("imports: torchtitan's compile.components without \"loss\" keeps the eager loss",
          "[imports][loss]") {
  const auto imported = load("torchtitan-compile-model-plan.toml");
  CHECK(imported.input.training.compile);
  CHECK(imported.input.training.framework == Framework::pytorch);
  CHECK(imported.input.training.loss == Loss::standard);
  // With the loss listed (torchtitan's default), the compiled loss: the fused kernel's memory.
  const auto both = load("torchtitan.toml", {{"training.compile=true"}, {}});
  CHECK(both.input.training.loss == Loss::fused);
}

TEST_CASE("emit torchtitan: the degrees multiply to the plan's GPUs and import gives it back",
          "[imports][emit]") {
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-emit-degrees";
  std::filesystem::create_directories(dir);
  const std::string plan = test::source_path("tests/data/imports/torchtitan-by-hand.toml");
  struct Case {
    std::vector<std::string> sets;
    int zero_back;  // the ZeRO stage the import gives back
  };
  const Case cases[] = {
      // tp 8 · pp 2 · dp 4 with ZeRO-1: replicas (torchtitan has no ZeRO-1), said in a comment.
      {{"parallel.pp=2", "parallel.dp=4", "parallel.zero=1", "training.framework=pytorch"}, 0},
      {{"parallel.zero=0"}, 0},                              // DDP: 8 replicas
      {{}, 3},                                               // FSDP over the 8 dp ranks
      {{"parallel.tp=4", "parallel.zero_shard_size=4"}, 3},  // HSDP: 4 replicas of 4
      {{"parallel.tp=2", "parallel.cp=2", "parallel.zero_shard_size=8"}, 3},  // shard 4 × cp 2
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"plan", plan, "--emit", "torchtitan"};
    for (const std::string& s : c.sets) args.insert(args.end(), {"--set", s});
    INFO(args.back());
    const auto emitted = test::run_cli(args);
    REQUIRE(emitted.code == 0);
    config::LoadOptions with_sets;
    with_sets.sets = c.sets;
    const config::LoadedPlan original = config::load_plan_file(plan, with_sets);
    // Every degree torchtitan multiplies, read back from the emitted TOML.
    auto degree = [&](const std::string& key) {
      const auto at = emitted.out.find("\n" + key + " = ");
      REQUIRE(at != std::string::npos);
      return std::stoi(emitted.out.substr(at + key.size() + 4));
    };
    const int world = degree("data_parallel_replicate_degree") *
                      degree("data_parallel_shard_degree") * degree("context_parallel_degree") *
                      degree("tensor_parallel_degree") * degree("pipeline_parallel_degree");
    CHECK(world == original.input.cluster.nodes * original.input.cluster.gpus_per_node);
    std::ofstream(dir / "job.toml") << emitted.out;
    std::ofstream(dir / "plan.toml")
        << "[training]\nframework = \"pytorch\"\n[cluster]\ngpu = \"a100-sxm4-80gb\"\nnodes = 8\n"
           "[import]\ntorchtitan = \"job.toml\"\n";
    const auto back = config::load_plan_file((dir / "plan.toml").string(), {});
    CHECK(back.input.parallel.zero == c.zero_back);
    CHECK(back.input.parallel.dp == original.input.parallel.dp);
    CHECK(back.input.parallel.cp == original.input.parallel.cp);
    CHECK(back.input.parallel.tp == original.input.parallel.tp);
    CHECK(back.input.parallel.pp == original.input.parallel.pp);
    if (c.zero_back == original.input.parallel.zero) {
      CHECK(back.input.parallel.zero_shard_size == original.input.parallel.zero_shard_size);
      same_numbers(test::plan_checked(back.input), test::plan_checked(original.input));
    } else {
      CHECK_THAT(emitted.out, Catch::Contains("# not emitted: parallel.zero = 1"));
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("imports: torchtitan's optimizer.implementation chooses torch.optim's step",
          "[imports]") {
  const auto dir = std::filesystem::temp_directory_path() / "tl-tt-optimizer";
  std::filesystem::create_directories(dir);
  auto plan = [&](const std::string& job) {
    std::ofstream(dir / "job.toml") << job;
    std::ofstream(dir / "plan.toml")
        << "[import]\ntorchtitan = \"job.toml\"\n[model]\n"
           "preset = \"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
    return config::load_plan_file((dir / "plan.toml").string(), {});
  };
  CHECK(plan("[optimizer]\nimplementation = \"foreach\"\n").input.training.optimizer_impl ==
        OptimizerImpl::foreach);
  CHECK(plan("[optimizer]\nimplementation = \"for-loop\"\n").input.training.optimizer_impl ==
        OptimizerImpl::for_loop);
  CHECK(plan("[training]\nsteps = 10\n").input.training.optimizer_impl == OptimizerImpl::fused);
  try {
    plan("[optimizer]\nimplementation = \"fast\"\n");
    FAIL("a mistyped implementation must be refused");
  } catch (const config::ConfigError& e) {
    CHECK(std::string(e.what()).find("job.toml:2:18: optimizer.implementation = \"fast\": expected "
                                     "\"for-loop\", \"foreach\" or \"fused\"") !=
          std::string::npos);
  }
}

TEST_CASE("imports: verl's GRPO launch script gives the hand-written RL plan", "[imports][rl]") {
  const auto imported = load("verl.toml");
  const auto by_hand = load("verl-by-hand.toml");
  const PlanResult a = test::plan_checked(imported.input);
  const PlanResult b = test::plan_checked(by_hand.input);
  same_numbers(a, b);
  REQUIRE(a.rl.present);
  REQUIRE(a.rl.phases.size() == b.rl.phases.size());
  for (std::size_t i = 0; i < a.rl.phases.size(); ++i)
    CHECK(a.rl.phases[i].peak_bytes == b.rl.phases[i].peak_bytes);
  REQUIRE(a.rl.time.size() == b.rl.time.size());
  for (std::size_t i = 0; i < a.rl.time.size(); ++i)
    CHECK(a.rl.time[i].value == b.rl.time[i].value);
  // Each value points at its override's line; verl's defaults point at the file.
  CHECK(test::origin_of(imported, "rl.samples_per_prompt").find("verl-grpo-qwen2-7b.sh:29") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "rl.frozen_weights").find("verl-grpo-qwen2-7b.sh:31") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "rl.algorithm").find("verl-grpo-qwen2-7b.sh:5") !=
        std::string::npos);
  CHECK(imported.input.rl.algorithm == RlAlgorithm::grpo);
  CHECK(imported.input.rl.reference);
  CHECK(imported.input.training.recompute == Recompute::full);
  // What the planner does not read is listed, the model path with what to do instead.
  CHECK(test::warned(imported, "actor_rollout_ref.actor.optim.lr"));
  CHECK(test::warned(imported, "give [model]"));
}

TEST_CASE("imports: a bad verl override is located", "[imports][rl][errors]") {
  const auto dir_path = std::filesystem::temp_directory_path() / "tl-verl-bad";
  std::filesystem::create_directories(dir_path);
  const std::string dir = dir_path.string();
  {
    std::ofstream(dir + "/run.sh") << "python3 -m verl.trainer.main_ppo \\\n"
                                      "  data.train_batch_size=many \\\n"
                                      "  actor_rollout_ref.rollout.enforce_eager=maybe\n";
    std::ofstream(dir + "/plan.toml") << "[import]\nverl = \"run.sh\"\n[model]\npreset = "
                                         "\"llama-3.1-8b\"\n";
  }
  try {
    config::load_plan_file(dir + "/plan.toml", {});
    FAIL("loaded");
  } catch (const config::ConfigError& e) {
    std::string all;
    for (const auto& d : e.diagnostics()) all += d.origin.to_string() + ": " + d.message + "\n";
    CHECK(all.find("run.sh:2") != std::string::npos);
    CHECK(all.find("data.train_batch_size=many: expected an integer") != std::string::npos);
    CHECK(all.find("run.sh:3") != std::string::npos);
    CHECK(all.find("expected True or False") != std::string::npos);
  }
}

TEST_CASE("imports: verl's use_rollout_log_probs skips the old log-prob pass", "[imports][rl]") {
  // The actor's flag and the fully-async recipe's (async_training.use_rollout_log_probs).
  for (const char* flag : {"actor_rollout_ref.actor.use_rollout_log_probs=True",
                           "+async_training.use_rollout_log_probs=True"}) {
    const auto p = config::load_plan_file(
        test::scratch_folder(
            "tl-verl-rollout-lp",
            {{"plan.toml",
              "[import]\nverl = \"run.sh\"\n[model]\npreset = "
              "\"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n"},
             {"run.sh", std::string("python3 -m verl.trainer.main_ppo data.train_batch_size=64 "
                                    "actor_rollout_ref.actor.ppo_mini_batch_size=16 ") +
                            flag + "\n"}}),
        {});
    INFO(flag);
    CHECK_FALSE(p.input.rl.old_log_probs);
    CHECK(test::origin_of(p, "rl.old_log_probs").find("run.sh:1") != std::string::npos);
  }
}

TEST_CASE("imports: a verl override's hostile name is shown escaped", "[imports][rl][errors]") {
  const auto dir = std::filesystem::temp_directory_path() / "tl-verl-hostile";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.sh") << "python3 -m verl.trainer.main_ppo data.train_batch_size=64 "
                                   "actor_rollout_ref.actor.ppo_mini_batch_size=16 "
                                   "trainer.x\x1b[2J=1 data.y\xff=2\n";
  std::ofstream(dir / "plan.toml") << "[import]\nverl = \"run.sh\"\n[model]\npreset = "
                                      "\"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  const auto p = config::load_plan_file((dir / "plan.toml").string(), {});
  CHECK(p.input.rl.prompts == 64);
  bool listed = false;
  for (const std::string& w : p.warnings) {
    CHECK(w.find('\x1b') == std::string::npos);
    CHECK(w.find('\xff') == std::string::npos);
    listed = listed || w.find("trainer.x\\x1B") != std::string::npos;
  }
  CHECK(listed);
}

TEST_CASE("imports: OpenRLHF's GRPO launch script gives the hand-written RL plan",
          "[imports][rl]") {
  const auto imported = load("openrlhf.toml");
  const auto by_hand = load("openrlhf-by-hand.toml");
  const PlanResult a = test::plan_checked(imported.input);
  const PlanResult b = test::plan_checked(by_hand.input);
  same_numbers(a, b);
  REQUIRE(a.rl.present);
  REQUIRE(a.rl.phases.size() == b.rl.phases.size());
  for (std::size_t i = 0; i < a.rl.phases.size(); ++i)
    CHECK(a.rl.phases[i].peak_bytes == b.rl.phases[i].peak_bytes);
  REQUIRE(a.rl.time.size() == b.rl.time.size());
  for (std::size_t i = 0; i < a.rl.time.size(); ++i)
    CHECK(a.rl.time[i].value == b.rl.time[i].value);
  // Units: the rollout batch counts prompts, the train batch samples (128 / 8 = 16 prompts).
  CHECK(imported.input.rl.prompts == 128);
  CHECK(imported.input.rl.mini_batch_prompts == 16);
  CHECK(imported.input.rl.sleep == RlSleep::offload);
  CHECK(imported.input.rl.offload_copy == RlOffloadCopy::pinned);  // offload_states, pinned
  CHECK(imported.input.rl.reward_model);
  // Each value points at its flag's line; OpenRLHF's defaults point at the file.
  CHECK(test::origin_of(imported, "rl.rollout_tp").find("openrlhf-grpo-llama3-8b.sh:11") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "rl.mini_batch_prompts").find("openrlhf-grpo-llama3-8b.sh:25") !=
        std::string::npos);
  CHECK(test::warned(imported, "--packing_samples"));
  CHECK(test::warned(imported, "give [model]"));
}

TEST_CASE("imports: OpenRLHF's dotted flags, split engines and bad values", "[imports][rl]") {
  const auto dir = std::filesystem::temp_directory_path() / "tl-openrlhf";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "run.sh") << "python3 -m openrlhf.cli.train_ppo_ray \\\n"
                                   "  --rollout.batch_size 64 --rollout.n_samples_per_prompt 4 \\\n"
                                   "  --train.batch_size 64 --vllm.num_engines 2 \\\n"
                                   "  --vllm.tensor_parallel_size 4 --data.max_len 3072 \\\n"
                                   "  --rollout.max_new_tokens 2048 --actor.num_nodes 2\n";
  std::ofstream(dir / "plan.toml") << "[import]\nopenrlhf = \"run.sh\"\n[model]\npreset = "
                                      "\"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";
  const auto p = config::load_plan_file((dir / "plan.toml").string(), {});
  CHECK(p.input.rl.prompts == 64);
  CHECK(p.input.rl.samples == 4);
  CHECK(p.input.rl.mini_batch_prompts == 16);
  CHECK(p.input.rl.placement == RlPlacement::split);  // engines of their own
  CHECK(p.input.rl.rollout_gpus == 8);                // 2 engines × tp 4
  CHECK(p.input.rl.response_length == 2048);
  CHECK(p.input.rl.prompt_length == 1024);  // max_len − max_new_tokens
  CHECK(p.input.cluster.nodes == 2);
  // A value that is not one, located at its line.
  std::ofstream(dir / "run.sh") << "python3 -m openrlhf.cli.train_ppo_ray \\\n"
                                   "  --rollout_batch_size many \\\n"
                                   "  --train_batch_size 100 --n_samples_per_prompt 8\n";
  try {
    config::load_plan_file((dir / "plan.toml").string(), {});
    FAIL("loaded");
  } catch (const config::ConfigError& e) {
    std::string all;
    for (const auto& d : e.diagnostics()) all += d.origin.to_string() + ": " + d.message + "\n";
    CHECK(all.find("run.sh:2") != std::string::npos);
    CHECK(all.find("--rollout_batch_size many: expected an integer") != std::string::npos);
    CHECK(all.find("run.sh:3") != std::string::npos);
    CHECK(all.find("not a whole number of prompts' samples") != std::string::npos);
  }
  // No module, no flags: said so.
  std::ofstream(dir / "run.sh") << "echo hello\n";
  try {
    config::load_plan_file((dir / "plan.toml").string(), {});
    FAIL("loaded");
  } catch (const config::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("no OpenRLHF flags"));
  }
}
