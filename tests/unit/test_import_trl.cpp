// TRL GRPO runs (docs/rl.md#importing): open-r1's published launch commands with the recipe and
// the accelerate config they name give the hand-written plan; TRL's own CLI, a recipe alone and
// a Python GRPOConfig(...) are read with TRL's units and defaults; bad values are located.
#include <catch2/catch.hpp>

#include <string>

#include "helpers.hpp"
#include "trainledger/config.hpp"
#include "trainledger/plan.hpp"

using namespace trainledger;

namespace {

const char* k_plan =
    "[import]\ntrl = \"run.sh\"\n[model]\npreset = \"llama-3.1-8b\"\n"
    "[cluster]\ngpu = \"h100-sxm5-80gb\"\n";

config::LoadedPlan load_folder(const std::string& name,
                               const std::vector<std::pair<std::string, std::string>>& files) {
  return config::load_plan_file(test::scratch_folder(name, files), {});
}

}  // namespace

TEST_CASE("imports: open-r1's TRL GRPO commands give the hand-written RL plan", "[imports][rl]") {
  const auto imported =
      config::load_plan_file(test::source_path("tests/data/imports/trl.toml"), {});
  const auto by_hand =
      config::load_plan_file(test::source_path("tests/data/imports/trl-by-hand.toml"), {});
  const PlanResult a = test::plan_checked(imported.input);
  test::same_rl(a, test::plan_checked(by_hand.input));
  // Completions throughout: 16 per device × 7 processes × 4 accumulation steps = 448 = 32
  // prompts of 14; the vllm-serve command makes it a split run with one generating GPU.
  CHECK(imported.input.rl.prompts == 32);
  CHECK(imported.input.rl.samples == 14);
  CHECK(imported.input.rl.placement == RlPlacement::split);
  CHECK(imported.input.rl.rollout_gpus == 1);
  CHECK(imported.input.cluster.gpus_per_node == 7);
  CHECK(imported.input.parallel.zero == 2);
  CHECK(imported.input.training.framework == Framework::deepspeed);
  CHECK(imported.input.rl.reference);  // beta 0.01
  // Each value points into the file that says it: the recipe, the accelerate config, the line
  // of the command.
  CHECK(test::origin_of(imported, "rl.samples_per_prompt").find("config_demo_code.yaml:35") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "parallel.zero").find("zero2.yaml:") != std::string::npos);
  CHECK(test::origin_of(imported, "cluster.gpus_per_node").find("open-r1-code.sh:7") !=
        std::string::npos);
  CHECK(test::origin_of(imported, "rl.rollout_gpus").find("open-r1-code.sh:4") !=
        std::string::npos);
  CHECK(test::warned(imported, "learning_rate"));
  CHECK(test::warned(imported, "give [model]"));
  CHECK(test::warned(imported, "src/open_r1/grpo.py (not read"));
}

