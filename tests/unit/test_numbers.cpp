// One set of formulas, two evaluations: the numbers-only path (evaluate) and the explained
// ledger (compute_plan) must agree to the bit on every number, over many random valid plans.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/numbers.hpp"

using namespace trainledger;

namespace {

template <typename T>
const T& pick(std::mt19937& rng, const std::vector<T>& from) {
  return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
}

// --set overrides for a random plan on the default plan's cluster; some are invalid (the
// loader rejects them and they are skipped).
std::vector<std::string> random_sets(std::mt19937& rng) {
  const std::vector<std::string> models = {"llama-2-7b",   "llama-3.1-8b", "llama-2-70b",
                                           "mixtral-8x7b", "qwen2.5-7b",   "gpt3-175b",
                                           "bloom-176b",   "mistral-7b",   "llama-3.1-70b"};
  const std::vector<std::string> gpus = {"h100-sxm5-80gb", "a100-sxm4-80gb", "a100-sxm4-40gb",
                                         "h200-sxm-141gb", "mi300x-192gb"};
  std::vector<std::string> s;
  const std::string model = pick(rng, models);
  s.push_back("model.preset=\"" + model + "\"");
  s.push_back("cluster.gpu=\"" + pick(rng, gpus) + "\"");
  const int tp = pick(rng, std::vector<int>{1, 2, 4, 8});
  const int pp = pick(rng, std::vector<int>{1, 2, 4, 8});
  const int cp = pick(rng, std::vector<int>{1, 1, 1, 2});
  const int dp = pick(rng, std::vector<int>{1, 2, 4, 8});
  const int gpn = 8;
  const int world = tp * pp * cp * dp;
  s.push_back("parallel.tp=" + std::to_string(tp));
  s.push_back("parallel.pp=" + std::to_string(pp));
  s.push_back("parallel.cp=" + std::to_string(cp));
  s.push_back("parallel.dp=" + std::to_string(dp));
  s.push_back("cluster.gpus_per_node=" + std::to_string(world < gpn ? world : gpn));
  s.push_back("cluster.nodes=" + std::to_string(world < gpn ? 1 : world / gpn));
  if (model == "mixtral-8x7b")
    s.push_back("parallel.ep=" + pick(rng, std::vector<std::string>{"1", "2"}));
  const int zero = pick(rng, std::vector<int>{0, 1, 2, 3});
  s.push_back("parallel.zero=" + std::to_string(zero));
  if (zero == 3 && dp * cp >= 4 && rng() % 3 == 0) s.push_back("parallel.zero_shard_size=2");
  if (zero == 3 && rng() % 3 == 0) s.push_back("parallel.reshard_after_forward=false");
  s.push_back(
      "training.framework=\"" +
      pick(rng, std::vector<std::string>{"pytorch", "hf", "megatron", "deepspeed", "generic"}) +
      "\"");
  if (rng() % 3 == 0) s.push_back("training.compile=true");
  if (rng() % 4 == 0) s.push_back("training.reduce_dtype=\"bf16\"");
  if (rng() % 3 == 0) s.push_back("parallel.overlap_param_gather=true");
  if (zero == 3 && rng() % 3 == 0) s.push_back("parallel.fp8_all_gather=true");
  if (rng() % 4 == 0) s.push_back("training.document_length=1024");
  if (rng() % 3 == 0) s.push_back("parallel.overlap_tp=true");
  if (rng() % 4 == 0) s.push_back("parallel.overlap_dp=false");
  if (rng() % 4 == 0) s.push_back("parallel.allreduce=\"tree\"");
  s.push_back("parallel.sequence_parallel=" + std::string(tp > 1 && rng() % 2 ? "true" : "false"));
  const std::string sched =
      pick(rng, std::vector<std::string>{"1f1b", "gpipe", "interleaved", "zb-h1"});
  if (pp > 1) {
    s.push_back("parallel.schedule=\"" + sched + "\"");
    if (sched == "interleaved") s.push_back("parallel.virtual_stages=2");
  }
  const int mb = pick(rng, std::vector<int>{1, 2, 4});
  const int accum = pick(rng, std::vector<int>{1, 2, 8, 32});
  s.push_back("training.micro_batch=" + std::to_string(mb));
  s.push_back("training.global_batch=" + std::to_string(mb * dp * accum));
  s.push_back("training.seq_len=" +
              pick(rng, std::vector<std::string>{"1024", "2048", "4096", "8192"}));
  s.push_back("training.recompute=\"" +
              pick(rng, std::vector<std::string>{"none", "selective", "op", "full"}) + "\"");
  if (rng() % 4 == 0) s.push_back("training.recompute_layers=0.5");
  s.push_back("training.attention=\"" + pick(rng, std::vector<std::string>{"flash", "eager"}) +
              "\"");
  s.push_back("training.precision=\"" +
              pick(rng, std::vector<std::string>{"bf16", "bf16", "fp8", "fp32"}) + "\"");
  s.push_back("training.optimizer=\"" +
              pick(rng, std::vector<std::string>{"adamw", "adamw-8bit", "sgd", "sgd-momentum",
                                                 "lion", "adafactor"}) +
              "\"");
  const std::string ft = pick(rng, std::vector<std::string>{"full", "full", "lora", "qlora"});
  s.push_back("training.finetune=\"" + ft + "\"");
  if (ft != "full") s.push_back("training.lora_targets=[\"q_proj\", \"v_proj\", \"down_proj\"]");
  if (rng() % 3 == 0)
    s.push_back(std::string("training.loss=") + (rng() % 2 ? "\"chunked\"" : "\"fused\""));
  if (rng() % 4 == 0) s.push_back("training.dropout=0.1");
  if (rng() % 4 == 0) s.push_back("training.tokens=\"1T\"");
  if (rng() % 4 == 0) s.push_back("checkpoint.format=\"gathered\"");
  if (rng() % 4 == 0) s.push_back("checkpoint.interval=\"2 h\"");
  if (rng() % 5 == 0)
    s.push_back(std::string("parallel.offload=") +
                (rng() % 2 ? "\"optimizer\"" : "\"optimizer+params\""));
  if (rng() % 5 == 0) s.push_back("parallel.grad_sync=\"last_micro_batch\"");
  if (rng() % 6 == 0) s.push_back("training.data_workers=4");
  return s;
}

void same_items(const std::vector<LineItem>& explained, const NumItems& numbers,
                const std::string& where) {
  INFO(where);
  REQUIRE(static_cast<int>(explained.size()) == numbers.size());
  const NumItem* n = numbers.begin();
  for (const LineItem& e : explained) {
    INFO(e.id);
    CHECK(e.item == n->item);
    CHECK(e.value == n->value);  // exact: the same arithmetic in the same order
    ++n;
  }
}

void same_numbers(const PlanResult& e, const PlanNumbers& n) {
  REQUIRE(e.stages.size() == n.stages.size());
  for (std::size_t s = 0; s < e.stages.size(); ++s) {
    const StageMemory& es = e.stages[s];
    const StageNumbers& ns = n.stages[s];
    CHECK(es.peak_bytes == ns.peak_bytes);
    CHECK(es.peak_phase == ns.peak_phase);
    for (const PhaseTotal& pt : es.phases)
      CHECK(pt.bytes == ns.phase_bytes[static_cast<int>(pt.phase)]);
    same_items(es.items, ns.items, "stage " + std::to_string(s));
  }
  CHECK(e.worst_stage == n.worst_stage);
  CHECK(e.verdict.peak_bytes == n.verdict.peak_bytes);
  CHECK(e.verdict.fits == n.verdict.fits);
  CHECK(e.verdict.headroom == n.verdict.headroom);
  same_items(e.host.items, n.host, "host");
  CHECK(e.host.peak_bytes == n.host_peak_bytes);
  same_items(e.communication, n.communication, "communication");
  for (const LineItem& c : e.communication) {
    const CommDim* dim = nullptr;
    for (const CommDim& d : n.comm.dims)
      if (d.present && info(c.item).name == "comm." + std::string(to_string(d.dim))) dim = &d;
    REQUIRE(dim);
    CHECK(dim->bytes == c.value);
    REQUIRE(c.time_s);
    CHECK(dim->time_s == *c.time_s);
    CHECK(static_cast<std::size_t>(dim->n_calls) == c.collectives.size());
  }
  same_items(e.time, n.time, "time");
  same_items(e.reliability, n.reliability, "reliability");
  CHECK(e.derived.grad_accum == n.derived.grad_accum);
  CHECK(e.derived.params == n.derived.params);
}

// The search's evaluation: only the stages that can hold the peak, then the time side alone.
// Its verdict, worst stage and time must equal the full evaluation's.
void same_peak(const PlanNumbers& full, const PlanInput& input) {
  PlanNumbers part;
  evaluate(input, part, PlanScope{false, false, false});
  REQUIRE(part.stages.size() <= full.stages.size());
  for (const StageNumbers& st : part.stages) {
    REQUIRE(st.stage < static_cast<int>(full.stages.size()));
    CHECK(st.peak_bytes == full.stages[static_cast<std::size_t>(st.stage)].peak_bytes);
  }
  CHECK(part.worst_stage == full.worst_stage);
  CHECK(part.verdict.peak_bytes == full.verdict.peak_bytes);
  CHECK(part.verdict.phase == full.verdict.phase);
  CHECK(part.host_peak_bytes == full.host_peak_bytes);
  evaluate_time(input, part, PlanScope{true, false, false});
  REQUIRE(part.time.size() == full.time.size());
  const NumItem* f = full.time.begin();
  for (const NumItem& t : part.time) {
    CHECK(t.item == f->item);
    CHECK(t.value == f->value);
    ++f;
  }
}

}  // namespace

