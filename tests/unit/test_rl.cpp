// RL post-training plans (docs/rl.md): the [rl] section, memory per phase, the step's phases,
// the gate on the worst phase.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>

#include "helpers.hpp"
#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

using trainledger::test::load_errors;
using trainledger::test::plan_text;
using trainledger::test::run_cli;
using trainledger::test::source_path;

namespace {

const std::string k_grpo = source_path("configs/plans/grpo-llama-3.1-8b.toml");

const std::string k_small = R"(
[model]
preset = "llama-3.1-8b"
[training]
framework = "pytorch"
micro_batch = 2
recompute = "full"
loss = "chunked"
[parallel]
zero = 3
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 2
gpus_per_node = 8
[rl]
prompts = 512
prompt_length = 1024
response_length = 4096
mean_prompt_length = 300
mean_response_length = 1500
mini_batch_prompts = 128
rollout_tp = 2
memory_fraction = 0.6
max_num_seqs = 1024
log_prob_micro_batch = 4
)";

const trainledger::RlPhase* phase(const trainledger::PlanResult& p, const std::string& name) {
  for (const auto& ph : p.rl.phases)
    if (ph.name == name) return &ph;
  return nullptr;
}

double rl_item(const std::vector<trainledger::LineItem>& items, trainledger::ItemId id) {
  for (const auto& i : items)
    if (i.item == id) return i.value;
  return -1;
}

}  // namespace

TEST_CASE("an [rl] plan derives the actor's sequences and mini-batch", "[rl]") {
  const auto p = plan_text(k_small);
  REQUIRE(p.rl.present);
  // GRPO samples 8 responses per prompt by default; the actor trains on sequences of the
  // longest prompt and response, one optimizer step per mini-batch of 128 prompts × 8.
  CHECK(p.input.rl.samples == 8);
  CHECK(p.input.training.seq_len == 1024 + 4096);
  CHECK(p.input.training.global_batch == 128 * 8);
  CHECK(p.rl.samples == 4096);
  CHECK(p.rl.engines == 8);  // 16 GPUs / tp 2
  CHECK(p.rl.tokens_per_step == Approx(4096.0 * 1800));
}

TEST_CASE("the rollout engine's share: weights, KV cache per token, concurrency", "[rl]") {
  const auto p = plan_text(k_small);
  const auto* r = phase(p, "rollout");
  REQUIRE(r);
  const double P = p.derived.params;
  // vLLM: 16-bit weights split over the engine's 2 tensor-parallel ranks.
  CHECK(rl_item(r->items, trainledger::ItemId::rl_engine_weights) ==
        Approx(P * 2 / 2).epsilon(1e-6));
  // Llama 3.1 8B: 32 layers, 8 KV heads over tp 2 = 4 per rank, keys and values of 128 in bf16:
  // 32 × 4 × 256 × 2 = 65,536 B per token.
  CHECK(p.rl.kv_bytes_per_token == 65536);
  // The KV cache is what 0.6 × 80 GiB leaves after the weights and the profiling run.
  const double budget = 0.6 * static_cast<double>(p.input.cluster.gpu.memory_bytes);
  const double kv = rl_item(r->items, trainledger::ItemId::rl_kv_cache);
  CHECK(kv == Approx(budget - P - rl_item(r->items, trainledger::ItemId::rl_engine_activations)));
  CHECK(p.rl.kv_tokens == Approx(kv / 65536));
  // Sequences at once: what the cache holds at the mean footprint (300 + 1500 tokens), below
  // max_num_seqs (1024, vLLM's LLM-class default here) and the engine's 512 sequences.
  CHECK(p.rl.concurrency == std::floor(kv / (65536.0 * 1800)));
  CHECK(p.rl.concurrency < 512);
  // The trainer's sharded fp32 state stays on the GPU while the engine generates.
  CHECK(rl_item(r->items, trainledger::ItemId::rl_trainer_resident) > 0);
  CHECK(r->fits);
  CHECK(p.verdict.rl_fits);
}