TEST_CASE("imports: TRL's own CLI in colocate mode, with a shipped accelerate config",
          "[imports][rl]") {
  const auto p = load_folder(
      "tl-trl-cli",
      {{"plan.toml", k_plan},
       {"run.sh",
        "trl grpo --model_name_or_path meta-llama/Llama-3.1-8B-Instruct \\\n"
        "  --accelerate_config zero3 --num_processes 16 --num_machines 2 \\\n"
        "  --use_vllm --vllm_tensor_parallel_size 2 --vllm-gpu-memory-utilization 0.4 \\\n"
        "  --vllm_enable_sleep_mode true --per_device_train_batch_size 4 \\\n"
        "  --gradient_accumulation_steps 2 --steps_per_generation 4 --num_generations 16 \\\n"
        "  --max_prompt_length 512 --max_completion_length 4096 --beta 0.04 \\\n"
        "  --num_iterations 2 --no_gradient_checkpointing\n"}});
  const RlSpec& rl = p.input.rl;
  CHECK(rl.placement == RlPlacement::colocated);
  CHECK(rl.rollout_tp == 2);
  CHECK(rl.memory_fraction == Approx(0.4));  // the dashed spelling is the same field
  CHECK(rl.sleep == RlSleep::discard);       // sleep(level=2)
  // max_num_seqs = per device × vLLM tp × steps_per_generation (grpo_trainer.py)
  CHECK(rl.max_num_seqs == 4 * 2 * 4);
  CHECK(rl.max_batched_tokens == 4096);
  // 4 × 16 × 4 = 256 completions = 16 prompts per generation; 4 × 16 × 2 = 128 = 8 prompts
  // per optimizer step; the generation batch is used num_iterations times.
  CHECK(rl.prompts == 16);
  CHECK(rl.mini_batch_prompts == 8);
  CHECK(rl.epochs == 2);
  CHECK(rl.reference);
  CHECK(rl.prompt_length == 512);
  CHECK(rl.response_length == 4096);
  CHECK(p.input.parallel.zero == 3);
  CHECK(p.input.training.framework == Framework::deepspeed);
  CHECK(p.input.training.recompute == Recompute::none);
  CHECK(p.input.cluster.nodes == 2);
  CHECK(p.input.cluster.gpus_per_node == 8);
  CHECK(test::origin_of(p, "rl.max_num_seqs").find("run.sh") != std::string::npos);
  CHECK(test::origin_of(p, "rl.epochs").find("run.sh:7") != std::string::npos);
  test::plan_checked(p.input);
}

TEST_CASE("imports: a TRL recipe alone and a Python GRPOConfig(...)", "[imports][rl]") {
  // A TrlParser recipe: GRPOConfig's fields; the launcher's settings it holds are accelerate's.
  const auto y = load_folder("tl-trl-yaml", {{"plan.toml",
                                              "[import]\ntrl = \"recipe.yaml\"\n[model]\npreset = "
                                              "\"llama-3.1-8b\"\n[cluster]\ngpu = "
                                              "\"h100-sxm5-80gb\"\n"},
                                             {"recipe.yaml",
                                              "num_processes: 8\nuse_vllm: true\n"
                                              "per_device_train_batch_size: 2\n"
                                              "num_generations: 8\nmax_completion_length: 1024\n"
                                              "vllm_mode: colocate\n"}});
  CHECK(y.input.rl.prompts == 2);  // 2 × 8 / 8
  CHECK(y.input.rl.response_length == 1024);
  CHECK(y.input.rl.memory_fraction == Approx(0.3));      // TRL's colocate default
  CHECK(y.input.rl.sleep == RlSleep::none);              // vllm_enable_sleep_mode false
  CHECK(y.input.training.recompute == Recompute::full);  // GRPOConfig's default
  CHECK_FALSE(y.input.rl.reference);                     // beta 0.0 by default
  CHECK(test::origin_of(y, "rl.prompts").find("recipe.yaml:1") != std::string::npos);

  // Python: the keyword arguments with literal values; the rest listed, not guessed.
  const auto py = load_folder(
      "tl-trl-py",
      {{"plan.toml",
        "[import]\ntrl = \"train.py\"\n[model]\npreset = \"llama-3.1-8b\"\n[cluster]\ngpu = "
        "\"h100-sxm5-80gb\"\n[rl]\nprompts = 64\nrollout_gpus = 2\n"},
       {"train.py",
        "from trl import GRPOConfig  # GRPOConfig(num_generations=2) in a comment\n"
        "training_args = GRPOConfig(\n"
        "    per_device_train_batch_size=4,\n"
        "    use_vllm=True,  # colocate by default\n"
        "    vllm_mode=\"server\",\n"
        "    vllm_server_host=args.host.replace(\"ip-\", \"\"),\n"
        "    num_generations=16, max_completion_length=2048,\n"
        "    report_to=[\"trackio\"],\n"
        ")\n"}});
  CHECK(py.input.rl.samples == 16);
  CHECK(py.input.rl.response_length == 2048);
  CHECK(py.input.training.micro_batch == 4);
  CHECK(py.input.rl.placement == RlPlacement::split);  // server mode
  CHECK(py.input.rl.prompts == 64);                    // the processes are not in the file
  CHECK(test::origin_of(py, "rl.samples_per_prompt").find("train.py:7") != std::string::npos);
  CHECK(test::warned(py, "not a literal"));
  CHECK(test::warned(py, "the training processes"));
  CHECK(test::warned(py, "give rl.rollout_gpus"));
}

