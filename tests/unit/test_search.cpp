// Layout search (docs/cli.md#search): its best layout is the best of separate `plan` runs over
// the same space, its numbers are plan's to the bit, and it does not depend on the threads.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>

#include "helpers.hpp"
#include "trainledger/layout_search.hpp"
#include "trainledger/ledger.hpp"

using namespace trainledger;

namespace {

const std::string k_small = R"([model]
preset = "llama-3.2-1b"
[training]
seq_len = 4096
global_batch = 16
[cluster]
gpu = "a100-sxm4-40gb"
nodes = 1
gpus_per_node = 8
)";

// The --set lines that give a layout, as a user would pass them to `trainledger plan`.
std::vector<std::string> sets_of(const Layout& l) {
  std::vector<std::string> s = {
      fmt::format("parallel.tp={}", l.tp),
      fmt::format("parallel.pp={}", l.pp),
      fmt::format("parallel.dp={}", l.dp),
      fmt::format("parallel.cp={}", l.cp),
      fmt::format("parallel.ep={}", l.ep),
      fmt::format("parallel.zero={}", l.zero),
      fmt::format("parallel.sequence_parallel={}", l.sequence_parallel ? "true" : "false"),
      fmt::format("training.recompute=\"{}\"", to_string(l.recompute)),
      fmt::format("training.micro_batch={}", l.micro_batch),
      fmt::format("parallel.schedule=\"{}\"", to_string(l.schedule)),
      fmt::format("parallel.virtual_stages={}", l.virtual_stages)};
  if (!l.stage_layers.empty())
    s.push_back(fmt::format("parallel.stage_layers=[{}]", fmt::join(l.stage_layers, ",")));
  if (l.shard > 0) s.push_back(fmt::format("parallel.zero_shard_size={}", l.shard));
  s.push_back(fmt::format("parallel.offload=\"{}\"", to_string(l.offload)));
  if (l.placement == 1) s.push_back("parallel.placement=[\"tp\", \"cp\", \"pp\", \"dp\"]");
  return s;
}

double time_item(const PlanResult& p, ItemId id) {
  const LineItem* i = find_item(p.time, id);
  return i ? i->value : 0;
}

// Brute force: every enumerated layout as its own plan, through the plan file's loader; the
// search must accept exactly the same layouts and find the same best, with the same numbers.
void brute_force(const std::string& plan, const SearchSpace& space) {
  const PlanInput base = test::load_text(plan).input;
  SearchOptions o;
  o.space = space;
  o.top = 1000000;
  o.jobs = 2;
  const SearchResult found = search_layouts(base, o);
  REQUIRE(found.enumerated > 50);
  REQUIRE(!found.top.empty());
  const double limit = static_cast<double>(base.cluster.gpu.memory_bytes) * 0.9;
  int loaded = 0, fitting = 0;
  double best = 1e300;
  Layout best_layout;
  PlanResult best_plan;
  // The search keeps the stack inferred from the plan as given; each separate plan names it.
  const std::string stack =
      fmt::format("training.framework=\"{}\"", to_string(base.training.framework));
  for (const Layout& l : enumerate_layouts(base, o.space)) {
    std::vector<std::string> sets = sets_of(l);
    sets.push_back(stack);
    if (!test::load_errors(plan, sets).empty()) continue;
    ++loaded;
    const PlanResult p = test::plan_text(plan, sets);
    if (!(p.verdict.peak_bytes <= limit)) continue;
    ++fitting;
    const double step = time_item(p, ItemId::time_step);
    if (step < best) {
      best = step;
      best_layout = l;
      best_plan = p;
    }
  }
  CHECK(loaded == found.valid);
  CHECK(fitting == found.fitting);
  const Layout& top = found.top.front();
  CHECK(top.order == best_layout.order);
  CHECK(top.step_s == best);  // bit for bit
  CHECK(top.peak_bytes == best_plan.verdict.peak_bytes);
  CHECK(top.tokens_per_s_per_gpu == time_item(best_plan, ItemId::throughput_tokens_per_s_per_gpu));
  CHECK(top.mfu == time_item(best_plan, ItemId::mfu));
  CHECK(top.comm_s == time_item(best_plan, ItemId::time_comm_exposed));
  // The list is sorted and the Pareto front is a front: less memory costs time.
  for (std::size_t i = 1; i < found.top.size(); ++i)
    CHECK(found.top[i - 1].step_s <= found.top[i].step_s);
  for (std::size_t i = 1; i < found.pareto.size(); ++i) {
    CHECK(found.pareto[i - 1].peak_bytes <= found.pareto[i].peak_bytes);
    CHECK(found.pareto[i - 1].step_s > found.pareto[i].step_s);
  }
  CHECK(found.pareto.back().step_s == top.step_s);
}

}  // namespace