TEST_CASE("every phase of a GRPO step is listed with its memory and time", "[rl]") {
  const auto p = plan_text(k_small);
  for (const char* name : {"rollout", "log-probs", "reference", "training", "weight sync"})
    CHECK(phase(p, name) != nullptr);
  CHECK(phase(p, "values") == nullptr);  // no critic in GRPO
  // The training phase is the plan's own ledger plus the sleeping engine's graph pool (1 GiB)
  // and the reference's 16-bit weights, resident and sharded like the actor (ZeRO-3 over 16).
  const auto* t = phase(p, "training");
  REQUIRE(t);
  const double ref = p.derived.params * 2 / 16;
  CHECK(rl_item(t->items, trainledger::ItemId::rl_reference_weights) == Approx(ref));
  CHECK(t->peak_bytes == Approx(p.verdict.peak_bytes + 1.0 * (1 << 30) + ref));
  // On-policy colocated: the step is the sum of its phases.
  double parts = 0, step = 0;
  for (const auto& i : p.rl.time) {
    if (i.item == trainledger::ItemId::rl_time_step) step = i.value;
    if (i.unit == trainledger::Unit::seconds && i.item != trainledger::ItemId::rl_time_step)
      parts += i.value;
  }
  CHECK(step == Approx(parts));
  // Training: 4 optimizer steps (512 / 128 prompts, one epoch) of the plan at the mean length.
  const double training = rl_item(p.rl.time, trainledger::ItemId::rl_time_training);
  CHECK(training > 0);
  // Log-probs are forward passes: a third of the training's compute over the same samples.
  const double log_probs = rl_item(p.rl.time, trainledger::ItemId::rl_time_log_probs);
  CHECK(log_probs > 0.15 * training);
  CHECK(log_probs < 0.4 * training);
  const double tput = rl_item(p.rl.time, trainledger::ItemId::rl_tokens_per_s_per_gpu);
  CHECK(tput == Approx(4096.0 * 1800 / step / 16));
}

TEST_CASE("PPO adds the critic's passes, DAPO drops the reference", "[rl]") {
  const auto ppo = plan_text(k_small, {"rl.algorithm=\"ppo\""});
  CHECK(ppo.input.rl.samples == 1);
  CHECK(phase(ppo, "values") != nullptr);
  CHECK(rl_item(ppo.rl.time, trainledger::ItemId::rl_time_critic_training) > 0);
  const auto dapo = plan_text(k_small, {"rl.algorithm=\"dapo\""});
  CHECK(phase(dapo, "reference") == nullptr);
  CHECK(rl_item(dapo.rl.time, trainledger::ItemId::rl_time_reference) < 0);
}

TEST_CASE("split placement: one-step off-policy overlaps generation with training", "[rl]") {
  const std::vector<std::string> split = {"rl.placement=\"split\"", "rl.rollout_gpus=8"};
  auto off = split;
  off.push_back("rl.off_policy=true");
  const auto on = plan_text(k_small, split);
  const auto async = plan_text(k_small, off);
  CHECK(on.rl.total_gpus == 24);
  CHECK(on.rl.engines == 4);
  const double rollout = rl_item(on.rl.time, trainledger::ItemId::rl_time_prefill) +
                         rl_item(on.rl.time, trainledger::ItemId::rl_time_decode);
  const double sync = rl_item(on.rl.time, trainledger::ItemId::rl_time_weight_sync);
  const double on_step = rl_item(on.rl.time, trainledger::ItemId::rl_time_step);
  const double off_step = rl_item(async.rl.time, trainledger::ItemId::rl_time_step);
  const double train_side = on_step - rollout - sync;
  CHECK(off_step == Approx(std::max(rollout, train_side) + sync));
  CHECK(off_step < on_step);
  // The rollout GPUs hold no trainer state; their idle share is reported.
  const auto* r = phase(on, "rollout");
  REQUIRE(r);
  CHECK(r->pool == "rollout");
  CHECK(rl_item(r->items, trainledger::ItemId::rl_trainer_resident) < 0);
  CHECK(rl_item(on.rl.time, trainledger::ItemId::rl_rollout_idle) > 0);
}