TEST_CASE("imports: TRL's precision, and the launcher's flags against the script's",
          "[imports][rl]") {
  // bf16 false without fp16 trains in fp32 (TrainingArguments: bf16 = not fp16 only when
  // unset); after `accelerate launch ... grpo.py` a --num_processes is the script's, not
  // accelerate's; a launcher flag wins over the accelerate config's key.
  const auto p = load_folder(
      "tl-trl-flags",
      {{"plan.toml", k_plan},
       {"acc.yaml",
        "distributed_type: FSDP\nnum_processes: 4\nfsdp_config:\n  fsdp_offload_params: true\n"},
       {"run.sh",
        "accelerate launch --config_file acc.yaml --num_processes 8 --fsdp_offload_params false "
        "grpo.py --num_processes 2 --no_bf16 --per_device_train_batch_size 2\n"}});
  CHECK(p.input.training.precision == DType::fp32);
  CHECK(p.input.cluster.gpus_per_node == 8);
  CHECK(p.input.parallel.offload == Offload::none);
  CHECK(test::warned(p, "num_processes"));
  CHECK(p.input.parallel.fsdp_version == 1);  // accelerate's default
  // fsdp_version 2 (fully_shard) from the config; anything else is refused where it stands.
  const auto two = load_folder("tl-trl-fsdp2",
                               {{"plan.toml", k_plan},
                                {"acc.yaml",
                                 "distributed_type: FSDP\nnum_processes: 8\nfsdp_config:\n"
                                 "  fsdp_version: 2\n"},
                                {"run.sh", "accelerate launch --config_file acc.yaml grpo.py\n"}});
  CHECK(two.input.parallel.fsdp_version == 2);
  CHECK(test::origin_of(two, "parallel.fsdp_version").find("acc.yaml") != std::string::npos);
}

TEST_CASE("imports: accelerate's deepspeed_config_file gives the ZeRO stage and offload",
          "[imports][rl]") {
  // The JSON replaces the accelerate config's ZeRO settings; its "auto" values are the
  // Trainer's to fill and are not read.
  const char* ds =
      "{\"train_micro_batch_size_per_gpu\": \"auto\", \"zero_optimization\": {\"stage\": 3,\n"
      " \"offload_optimizer\": {\"device\": \"cpu\"}}}\n";
  const auto p = load_folder(
      "tl-trl-dsfile",
      {{"plan.toml", k_plan},
       {"acc.yaml",
        "distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n"
        "  deepspeed_config_file: ds.json\n  zero3_init_flag: true\n"},
       {"ds.json", ds},
       {"run.sh", "accelerate launch --config_file acc.yaml grpo.py --num_generations 8\n"}});
  CHECK(p.input.parallel.zero == 3);
  CHECK(p.input.parallel.offload == Offload::optimizer);
  CHECK(test::origin_of(p, "parallel.zero").find("ds.json") != std::string::npos);
  // The launcher's flag alike.
  const auto f = load_folder(
      "tl-trl-dsfile-flag",
      {{"plan.toml", k_plan},
       {"ds.json", ds},
       {"run.sh",
        "accelerate launch --use_deepspeed --num_processes 8 --deepspeed_config_file ds.json "
        "grpo.py --num_generations 8\n"}});
  CHECK(f.input.parallel.zero == 3);
  CHECK_FALSE(test::warned(f, "deepspeed_config_file"));
  // A file that is not there is an error at the flag, not a silent ZeRO-2.
  const std::string e = test::load_file_errors(test::scratch_folder(
      "tl-trl-dsfile-missing",
      {{"plan.toml", k_plan},
       {"run.sh",
        "accelerate launch --use_deepspeed --num_processes 8 --deepspeed_config_file gone.json "
        "grpo.py --num_generations 8\n"}}));
  CHECK(e.find("run.sh:1") != std::string::npos);
  CHECK(e.find("deepspeed_config_file: cannot read") != std::string::npos);
}