TEST_CASE("numbers-only and explained evaluations agree exactly on random valid plans",
          "[numbers]") {
  std::mt19937 rng(20261130);
  int accepted = 0, tried = 0;
  PlanNumbers numbers;  // reused, as a search reuses it
  while (accepted < 1000 && tried < 20000) {
    ++tried;
    config::LoadOptions o;
    o.sets = random_sets(rng);
    PlanInput input;
    try {
      input = config::load_default_plan(o).input;
    } catch (const config::ConfigError&) {
      continue;  // an invalid combination: the loader's rules reject it
    }
    ++accepted;
    INFO("plan " << accepted << ": --set " << [&] {
      std::string all;
      for (const std::string& x : o.sets) all += x + " ";
      return all;
    }());
    const PlanResult explained = compute_plan(input);
    CHECK(check_invariants(explained).empty());
    evaluate(input, numbers);
    same_numbers(explained, numbers);
    PlanNumbers no_scaling;
    evaluate(input, no_scaling, PlanScope{true, false});
    same_peak(no_scaling, input);
  }
  CHECK(accepted >= 1000);
}

TEST_CASE("the numbers-only path skips the time side when asked", "[numbers]") {
  const PlanInput input = config::load_default_plan({}).input;
  PlanNumbers n;
  evaluate(input, n, PlanScope{false, false});
  CHECK(n.time.empty());
  CHECK(n.communication.empty());
  CHECK(!n.comm[Dim::tp].present);
  const PlanResult e = compute_plan(input, PlanScope{false, false});
  CHECK(n.verdict.peak_bytes == e.verdict.peak_bytes);
  // Reused storage: a smaller plan after a larger one keeps no stale stages.
  config::LoadOptions one;
  one.sets = {"parallel.pp=1", "parallel.dp=8", "parallel.tp=8", "cluster.nodes=8"};
  evaluate(config::load_default_plan(one).input, n, PlanScope{false, false});
  CHECK(n.stages.size() == 1);
}

