// The RL step's decode model (docs/rl.md#step-time): the engine's tensor-parallel all-reduce
// inside a node and across nodes, the host work of each engine step without async scheduling,
// and DAPO's repeated generation rounds.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "helpers.hpp"
#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

using namespace trainledger;
using test::plan_text;

namespace {

// A colocated GRPO plan of a 70B model whose engines span `tp` GPUs on nodes of `per_node`.
std::string engine_plan(int tp, int per_node, int nodes) {
  return "[model]\npreset = \"llama-3.1-70b\"\n[training]\nframework = \"megatron\"\n"
         "micro_batch = 1\nseq_len = 4096\nrecompute = \"full\"\n[parallel]\ntp = 8\npp = 4\n"
         "zero = 1\n[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = " +
         std::to_string(nodes) + "\ngpus_per_node = " + std::to_string(per_node) +
         "\n[rl]\nprompts = 64\nsamples_per_prompt = 8\nprompt_length = 1024\n"
         "response_length = 3072\nmean_prompt_length = 200\nmean_response_length = 1200\n"
         "mini_batch_prompts = 32\nrollout_tp = " +
         std::to_string(tp) + "\nmemory_fraction = 0.6\n";
}

const LineItem& item(const PlanResult& p, ItemId id) {
  for (const LineItem& i : p.rl.time)
    if (i.item == id) return i;
  FAIL("no item " << info(id).name);
  return p.rl.time.front();
}

double term(const LineItem& i, const std::string& key) {
  for (const Term& t : i.terms)
    if (t.key == key) return t.value;
  return -1;
}

// The weight sync of a GB200 plan in its NVL72 rack runs over NVLink; with each tray its own
// NVLink island (nvlink_domain 4) the same sync crosses the network, slower.
void sync_on_nvlink_in_the_rack(const PlanResult& rack, const PlanResult& islands) {
  const LineItem& s_rack = item(rack, ItemId::rl_time_weight_sync);
  const LineItem& s_islands = item(islands, ItemId::rl_time_weight_sync);
  CHECK(term(s_rack, "link") == Approx(rack.input.cluster.intra_node_bandwidth));
  CHECK(term(s_islands, "link") == Approx(islands.input.cluster.inter_node_bandwidth));
  CHECK(s_rack.value < s_islands.value);
}

}  // namespace

TEST_CASE("an engine across nodes all-reduces over the network, inside a node over NVLink",
          "[rl]") {
  // The same 16-GPU engines on 16-GPU nodes (one NVLink domain) and on 8-GPU nodes.
  const PlanResult inside = plan_text(engine_plan(16, 16, 2));
  const PlanResult across = plan_text(engine_plan(16, 8, 4));
  REQUIRE(inside.rl.present);
  REQUIRE(across.rl.present);
  const LineItem& d_in = item(inside, ItemId::rl_time_decode);
  const LineItem& d_across = item(across, ItemId::rl_time_decode);
  // Same work per engine: the steps and the batch agree.
  CHECK(term(d_in, "full_steps") == Approx(term(d_across, "full_steps")));
  CHECK(term(d_in, "tail_steps") == Approx(term(d_across, "tail_steps")));
  // Each step pays two all-reduces per layer; across nodes NCCL's tree (2 · (8 − 1) NVLink
  // steps and 2 · ⌈log2 2⌉ network steps) replaces vLLM's one-shot all-reduce (one step).
  const double layers = 80;
  const double tree_latency = 14 * 8e-6 + 2 * 20e-6;  // the default latencies
  const double extra_latency_per_step = 2 * layers * (tree_latency - 8e-6);
  const double one_in = term(d_in, "step_one"), one_across = term(d_across, "step_one");
  CHECK(one_across - one_in >= extra_latency_per_step * 0.999);
  CHECK(d_across.value > d_in.value);
  // Engines inside a node are not touched by the network's rate or latency.
  const PlanResult slow_net =
      plan_text(engine_plan(16, 16, 2), {"cluster.inter_node_latency=\"200 us\""});
  CHECK(item(slow_net, ItemId::rl_time_decode).value == Approx(d_in.value));
  const PlanResult slow_net_across =
      plan_text(engine_plan(16, 8, 4), {"cluster.inter_node_latency=\"200 us\""});
  CHECK(item(slow_net_across, ItemId::rl_time_decode).value > d_across.value);
}