TEST_CASE("imports: TRL settings that cannot be are refused at their line", "[imports][rl]") {
  // A generation batch of partial prompt groups, as GRPOConfig refuses it.
  std::string e = test::load_file_errors(
      test::scratch_folder("tl-trl-bad", {{"plan.toml", k_plan},
                                          {"run.sh",
                                           "accelerate launch --num_processes 3 grpo.py \\\n"
                                           "  --per_device_train_batch_size 2 \\\n"
                                           "  --num_generations 4\n"}}));
  CHECK(e.find("run.sh:1") != std::string::npos);
  CHECK(e.find("not whole groups of num_generations 4") != std::string::npos);
  // A value that is not one.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad",
      {{"plan.toml", k_plan},
       {"run.sh", "trl grpo \\\n  --num_processes 8 \\\n  --num_generations many\n"}}));
  CHECK(e.find("run.sh:3") != std::string::npos);
  CHECK(e.find("num_generations \"many\": expected a positive integer") != std::string::npos);
  // Counts past 1,000,000 are refused before any product of the batch could overflow.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad", {{"plan.toml", k_plan},
                     {"run.sh",
                      "trl grpo --num_processes 8 --per_device_train_batch_size "
                      "2305843009213693952 --generation_batch_size 16 --num_generations 2\n"}}));
  CHECK(e.find("expected a positive integer up to 1000000") != std::string::npos);
  // Both ways of sizing the generation batch.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad",
      {{"plan.toml", k_plan},
       {"run.sh", "trl grpo --generation_batch_size 64 --steps_per_generation 2\n"}}));
  CHECK(e.find("both set") != std::string::npos);
  // A recipe outside the plan's folder is not read.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad",
      {{"plan.toml", k_plan}, {"run.sh", "trl grpo --config ../../etc/passwd.yaml\n"}}));
  CHECK(e.find("--config: cannot read") != std::string::npos);
  // A file named by a variable the script does not set.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad", {{"plan.toml", k_plan}, {"run.sh", "trl grpo --config $CFG\n"}}));
  CHECK(e.find("--config: \"$CFG\" names a shell variable the script does not set") !=
        std::string::npos);
  // No GRPO command at all.
  e = test::load_file_errors(
      test::scratch_folder("tl-trl-bad", {{"plan.toml", k_plan}, {"run.sh", "echo hello\n"}}));
  CHECK(e.find("no TRL GRPO command found") != std::string::npos);
  // An unclosed call.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad",
      {{"plan.toml", "[import]\ntrl = \"t.py\"\n[model]\npreset = \"llama-3.1-8b\"\n"},
       {"t.py", "GRPOConfig(num_generations=4,\n"}}));
  CHECK(e.find("t.py:2") != std::string::npos);
  CHECK(e.find("not closed") != std::string::npos);
  // What the import could not give is said with the error it leads to (its warnings are not
  // printed when the plan fails).
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad", {{"plan.toml", k_plan}, {"run.sh", "trl grpo --num_generations 8\n"}}));
  CHECK(e.find("rl.prompts: give the prompts per step") != std::string::npos);
  CHECK(e.find("run.sh: the training processes (not in the files") != std::string::npos);
  // One generation per prompt has no group to take an advantage over.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad", {{"plan.toml", k_plan},
                     {"run.sh", "trl grpo --num_processes 8 \\\n  --num_generations 1\n"}}));
  CHECK(e.find("run.sh:2") != std::string::npos);
  CHECK(e.find("at least 2 generations per prompt") != std::string::npos);
  // An FSDP version accelerate does not have, at its line in the config.
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad",
      {{"plan.toml", k_plan},
       {"acc.yaml", "distributed_type: FSDP\nnum_processes: 8\nfsdp_config:\n  fsdp_version: 3\n"},
       {"run.sh", "accelerate launch --config_file acc.yaml grpo.py\n"}}));
  CHECK(e.find("acc.yaml:4") != std::string::npos);
  CHECK(e.find("expected 1 or 2") != std::string::npos);
  // A call with thousands of arguments is refused, not walked.
  std::string many = "GRPOConfig(";
  for (int i = 0; i < 1500; ++i) many += "x=1,";
  many += ")\n";
  e = test::load_file_errors(test::scratch_folder(
      "tl-trl-bad",
      {{"plan.toml", "[import]\ntrl = \"t.py\"\n[model]\npreset = \"llama-3.1-8b\"\n"},
       {"t.py", many}}));
  CHECK(e.find("more than 1000 arguments") != std::string::npos);
}