TEST_CASE("check fails an RL plan whose engine or KV cache does not fit, naming the phase",
          "[rl][check]") {
  const auto ok = run_cli({"check", k_grpo});
  CHECK(ok.code == 0);
  // The 8B engine on one GPU needs 16 GiB of weights: 12 % of 80 GiB cannot hold them.
  const auto engine =
      run_cli({"check", k_grpo, "--set", "rl.memory_fraction=0.12", "--set", "rl.rollout_tp=1"});
  CHECK(engine.code == 1);
  CHECK(engine.out.find("does not fit: rollout: the engine's weights and activations") !=
        std::string::npos);
  // The same in the core (the invariant checker runs on it): the rollout phase fails, the
  // training ledger alone still fits.
  const auto p = plan_text(k_small, {"rl.memory_fraction=0.12", "rl.rollout_tp=1"});
  CHECK_FALSE(p.verdict.rl_fits);
  CHECK_FALSE(trainledger::plan_fits(p.verdict));
  CHECK(p.verdict.fits);
  REQUIRE(phase(p, "rollout"));
  CHECK_FALSE(phase(p, "rollout")->fits);
  CHECK_FALSE(p.rl.kv_fits);
  // 0.22 of 80 GiB leaves about 11k tokens of KV cache: not one 66k-token sequence.
  const auto kv = run_cli({"check", k_grpo, "--set", "rl.memory_fraction=0.22", "--set",
                           "rl.rollout_tp=1", "--set", "rl.response_length=65536", "--set",
                           "training.seq_len=4096", "--set", "rl.log_prob_micro_batch=1"});
  CHECK(kv.code == 1);
  CHECK(kv.out.find("rollout: the KV cache holds") != std::string::npos);
  CHECK(kv.out.find("less than one sequence") != std::string::npos);
}

TEST_CASE("plan prints a verdict per phase, the step's phases and tokens/s per GPU", "[rl]") {
  const auto r = run_cli({"plan", k_grpo});
  CHECK(r.code == 0);
  for (const char* text : {"RL step: grpo · colocated", "rollout (all)", "log-probs (all)",
                           "training (all)", "weight sync (all)", "KV cache:", "rl.time.decode",
                           "rl.time.training", "rl.tokens_per_s_per_gpu", "shares of the step"})
    CHECK(r.out.find(text) != std::string::npos);
  const auto j = run_cli({"plan", k_grpo, "--format", "json"});
  REQUIRE(j.code == 0);
  const auto doc = nlohmann::json::parse(j.out);
  CHECK(doc["rl"]["algorithm"] == "grpo");
  CHECK(doc["rl"]["phases"].size() == 5);
  CHECK(doc["verdict"]["rl_fits"] == true);
  CHECK(doc["rl"]["worst_phase"] == "rollout");
  bool tput = false;
  for (const auto& i : doc["rl"]["time"]["items"])
    tput = tput || (i["id"] == "rl.tokens_per_s_per_gpu" && i["value"].get<double>() > 0);
  CHECK(tput);
}

TEST_CASE("Markdown and HTML carry the RL phases", "[rl][report]") {
  const auto md = run_cli({"plan", k_grpo, "--format", "markdown"});
  REQUIRE(md.code == 0);
  for (const char* text : {"### RL step: grpo · colocated", "| rollout | all |",
                           "| weight sync | all |", "### RL step time", "`rl.time.decode`"})
    CHECK(md.out.find(text) != std::string::npos);
  const auto html = run_cli({"plan", k_grpo, "--format", "html"});
  REQUIRE(html.code == 0);
  CHECK(html.out.find("RL step: grpo") != std::string::npos);
  CHECK(html.out.find("rl.tokens_per_s_per_gpu") != std::string::npos);
}

TEST_CASE("explain shows an RL item's formula and source", "[rl][explain]") {
  const auto kv = run_cli({"explain", "rl.kv_cache", k_grpo});
  CHECK(kv.code == 0);
  CHECK(kv.out.find("RL rollout phase") != std::string::npos);
  CHECK(kv.out.find("memory_fraction") != std::string::npos);
  const auto decode = run_cli({"explain", "rl.time.decode", k_grpo});
  CHECK(decode.code == 0);
  CHECK(decode.out.find("full_steps") != std::string::npos);
}