TEST_CASE("search: the best layout is the best of separate plan runs, to the bit", "[search]") {
  // One node: tp, pp (even and uneven), cp, dp, ZeRO, recompute, micro-batch, schedules and
  // the placement of pp inside dp.
  SearchSpace one_node;
  one_node.zero = {0, 1, 3};
  one_node.recompute = {Recompute::none, Recompute::full};
  brute_force(k_small, one_node);
  // Four nodes of four GPUs: HSDP shard groups of one and two nodes.
  SearchSpace hsdp;
  hsdp.zero = {3};
  hsdp.recompute = {Recompute::full};
  hsdp.tp = {1, 2};
  hsdp.pp = {1, 2};
  brute_force(R"([model]
preset = "llama-3.2-1b"
[training]
seq_len = 4096
global_batch = 32
[cluster]
gpu = "a100-sxm4-40gb"
nodes = 4
gpus_per_node = 4
)",
              hsdp);
  bool any_shard = false;
  for (const Layout& l : enumerate_layouts(test::load_text(R"([model]
preset = "llama-3.2-1b"
[training]
global_batch = 32
[cluster]
gpu = "a100-sxm4-40gb"
nodes = 4
gpus_per_node = 4
)")
                                               .input,
                                           hsdp))
    any_shard = any_shard || l.shard > 0;
  CHECK(any_shard);
}

TEST_CASE("search: tensor parallelism across the trays of an NVLink domain", "[search]") {
  // GB200 NVL72 (the preset: 4-GPU trays, a 72-GPU domain) on 18 trays: tp may span trays in
  // whole trays that divide the domain (8, 12, 24, ...: of those 8 splits the 64 heads), never
  // 3 or 6; plain 4-GPU nodes stop at 4.
  const std::string plan = R"([model]
preset = "llama-3.1-70b"
[training]
seq_len = 4096
global_batch = 144
[cluster]
gpu = "gb200-186gb"
nodes = 18
)";
  std::set<int> rack, nodes;
  for (const Layout& l : enumerate_layouts(test::load_text(plan).input, SearchSpace{}))
    rack.insert(l.tp);
  for (const Layout& l :
       enumerate_layouts(test::load_text(plan, {"cluster.nvlink_domain=4"}).input, SearchSpace{}))
    nodes.insert(l.tp);
  CHECK(rack.count(8) == 1);
  CHECK(rack.count(16) == 0);  // 16 does not divide 72
  CHECK(rack.count(3) == 0);
  CHECK(rack.count(6) == 0);
  CHECK(*nodes.rbegin() == 4);
}

TEST_CASE("search: the same answer on any number of threads, constraints hold", "[search]") {
  const PlanInput base = test::load_text(k_small).input;
  SearchOptions o;
  o.top = 20;
  o.jobs = 1;
  const SearchResult one = search_layouts(base, o);
  o.jobs = 3;
  const SearchResult three = search_layouts(base, o);
  REQUIRE(one.top.size() == three.top.size());
  for (std::size_t i = 0; i < one.top.size(); ++i) {
    CHECK(one.top[i].order == three.top[i].order);
    CHECK(one.top[i].step_s == three.top[i].step_s);
  }
  CHECK(one.pareto.size() == three.pareto.size());
  CHECK(one.valid == three.valid);
  // --fix tp=2 and --allow zero=1,3.
  o.space.tp = {2};
  o.space.zero = {1, 3};
  const SearchResult fixed = search_layouts(base, o);
  REQUIRE(!fixed.top.empty());
  for (const Layout& l : fixed.top) {
    CHECK(l.tp == 2);
    CHECK((l.zero == 1 || l.zero == 3));
  }
  // By memory: the first has the least peak of all that fit.
  o.space = {};
  o.objective = Objective::memory;
  const SearchResult lean = search_layouts(base, o);
  REQUIRE(!lean.top.empty());
  CHECK(lean.top.front().peak_bytes == lean.pareto.front().peak_bytes);
}