TEST_CASE("without async scheduling each engine step waits for the host's work", "[rl]") {
  const std::string plan = engine_plan(8, 8, 4);
  const PlanResult overlapped = plan_text(plan);  // default: async scheduling
  const PlanResult serial = plan_text(plan, {"rl.async_scheduling=false"});
  const PlanResult slower =
      plan_text(plan, {"rl.async_scheduling=false", "rl.step_overhead=\"10 ms\""});
  const LineItem& d0 = item(overlapped, ItemId::rl_time_decode);
  const LineItem& d1 = item(serial, ItemId::rl_time_decode);
  const double steps = term(d0, "full_steps") + term(d0, "tail_steps");
  REQUIRE(steps > 0);
  CHECK(term(d0, "step_overhead") == -1);  // not in the formula when overlapped
  CHECK(term(d1, "step_overhead") == Approx(0.004));
  CHECK(d1.value - d0.value == Approx(steps * 0.004));
  CHECK(item(slower, ItemId::rl_time_decode).value - d0.value == Approx(steps * 0.010));
  // Only the decode changes; the step grows by as much (colocated: the parts add up).
  CHECK(item(serial, ItemId::rl_time_step).value - item(overlapped, ItemId::rl_time_step).value ==
        Approx(steps * 0.004));
  CHECK(item(serial, ItemId::rl_time_training).value ==
        Approx(item(overlapped, ItemId::rl_time_training).value));
}

TEST_CASE("DAPO's dynamic sampling repeats generation, not training or memory", "[rl]") {
  const std::string plan = engine_plan(8, 8, 4) + "algorithm = \"dapo\"\n";
  const PlanResult once = plan_text(plan);
  const PlanResult thrice = plan_text(plan, {"rl.generation_rounds=3"});
  CHECK(item(thrice, ItemId::rl_time_decode).value ==
        Approx(3 * item(once, ItemId::rl_time_decode).value));
  CHECK(item(thrice, ItemId::rl_time_prefill).value ==
        Approx(3 * item(once, ItemId::rl_time_prefill).value));
  CHECK(item(thrice, ItemId::rl_time_training).value ==
        Approx(item(once, ItemId::rl_time_training).value));
  REQUIRE(once.rl.phases.size() == thrice.rl.phases.size());
  for (std::size_t k = 0; k < once.rl.phases.size(); ++k)
    CHECK(once.rl.phases[k].peak_bytes == Approx(thrice.rl.phases[k].peak_bytes));
  // The tokens trained on stay those of one round: the throughput falls.
  CHECK(thrice.rl.tokens_per_step == Approx(once.rl.tokens_per_step));
  CHECK(item(thrice, ItemId::rl_tokens_per_s_per_gpu).value <
        item(once, ItemId::rl_tokens_per_s_per_gpu).value);
  // Fewer than one round is refused with the key.
  CHECK_FALSE(test::load_errors(plan, {"rl.generation_rounds=0.5"}).empty());
}

TEST_CASE("the trainer's offload is timed at the rate of the memory it is copied through", "[rl]") {
  // The same colocated plan, its trainer state offloaded each step, copied through pageable
  // memory (tensor.to("cpu"): verl), the weights pinned and the optimizer pageable (NeMo-RL's
  // Megatron worker), or all pinned (OpenRLHF's DeepSpeed offload_states).
  const std::string base = engine_plan(8, 8, 4) +
                           "sleep = \"discard\"\noffload_params = true\n"
                           "offload_optimizer = true\n";
  const PlanResult pageable = plan_text(base + "offload_copy = \"pageable\"\n");
  const PlanResult weights = plan_text(base + "offload_copy = \"pinned_weights\"\n");
  const PlanResult pinned = plan_text(base + "offload_copy = \"pinned\"\n");
  const LineItem& a = item(pageable, ItemId::rl_time_sleep_wake);
  const LineItem& b = item(weights, ItemId::rl_time_sleep_wake);
  const LineItem& c = item(pinned, ItemId::rl_time_sleep_wake);
  // Out and back: 2 × (bytes / rate) for each part, at the default rates (H100: 1.9 GB/s
  // pageable, the preset's pinned rate).
  const double state = term(a, "pageable");
  REQUIRE(state > 0);
  CHECK(term(a, "pinned") < 0);  // nothing pinned: the engine discards its weights
  CHECK(term(a, "pageable_rate") == Approx(1.9e9));
  CHECK(a.value == Approx(2 * state / 1.9e9));
  // Pinned weights: the optimizer state alone stays pageable.
  const double optimizer = term(b, "pageable");
  const double params = term(b, "pinned");
  CHECK(optimizer + params == Approx(state));
  CHECK(optimizer > 0);
  CHECK(params > 0);
  CHECK(b.value == Approx(2 * (params / term(b, "pcie") + optimizer / 1.9e9)));
  CHECK(term(c, "pinned") == Approx(state));
  CHECK(c.value == Approx(2 * state / term(c, "pcie")));
  CHECK(c.value < b.value);
  CHECK(b.value < a.value);
  // The step carries the difference, and the rate is a cluster key.
  CHECK(item(pageable, ItemId::rl_time_step).value - item(pinned, ItemId::rl_time_step).value ==
        Approx(a.value - c.value));
  std::string fast = base;
  fast.insert(fast.find("[cluster]\n") + 10, "pageable_bandwidth = \"3.8 GB/s\"\n");
  const PlanResult faster = plan_text(fast);
  CHECK(item(faster, ItemId::rl_time_sleep_wake).value == Approx(a.value / 2));
}