TEST_CASE("bad [rl] input is refused with its key", "[rl][errors]") {
  auto has = [](const std::vector<std::string>& errors, const std::string& text) {
    for (const auto& e : errors)
      if (e.find(text) != std::string::npos) return true;
    return false;
  };
  std::string no_prompts = k_small;
  no_prompts.replace(no_prompts.find("prompts = 512\n"), 14, "");
  CHECK(has(load_errors(no_prompts), "rl.prompts: give the prompts per step"));
  CHECK(has(load_errors(k_small, {"rl.mini_batch_prompts=100"}),
            "rl.mini_batch_prompts (100) must divide rl.prompts (512)"));
  CHECK(has(load_errors(k_small, {"rl.placement=\"split\""}), "needs rl.rollout_gpus"));
  CHECK(has(load_errors(k_small, {"rl.off_policy=true"}), "rl.off_policy needs"));
  CHECK(has(load_errors(k_small, {"rl.rollout_tp=3"}), "rl.rollout_tp (3) must divide"));
  CHECK(has(load_errors(k_small, {"rl.mean_response_length=5000"}),
            "rl.mean_response_length (5000) exceeds rl.response_length (4096)"));
  CHECK(has(load_errors(k_small, {"rl.algorithm=\"sft\""}), "rl.algorithm"));
  CHECK(has(load_errors(k_small, {"rl.memory_fraction=1.5"}), "rl.memory_fraction"));
  const auto r = run_cli({"plan", k_grpo, "--set", "rl.prompts=0"});
  CHECK(r.code == 2);
}

TEST_CASE("the frozen models' weights: resident, loaded for their pass, or swapped in", "[rl]") {
  const double gib = 1024.0 * 1024 * 1024;
  const auto resident = plan_text(k_small);
  const double ref = resident.derived.params * 2 / 16;
  // verl's default: the reference's FSDP module stays on the GPUs through every phase.
  for (const char* name : {"rollout", "log-probs", "reference", "training", "weight sync"})
    CHECK(rl_item(phase(resident, name)->items, trainledger::ItemId::rl_reference_weights) ==
          Approx(ref));
  // ref.fsdp_config.param_offload: only its own pass holds it, beside the actor's weights.
  const auto offload = plan_text(k_small, {"rl.frozen_weights=\"offload\""});
  CHECK(rl_item(phase(offload, "rollout")->items, trainledger::ItemId::rl_reference_weights) == -1);
  CHECK(rl_item(phase(offload, "reference")->items, trainledger::ItemId::rl_reference_weights) ==
        Approx(ref));
  CHECK(offload.rl.host_bytes == Approx(resident.rl.host_bytes + ref * 8));
  // NeMo-RL copies it into the actor's parameters for the pass: no second copy on the GPU, the
  // actor's weights wait on the host meanwhile.
  const auto swap = plan_text(k_small, {"rl.frozen_weights=\"swap\""});
  CHECK(rl_item(phase(swap, "reference")->items, trainledger::ItemId::rl_reference_weights) == -1);
  CHECK(swap.rl.host_bytes == Approx(resident.rl.host_bytes + 2 * ref * 8));
  CHECK(phase(swap, "rollout")->peak_bytes == Approx(phase(resident, "rollout")->peak_bytes - ref));
  // A MoE actor's experts are split over ep as well: Qwen3-30B-A3B on 16 GPUs, ep 8, ZeRO-1.
  const auto moe = plan_text(R"(
[model]
preset = "qwen3-30b-a3b"
[training]
framework = "megatron"
micro_batch = 1
recompute = "full"
[parallel]
ep = 8
zero = 1
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 2
[rl]
prompts = 64
samples_per_prompt = 8
prompt_length = 512
response_length = 1024
rollout_tp = 2
)");
  const double moe_ref =
      rl_item(phase(moe, "reference")->items, trainledger::ItemId::rl_reference_weights);
  // 30.5 B parameters, 28.99 B of them routed experts (48 layers × 128 × 3 × 2048 × 768):
  // 1.54 B dense + 28.99 B / 8 = 5.16 B per GPU, 16-bit.
  CHECK(moe_ref / gib == Approx(9.6).epsilon(0.02));
  CHECK(moe_ref < moe.derived.params * 2 / 4);
}