TEST_CASE("imports: the GRPOConfig( call read is TRL's, not a look-alike or a comment",
          "[imports][rl]") {
  // The last call by its whole name and outside comments: `MyGRPOConfig(` and a commented-out
  // call after the real one do not replace it; `trl.GRPOConfig(` is the real one.
  const auto py = load_folder(
      "tl-trl-py-names",
      {{"plan.toml",
        "[import]\ntrl = \"train.py\"\n[model]\npreset = \"llama-3.1-8b\"\n[cluster]\ngpu = "
        "\"h100-sxm5-80gb\"\n[rl]\nprompts = 64\n"},
       {"train.py",
        "import trl\n"
        "args = trl.GRPOConfig(num_generations=8, max_completion_length=512)\n"
        "other = MyGRPOConfig(num_generations=4)\n"
        "# args = GRPOConfig(num_generations=2)\n"}});
  CHECK(py.input.rl.samples == 8);
  CHECK(py.input.rl.response_length == 512);
  CHECK(test::origin_of(py, "rl.samples_per_prompt").find("train.py:2") != std::string::npos);
}

TEST_CASE("imports: TRL's old log-prob pass runs only when GRPOTrainer computes it",
          "[imports][rl]") {
  // grpo_trainer.py: skipped when gradient_accumulation_steps is a multiple of
  // steps_per_generation × num_iterations, unless vLLM's importance-sampling correction needs
  // it (on by default).
  const auto old_log_probs = [](const std::string& recipe) {
    const auto p = load_folder(
        "tl-trl-oldlp",
        {{"plan.toml",
          "[import]\ntrl = \"recipe.yaml\"\n[model]\npreset = \"llama-3.1-8b\"\n"
          "[cluster]\ngpu = \"h100-sxm5-80gb\"\n"},
         {"recipe.yaml",
          "num_processes: 8\nper_device_train_batch_size: 2\nnum_generations: 8\n" + recipe}});
    return p.input.rl.old_log_probs;
  };
  CHECK(old_log_probs("use_vllm: true\n"));         // the correction needs it
  CHECK_FALSE(old_log_probs("use_vllm: false\n"));  // GA 1 = steps_per_generation 1
  CHECK_FALSE(old_log_probs("use_vllm: true\nvllm_importance_sampling_correction: false\n"));
  CHECK(old_log_probs("gradient_accumulation_steps: 2\nsteps_per_generation: 4\n"));  // 2 % 4
  CHECK(old_log_probs("num_iterations: 2\n"));  // 1 % (1 × 2)
  CHECK_FALSE(old_log_probs("gradient_accumulation_steps: 4\nsteps_per_generation: 2\n"));
}