TEST_CASE("search on the command line: table, JSON, CSV, constraints and the inverse question",
          "[search][cli]") {
  const std::string plan = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  const auto json = test::run_cli(
      {"search", plan, "--format", "json", "--top", "3", "--jobs", "2", "--fix", "tp=2"});
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["search"]["enumerated"].get<int>() > 0);
  REQUIRE(j["top"].size() == 3);
  for (const auto& l : j["top"]) CHECK(l["tp"] == 2);
  CHECK(j["top"][0]["step_s"].get<double>() <= j["top"][1]["step_s"].get<double>());
  const auto csv = test::run_cli({"search", plan, "--format", "csv", "--top", "2"});
  REQUIRE(csv.code == 0);
  CHECK(csv.out.rfind("rank,tp,pp,dp,cp,ep,zero,", 0) == 0);
  const auto table = test::run_cli({"search", plan, "--top", "2"});
  REQUIRE(table.code == 0);
  CHECK(table.out.find("Pareto front, peak memory against step time") != std::string::npos);
  CHECK(table.out.find("Why the best win:") != std::string::npos);
  CHECK(table.out.find("trainledger plan ... --set parallel.tp=") != std::string::npos);
  // Bad constraints are usage errors.
  const auto bad = test::run_cli({"search", plan, "--fix", "tensor=2"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("unknown key \"tensor\"") != std::string::npos);
  const auto bad_value = test::run_cli({"search", plan, "--allow", "recompute=most"});
  CHECK(bad_value.code == 2);
  // The fewest GPUs on which Llama 3.1 70B trains at all with this batch, then a target.
  const auto fewest = test::run_cli({"search", "--set", "model.preset=\"llama-3.1-70b\"",
                                     "--fewest", "--top", "1", "--format", "json"});
  REQUIRE(fewest.code == 0);
  const auto f = nlohmann::json::parse(fewest.out);
  const int gpus = f["search"]["gpus"].get<int>();
  CHECK(gpus > 1);
  // One node fewer does not fit.
  if (gpus > 8) {
    const auto fewer = test::run_cli({"search", "--set", "model.preset=\"llama-3.1-70b\"", "--gpus",
                                      std::to_string(gpus - 8), "--format", "json"});
    CHECK(fewer.code == 1);
  }
}

TEST_CASE("search --fewest with a time to train is the step time it implies", "[search]") {
  // 100B tokens in batches of 256 × 8192 = 2,097,152 tokens: 47,683.72 steps; 7 days is
  // 604,800 s, a step of 12.683575296 s.
  const std::vector<std::string> base = {"search",
                                         "--set",
                                         "model.preset=\"llama-3.1-8b\"",
                                         "--set",
                                         "training.tokens=\"100B\"",
                                         "--fewest",
                                         "--top",
                                         "1",
                                         "--format",
                                         "json",
                                         "--nodes",
                                         "64"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_cli(args);
  };
  const auto train = with({"--target-time-to-train", "7d"});
  const auto step = with({"--target-step-time", "12.683575296s"});
  REQUIRE(train.code == 0);
  REQUIRE(step.code == 0);
  const auto t = nlohmann::json::parse(train.out);
  const auto s = nlohmann::json::parse(step.out);
  CHECK(t["search"]["gpus"] == s["search"]["gpus"]);
  const double best = t["top"][0]["step_s"].get<double>();
  INFO(t.dump());
  // The fastest fitting layout reaches the target; on one node fewer none does (or none fits).
  const double target = 604800.0 * 256 * 8192 / 1e11;
  double fastest = best;
  for (const auto& p : t["pareto"]) fastest = std::min(fastest, p["step_s"].get<double>());
  CHECK(fastest <= target);
  const int gpus = t["search"]["gpus"].get<int>();
  REQUIRE(gpus > 8);
  const auto fewer = test::run_cli({"search", "--set", "model.preset=\"llama-3.1-8b\"", "--gpus",
                                    std::to_string(gpus - 8), "--format", "json"});
  if (fewer.code == 0) {
    double fewer_fastest = 1e300;
    const auto fj = nlohmann::json::parse(fewer.out);
    for (const auto& p : fj["pareto"])
      fewer_fastest = std::min(fewer_fastest, p["step_s"].get<double>());
    CHECK(fewer_fastest > target);
  }
  // Without training.tokens there is nothing to time; a target needs --fewest; not both.
  CHECK(test::run_cli({"search", "--fewest", "--target-time-to-train", "10d"}).code == 2);
  CHECK(test::run_cli({"search", "--target-step-time", "2s"}).code == 2);
  CHECK(with({"--target-step-time", "2s", "--target-time-to-train", "10d"}).code == 2);
}