TEST_CASE("weight sync holds a bucket on each side and the largest tensor gathered", "[rl]") {
  const auto p = plan_text(k_small);
  const double sync = rl_item(phase(p, "weight sync")->items, trainledger::ItemId::rl_sync_buffer);
  // 2 × 2048 MiB buckets + Llama 3.1 8B's embedding (128,256 × 4,096) gathered in fp32 and cast
  // to bf16 (6 B per element) under FSDP.
  CHECK(sync == Approx(2.0 * 2048 * 1024 * 1024 + 128256.0 * 4096 * 6));
  const auto old = plan_text(k_small, {"rl.sync_bucket=\"0 B\""});
  CHECK(rl_item(phase(old, "weight sync")->items, trainledger::ItemId::rl_sync_buffer) ==
        Approx(128256.0 * 4096 * 6));
  // The forward working sets: the actor's log-probs with verl's entropy (6 B per logit), the
  // reference's logits only (2 B), 4 sequences of 5120 tokens, tp 1, plus one layer (16 × h).
  const double per_seq = 4.0 * 5120;
  CHECK(rl_item(phase(p, "log-probs")->items, trainledger::ItemId::rl_forward) ==
        Approx(per_seq * (128256.0 * 6 + 16.0 * 4096)));
  CHECK(rl_item(phase(p, "reference")->items, trainledger::ItemId::rl_forward) ==
        Approx(per_seq * (128256.0 * 2 + 16.0 * 4096)));
}

TEST_CASE("the engine's log-probs can stand in for the old log-prob pass", "[rl]") {
  // verl use_rollout_log_probs: no old log-prob phase in memory or in time; the reference
  // pass stays, and the step is shorter by exactly the pass.
  const auto with = plan_text(k_small);
  const auto without = plan_text(k_small, {"rl.old_log_probs=false"});
  REQUIRE(phase(with, "log-probs") != nullptr);
  CHECK(phase(without, "log-probs") == nullptr);
  CHECK(phase(without, "reference") != nullptr);
  const double pass = rl_item(with.rl.time, trainledger::ItemId::rl_time_log_probs);
  REQUIRE(pass > 0);
  CHECK(rl_item(without.rl.time, trainledger::ItemId::rl_time_log_probs) < 0);
  CHECK(rl_item(without.rl.time, trainledger::ItemId::rl_time_step) ==
        Approx(rl_item(with.rl.time, trainledger::ItemId::rl_time_step) - pass));
}

TEST_CASE("log-prob passes without the entropy, and with the response's logits only", "[rl]") {
  // TRL (grpo_trainer.py _get_per_token_logps_and_entropies): compute_entropy=False outside
  // the loss, and logits_to_keep = the completion's length: 2 B per logit of the response's
  // 4096 tokens, the layer's activations still over all 5120.
  const auto p = plan_text(k_small, {"rl.log_prob_entropy=false", "rl.response_logits_only=true"});
  const double expected = 4.0 * (4096.0 * 128256 * 2 + 5120.0 * 16 * 4096);
  CHECK(rl_item(phase(p, "log-probs")->items, trainledger::ItemId::rl_forward) == Approx(expected));
  CHECK(rl_item(phase(p, "reference")->items, trainledger::ItemId::rl_forward) == Approx(expected));
  // Either alone.
  const auto no_entropy = plan_text(k_small, {"rl.log_prob_entropy=false"});
  CHECK(rl_item(phase(no_entropy, "log-probs")->items, trainledger::ItemId::rl_forward) ==
        Approx(4.0 * 5120 * (128256.0 * 2 + 16.0 * 4096)));
  const auto response = plan_text(k_small, {"rl.response_logits_only=true"});
  CHECK(rl_item(phase(response, "log-probs")->items, trainledger::ItemId::rl_forward) ==
        Approx(4.0 * (4096.0 * 128256 * 6 + 5120.0 * 16 * 4096)));
}