TEST_CASE(
    "on an NVL72 rack an engine across trays all-reduces over NVLink, and the refit stays "
    "on NVLink",
    "[rl]") {
  // 16-GPU engines on GB200 trays of 4: NCCL (vLLM's custom all-reduce needs one host) over
  // the rack's NVLink domain, or over the network when each tray is its own island.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-70b\"\n[training]\nframework = \"megatron\"\n"
      "micro_batch = 1\nseq_len = 4096\nrecompute = \"full\"\n[parallel]\ntp = 4\npp = 4\n"
      "zero = 1\n[cluster]\ngpu = \"gb200-186gb\"\nnodes = 8\n"
      "[rl]\nprompts = 64\nsamples_per_prompt = 8\nprompt_length = 1024\n"
      "response_length = 3072\nmean_prompt_length = 200\nmean_response_length = 1200\n"
      "mini_batch_prompts = 32\nrollout_tp = 16\nmemory_fraction = 0.6\n";
  const PlanResult rack = plan_text(plan);
  const PlanResult islands = plan_text(plan, {"cluster.nvlink_domain=4"});
  REQUIRE(rack.rl.present);
  const LineItem& d_rack = item(rack, ItemId::rl_time_decode);
  const LineItem& d_islands = item(islands, ItemId::rl_time_decode);
  CHECK(term(d_rack, "full_steps") == Approx(term(d_islands, "full_steps")));
  CHECK(term(d_rack, "step_one") < term(d_islands, "step_one"));
  // A slower network does not touch the rack's engines.
  const PlanResult slow_net = plan_text(plan, {"cluster.inter_node_latency=\"200 us\""});
  CHECK(item(slow_net, ItemId::rl_time_decode).value == Approx(d_rack.value));
  // The colocated refit gathers over NVLink inside the rack (32 GPUs), over the network without.
  sync_on_nvlink_in_the_rack(rack, islands);
}

TEST_CASE("split pools in one NVL72 rack sync over NVLink, pools in two racks over the network",
          "[rl]") {
  // One step off-policy GRPO of Llama 3.1 8B on GB200 trays of 4: 4 GPUs train, 4 generate.
  // The job's 2 trays are one NVLink domain; the domain is the whole job's, not the training
  // pool's (1 tray), and with trays as islands the same sync crosses the network.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nmicro_batch = 1\nseq_len = 4096\n"
      "recompute = \"full\"\n[parallel]\nzero = 3\n[cluster]\ngpu = \"gb200-186gb\"\nnodes = 1\n"
      "[rl]\nplacement = \"split\"\nrollout_gpus = 4\noff_policy = true\nprompts = 64\n"
      "samples_per_prompt = 8\nprompt_length = 1024\nresponse_length = 3072\n"
      "mean_prompt_length = 200\nmean_response_length = 1200\nmini_batch_prompts = 32\n";
  const PlanResult rack = plan_text(plan);
  REQUIRE(rack.rl.present);
  REQUIRE(rack.input.rl.placement == RlPlacement::split);
  sync_on_nvlink_in_the_rack(rack, plan_text(plan, {"cluster.nvlink_domain=4"}));
}