TEST_CASE("the search's evaluation of the peak stages only equals the full one", "[numbers]") {
  // Uneven stages, every schedule, multi-token prediction on the last stage, micro-batches
  // fewer than the stages (every stage holds the same number in flight).
  for (const std::string sched : {"1f1b", "gpipe", "interleaved", "zb-h1"})
    for (const std::string accum : {"2", "32"})
      for (const std::string layers : {"[3, 5, 4, 4, 4, 4, 5, 3]", "[4, 4, 4, 4, 4, 4, 4, 4]"}) {
        config::LoadOptions o;
        o.sets = {"model.preset=\"llama-3.1-8b\"",
                  "parallel.tp=1",
                  "parallel.pp=8",
                  "parallel.dp=1",
                  "cluster.nodes=1",
                  "parallel.stage_layers=" + layers,
                  "parallel.schedule=\"" + sched + "\"",
                  "training.micro_batch=1",
                  "training.global_batch=" + accum,
                  "model.mtp_layers=1"};
        if (sched == "interleaved") {
          if (layers[1] == '3') continue;  // chunks must be equal
          if (accum == "2") continue;      // fewer micro-batches than stages: refused
          o.sets.push_back("parallel.virtual_stages=2");
        }
        INFO(sched << " accum " << accum << " stages " << layers);
        const PlanInput input = config::load_default_plan(o).input;
        PlanNumbers full;
        evaluate(input, full, PlanScope{true, false});
        same_peak(full, input);
        PlanNumbers part;
        evaluate(input, part, PlanScope{false, false, false});
        CHECK(part.stages.size() < full.stages.size());
      }
}