TEST_CASE("interleaving needs at least pp micro-batches per step, in plans and in search",
          "[search][rules]") {
  // Megatron-Core (pipeline_parallel/schedules.py): microbatch_group_size_per_vp_stage lies in
  // [pp, m], so fewer micro-batches than stages are refused; one micro-batch cannot beat p·T.
  const auto r = test::run_cli({"plan", "--set", "parallel.schedule=interleaved", "--set",
                                "parallel.virtual_stages=2", "--set", "training.global_batch=4"});
  CHECK(r.code == 2);
  CHECK(r.err.find("needs at least pp (4) micro-batches per step, this plan has 2") !=
        std::string::npos);
  // With as many micro-batches as stages it is accepted.
  CHECK(test::run_cli({"plan", "--set", "parallel.schedule=interleaved", "--set",
                       "parallel.virtual_stages=2", "--set", "training.global_batch=8"})
            .code == 0);
  // The search never proposes it.
  const PlanInput base = test::load_text(R"([model]
preset = "llama-3.1-8b"
[training]
seq_len = 4096
global_batch = 16
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 2
)")
                             .input;
  SearchOptions o;
  o.top = 1000000;
  const SearchResult found = search_layouts(base, o);
  REQUIRE(!found.top.empty());
  for (const Layout& l : found.top)
    if (l.schedule == Schedule::interleaved) CHECK(l.grad_accum >= l.pp);
}

TEST_CASE(
    "search interleaves uneven stages and any virtual-stage count, one stage has no "
    "schedule",
    "[search]") {
  // Llama 3 405B's own layout (Dubey et al. 2024 §3.3.2): tp 8, pp 16, 126 layers as
  // [7, 8 × 14, 7] (the first and last stage one layer short). 8 virtual stages split every
  // stage, the edge ones counting the embedding or the loss as a layer (Megatron-Core's
  // account_for_*_in_pipeline_split); the search used to stop at 4 and at stages that divide.
  // The paper's layout as the time reference set holds it.
  const PlanInput base =
      config::load_plan_file(test::source_path("tests/reference/time/llama3-405b-8192gpu.toml"), {})
          .input;
  SearchOptions o;
  o.top = 1000000;
  o.space.tp = {8};
  o.space.pp = {16};
  o.space.cp = {1};
  const SearchResult found = search_layouts(base, o);
  REQUIRE(!found.top.empty());
  std::set<int> counts;
  for (const Layout& l : found.top)
    if (l.schedule == Schedule::interleaved) {
      counts.insert(l.virtual_stages);
      CHECK(l.stage_layers == base.parallel.stage_layers);
    }
  CHECK(counts == std::set<int>{2, 4, 8});
  const Layout& best = found.top.front();
  CHECK(best.schedule == Schedule::interleaved);
  CHECK(best.virtual_stages == 8);
  // The layout it proposes is a plan the rules accept, and its time is the plan's.
  const PlanResult again = test::plan_checked(with_layout(base, best));
  CHECK(value_of(again.time, ItemId::time_step) == best.step_s);
  // Asked for zb-h1 only, a search of one node has no one-stage layouts labelled zb-h1.
  SearchOptions zb;
  zb.top = 1000000;
  zb.space.schedule = {Schedule::zb_h1};
  PlanInput node = base;
  node.cluster.nodes = 1;
  node.parallel.pp = 1;
  node.parallel.dp = 1;
  node.parallel.stage_layers.clear();
  for (const Layout& l : search_layouts(node, zb).top) {
    CHECK(l.pp > 1);
    CHECK(l.schedule == Schedule::zb_h1);
  }
}