TEST_CASE("search on an RL plan ranks placements, engines and training layouts", "[rl][search]") {
  const auto r = run_cli({"search", k_grpo, "--jobs", "2", "--format", "json", "--top", "50"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["search"]["kind"] == "rl");
  CHECK(j["search"]["gpus"] == 16);
  CHECK(j["search"]["placements"] == 2);  // colocated on 16, split 8 + 8
  REQUIRE(j["top"].size() > 1);
  bool colocated = false, split = false;
  double last = 0;
  for (const auto& c : j["top"]) {
    CHECK(c["step_s"].get<double>() >= last);  // ranked by the RL step
    last = c["step_s"].get<double>();
    colocated = colocated || c["placement"] == "colocated";
    split = split || c["placement"] == "split";
    CHECK(c["peak_bytes"].get<double>() <= 81559.0 * 1024 * 1024);
  }
  CHECK(colocated);
  // The best, planned with its settings, gives the step the search ranked it by.
  std::vector<std::string> args = {"plan", k_grpo, "--format", "json"};
  for (const auto& s : j["top"][0]["settings"]) {
    args.push_back("--set");
    args.push_back(s.get<std::string>());
  }
  const auto best = run_cli(args);
  REQUIRE(best.code == 0);
  const auto plan = nlohmann::json::parse(best.out);
  double step = 0;
  for (const auto& i : plan["rl"]["time"]["items"])
    if (i["id"] == "rl.time.step") step = i["value"].get<double>();
  CHECK(step == Approx(j["top"][0]["step_s"].get<double>()).epsilon(1e-9));
  CHECK(plan["verdict"]["rl_fits"] == true);
  // Restricted: split only, the engine at tp 2.
  const auto s = run_cli({"search", k_grpo, "--jobs", "1", "--format", "json", "--fix",
                          "rl.placement=split", "--allow", "rl.rollout_tp=2"});
  REQUIRE(s.code == 0);
  const auto js = nlohmann::json::parse(s.out);
  REQUIRE(!js["top"].empty());
  for (const auto& c : js["top"]) {
    CHECK(c["placement"] == "split");
    CHECK(c["rollout_tp"] == 2);
    CHECK(c["rollout_gpus"] == 8);
  }
  // The table names the best as plan settings.
  const auto t = run_cli({"search", k_grpo, "--jobs", "2", "--top", "3"});
  CHECK(t.code == 0);
  CHECK(t.out.find("search (RL)") != std::string::npos);
  CHECK(t.out.find("--set rl.rollout_tp=") != std::string::npos);
}

TEST_CASE("RL search options are checked", "[rl][search][errors]") {
  const auto bad = run_cli({"search", k_grpo, "--fix", "rl.placement=elsewhere"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("rl.placement") != std::string::npos);
  const auto frac = run_cli({"search", k_grpo, "--allow", "rl.memory_fraction=0.5,1.5"});
  CHECK(frac.code == 2);
  CHECK(frac.err.find("1.5") != std::string::npos);
  const auto unknown = run_cli({"search", k_grpo, "--fix", "rl.engine=sglang"});
  CHECK(unknown.code == 2);
  // A key given twice is refused, the file's or shell's bytes shown escaped.
  const auto twice = run_cli(
      {"search", k_grpo, "--allow", "rl.rollout_tp=1", "--allow", "rl.rollout_tp=2\x1b[2J"});
  CHECK(twice.code == 2);
  CHECK(twice.err.find("given twice") != std::string::npos);
  CHECK(twice.err.find('\x1b') == std::string::npos);
  const auto fewest = run_cli({"search", k_grpo, "--fewest"});
  CHECK(fewest.code == 2);
  const auto training =
      run_cli({"search", source_path("configs/plans/default.toml"), "--fix", "rl.rollout_tp=2"});
  CHECK(training.code == 2);
  CHECK(training.err.find("[rl]") != std::string::npos);
}