TEST_CASE("search tries TP communication behind the GEMMs, and --fix holds it", "[search]") {
  // The default plan (70B, tp 8) spends a fifth of its step in exposed TP traffic: the best
  // layout overlaps it (Transformer Engine's userbuffers); a stack without it fixes it off.
  const auto on = test::run_cli({"search", "--top", "3", "--format", "json", "--no-progress"});
  REQUIRE(on.code == 0);
  const auto j = nlohmann::json::parse(on.out);
  REQUIRE(!j["top"].empty());
  CHECK(j["top"][0]["overlap_tp"] == true);
  const auto off = test::run_cli(
      {"search", "--top", "3", "--format", "json", "--no-progress", "--fix", "overlap_tp=false"});
  REQUIRE(off.code == 0);
  const auto k = nlohmann::json::parse(off.out);
  for (const auto& l : k["top"]) CHECK(l["overlap_tp"] == false);
  CHECK(k["top"][0]["step_s"].get<double>() > j["top"][0]["step_s"].get<double>());
  // A value that is not true or false is a usage error.
  CHECK(test::run_cli({"search", "--fix", "ovl=maybe"}).code == 2);
}

TEST_CASE("search tries offload when nothing fits the GPUs alone, and --fix holds it", "[search]") {
  // Explicit offload values: the best of separate plans to the bit, the offloaded ones too.
  SearchSpace offload;
  offload.zero = {1, 3};
  offload.recompute = {Recompute::full};
  offload.offload = {Offload::none, Offload::optimizer, Offload::optimizer_params};
  brute_force(k_small, offload);
  const PlanInput small = test::load_text(k_small).input;
  int optimizer = 0, params = 0;
  for (const Layout& l : enumerate_layouts(small, offload)) {
    // Only the rules' pairs: the optimizer's state from ZeRO-1 on, the parameters at ZeRO-3.
    CHECK((l.offload != Offload::optimizer_params || l.zero == 3));
    optimizer += l.offload == Offload::optimizer;
    params += l.offload == Offload::optimizer_params;
  }
  CHECK(optimizer > 0);
  CHECK(params > 0);
  // By default a plan that fits is searched without offload (it never shortens a step).
  const SearchResult plain = search_layouts(small, SearchOptions{});
  CHECK_FALSE(plain.offload_tried);
  for (const Layout& l : enumerate_layouts(small, SearchSpace{})) CHECK(l.offload == Offload::none);
  // Llama 3.1 70B on one node of 8 H100s: nothing fits the GPUs alone; with the optimizer's
  // state and the parameters on the host (ZeRO-3) it does.
  const auto one_node = test::run_cli(
      {"search", "--set", "cluster.nodes=1", "--top", "3", "--format", "json", "--no-progress"});
  REQUIRE(one_node.code == 0);
  const auto j = nlohmann::json::parse(one_node.out);
  CHECK(j["search"]["offload_tried"] == true);
  REQUIRE(!j["top"].empty());
  for (const auto& l : j["top"]) {
    CHECK(l["offload"] != "none");
    CHECK(l["time_s"]["offload"].get<double>() > 0);
  }
  const auto alone = test::run_cli({"search", "--set", "cluster.nodes=1", "--fix", "offload=none",
                                    "--format", "json", "--no-progress"});
  CHECK(nlohmann::json::parse(alone.out)["top"].empty());
  const auto table =
      test::run_cli({"search", "--set", "cluster.nodes=1", "--top", "1", "--no-progress"});
  CHECK(table.out.find("no layout fits with the plan's parallel.offload") != std::string::npos);
  CHECK(table.out.find("+ host offload") != std::string::npos);
  // A value that is no offload is a usage error.
  const auto bad = test::run_cli({"search", "--allow", "offload=none,disk"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("offload: \"disk\" is not none, optimizer or optimizer+params") !=
        std::string::npos);
}
