// Bands on the peak and the step time (docs/accuracy.md#bands): the table they come from is the
// reference set's residuals under the current planner, they hold the measured cases of sources
// they were not built from, and the gate, --max and search use their upper end.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "bands.hpp"
#include "helpers.hpp"
#include "trainledger/config.hpp"
#include "trainledger/layout_search.hpp"

using namespace trainledger;

namespace {

const std::string k_fsdp = "configs/plans/llama-3.1-8b-fsdp.toml";

double time_value(const PlanResult& p, const std::string& id) {
  for (const LineItem& i : p.time)
    if (i.id == id) return i.value;
  FAIL("no time item " << id);
  return 0;
}

PlanResult reference_plan(const std::string& relative) {
  const auto loaded = config::load_plan_file(test::source_path("tests/reference/" + relative), {});
  return test::plan_checked(loaded.input);
}

}  // namespace

TEST_CASE("the band table is the reference set's residuals under this planner", "[bands]") {
  // Every case of tests/reference, re-planned: its ratio measured / predicted must be the one
  // the table holds (scripts/bands --write regenerates it after a mechanism changes).
  std::map<std::string, double> expected;
  const auto index =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/memory.json")));
  for (const auto& src : index["sources"]) {
    const std::string dir = src["dir"];
    const auto cases = nlohmann::json::parse(
        test::read_file(test::source_path("tests/reference/memory/" + dir + "/cases.json")));
    for (const auto& c : cases["cases"]) {
      const std::string rel = "memory/" + dir + "/" + c["plan"].get<std::string>();
      const PlanResult p = reference_plan(rel);
      const double got = test::predicted_memory(
          p, c["kind"], c.contains("stage") ? c["stage"].get<std::string>() : "");
      expected["memory " + rel + " (" + c["kind"].get<std::string>() + ")"] =
          c["measured"].get<double>() * test::unit_bytes(c["unit"]) / got;
    }
  }
  const auto groups =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/time.json")));
  for (const auto& [group, cases] : groups.items()) {
    for (const auto& c : cases) {
      const std::string rel = c["plan"];
      const PlanResult p = reference_plan(rel);
      const double got = time_value(p, c["quantity"]);
      const double measured = c["measured"];
      expected["time " + rel + " (" + c["quantity"].get<std::string>() + ")"] =
          c["quantity"] == "time.step" ? measured / got : got / measured;
    }
  }
  // MoE pre-training rows of both MoE sources (tokens/s per GPU) and the RL runs whose step
  // time is scored.
  for (const char* folder : {"time-moe", "time-moe-mcore-modelzoo"}) {
    const auto moe = nlohmann::json::parse(test::read_file(
        test::source_path(std::string("tests/reference/") + folder + "/cases.json")));
    for (const auto& c : moe) {
      const std::string rel = std::string(folder) + "/" + c["plan"].get<std::string>();
      const PlanResult p = reference_plan(rel);
      expected["time " + rel + " (throughput.tokens_per_s_per_gpu)"] =
          time_value(p, "throughput.tokens_per_s_per_gpu") /
          c["measured_tokens_per_s_per_gpu"].get<double>();
    }
  }
  const auto rl =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/rl.json")));
  for (const auto& src : rl["sources"]) {
    const std::string dir = "rl/" + src["dir"].get<std::string>();
    const auto cases = nlohmann::json::parse(
        test::read_file(test::source_path("tests/reference/" + dir + "/cases.json")));
    for (const auto& c : cases) {
      if (!c["scored_time"].get<bool>()) continue;
      const std::string rel = dir + "/" + c["plan"].get<std::string>();
      const PlanResult p = reference_plan(rel);
      REQUIRE(p.rl.present);
      expected["rl_step " + rel + " (rl.time.step)"] =
          c["measured"]["step_s"].get<double>() / value_of(p.rl.time, ItemId::rl_time_step);
    }
  }
  std::set<std::string> seen;
  for (const Residual& r : residuals()) {
    const std::string key = std::string(r.quantity == Quantity::memory ? "memory "
                                        : r.quantity == Quantity::time ? "time "
                                                                       : "rl_step ") +
                            r.plan;
    INFO(key << " (scripts/bands --write regenerates src/core/band_data.cpp)");
    REQUIRE(expected.count(key) == 1);
    CHECK(r.ratio == Approx(expected[key]).epsilon(1e-5));
    seen.insert(key);
  }
  CHECK(seen.size() == expected.size());
}

TEST_CASE("the bands hold the cases of sources they were not built from", "[bands]") {
  // Leave one source out: each case against the band of its family without any case of its
  // own source (a family needs cases of two sources: held out, a source must not leave its
  // family to one other source). The 90 % band must hold at least 85 % of them, leave at most
  // 7.5 % above it (under-predicted: the costly side) and be at most 25 % wide on either side
  // at the median; docs/accuracy.md reports the numbers; 5 % above is the goal. Memory: 10 of 136
  // above (7.4 %). Six of the nine above were torchtitan's Llama 3.1 405B pipeline rows until the
  // last stage's kept logits were modelled; two remain, and the band, no longer widened by them
  // (half-width 20.8 -> 17.1 %), now leaves six Megatron-SWIFT rows (MoE, CPU offload) and one
  // llama-recipes row above it: the Megatron-Core MoE memory is the open mechanism. Time (dense
  // runs): 8 of 68 above (12 %), seven of them MegaScale's Megatron-LM rows at 512 to 12,288
  // GPUs, which no other source's band reaches (1.09-1.17 against the megatron family's 1.08
  // without them): the cases of every other source keep the bounds, and with its rows time
  // stays at 80 % inside and 12 % above or better until the loss at scale is modelled. Its width
  // is 30 % at the median: LLM Foundry's 20 rows, held out, leave the pytorch family to
  // torchtitan alone, so they take every stack's dense band (0.46-1.17, Llama 3 405B's rows
  // at its low end); with one source allowed they took torchtitan's (0.95-1.12), 79 % inside
  // and 15 % above. The MoE pre-training rows are two sources, Megatron-Bridge's tables
  // (time-moe, 12) and the Megatron-Core MoE model zoo (16): each left out takes every case's
  // band. 17 of 28 inside, 8 above (seven of time-moe's Qwen3-30B-A3B rows, 1.22-2.17 times
  // slower than planned, above the model zoo's 0.67-1.17 now that its rows are planned with
  // their expert tensor-parallel size and recompute modules; and the model zoo's 4k tp 4 row,
  // 1.50), counted apart. Before parallel.etp the model zoo's rows lay 20-56 % below and 6 were
  // inside; with etp and without the recompute modules 20 were (the zoo's optimism covered
  // time-moe's).
  for (Quantity q : {Quantity::memory, Quantity::time}) {
    struct Count {
      int n = 0, inside = 0, above = 0;
    } rest, scale, moe;
    std::vector<double> half;
    for (const Residual& r : residuals()) {
      if (r.quantity != q) continue;
      std::string name;
      const auto [lo, hi] =
          ratio_range(family_ratios(q, r.stack, r.moe, r.multi_gpu, r.source, name), 0.9);
      const bool moe_time = q == Quantity::time && r.moe;
      Count& c = moe_time ? moe : std::string(r.source) == "megascale" ? scale : rest;
      ++c.n;
      c.inside += lo <= r.ratio && r.ratio <= hi;
      c.above += r.ratio > hi;
      if (!moe_time) half.push_back((hi - lo) / 2);
    }
    std::sort(half.begin(), half.end());
    INFO((q == Quantity::memory ? "memory" : "time")
         << ": " << rest.n << " cases, inside " << rest.inside << ", above " << rest.above
         << ", median half-width " << half[half.size() / 2] << "; MegaScale's " << scale.n
         << ", inside " << scale.inside << ", above " << scale.above << "; MoE time " << moe.n
         << ", inside " << moe.inside << ", above " << moe.above);
    CHECK(rest.n >= (q == Quantity::memory ? 100 : 50));
    CHECK(rest.inside >= 0.85 * rest.n);
    CHECK(rest.above <= 0.075 * rest.n);
    CHECK(rest.inside + scale.inside >= 0.80 * (rest.n + scale.n));
    CHECK(rest.above + scale.above <= 0.12 * (rest.n + scale.n));
    CHECK(half[half.size() / 2] <= (q == Quantity::memory ? 0.25 : 0.31));
    if (q == Quantity::time) {
      CHECK(moe.n >= 28);
      CHECK(moe.inside >= 17);
      CHECK(moe.above <= 8);
    }
  }
  // RL steps: 38 scored runs of five sources; each held out of its family (RL · dense or
  // RL · MoE, whole ranges below 39 runs), 36 inside, 1 above (NeMo-RL v0.5's DAPO run, whose
  // dynamic sampling the plan does not model). The band is wide because the errors are.
  int n = 0, inside = 0, above = 0;
  for (const Residual& r : residuals()) {
    if (r.quantity != Quantity::rl_step) continue;
    std::string name;
    const auto [lo, hi] = ratio_range(
        family_ratios(Quantity::rl_step, r.stack, r.moe, r.multi_gpu, r.source, name), 0.9);
    CHECK(name.find("RL") != std::string::npos);
    ++n;
    inside += lo <= r.ratio && r.ratio <= hi;
    above += r.ratio > hi;
  }
  INFO("RL: " << n << " runs, inside " << inside << ", above " << above);
  CHECK(n >= 38);
  CHECK(inside >= 0.9 * n);
  CHECK(above <= 0.05 * n);
}

TEST_CASE("an RL plan's step has the RL runs' band, a MoE plan's step the MoE rows'",
          "[bands][rl]") {
  const PlanResult p =
      test::plan_text(test::read_file(test::source_path("configs/plans/grpo-llama-3.1-8b.toml")));
  REQUIRE(p.rl.present);
  const Band& b = p.rl.step_band;
  REQUIRE(b.cases >= 12);
  CHECK(b.family == "RL · dense");
  const double step = value_of(p.rl.time, ItemId::rl_time_step);
  const double tput = value_of(p.rl.time, ItemId::rl_tokens_per_s_per_gpu);
  CHECK(b.low <= step);
  CHECK(b.high >= step);
  CHECK(b.high == Approx(step * b.ratio_high));
  // The dense RL runs are predicted up to 35 % short: the upper end is at least 1.3x the estimate.
  CHECK(b.ratio_high > 1.3);
  CHECK(p.rl.throughput_band.low == Approx(tput * step / b.high));
  CHECK(p.rl.throughput_band.high == Approx(tput * step / b.low));
  // The training phase's own step keeps the training family's band.
  CHECK(p.step_band.family == "pytorch · dense");
  // Shown in the table, Markdown and JSON; --confidence off drops it.
  const std::string plan = "configs/plans/grpo-llama-3.1-8b.toml";
  const auto table = test::run_cli({"plan", plan});
  CHECK(table.out.find("90 % band: RL step") != std::string::npos);
  CHECK(table.out.find("family RL · dense") != std::string::npos);
  const auto md = test::run_cli({"plan", plan, "--format", "markdown"});
  CHECK(md.out.find("90 % band: RL step") != std::string::npos);
  const auto j = nlohmann::json::parse(test::run_cli({"plan", plan, "--format", "json"}).out);
  int banded = 0;
  for (const auto& i : j["rl"]["time"]["items"])
    if (i["id"] == "rl.time.step" || i["id"] == "rl.tokens_per_s_per_gpu") {
      REQUIRE(i.contains("band"));
      CHECK(i["band"][0].get<double>() <= i["value"].get<double>());
      CHECK(i["band"][1].get<double>() >= i["value"].get<double>());
      CHECK(i["band_family"] == "RL · dense");
      ++banded;
    }
  CHECK(banded == 2);
  const auto off = test::run_cli({"plan", plan, "--confidence", "off"});
  CHECK(off.out.find("band: RL step") == std::string::npos);
  // A MoE RL run (NeMo-RL's Qwen3-30B-A3B) takes the MoE RL runs' band; a MoE pre-training plan
  // the Megatron MoE rows'.
  const PlanResult m =
      reference_plan("rl/nemo-rl-v0.6-h100/nemorl-v0.6-h100-qwen3-30b-a3b-onpolicy-32gpu.toml");
  CHECK(m.rl.step_band.family == "RL · MoE");
  CHECK(m.rl.step_band.ratio_high > 2);
  const PlanResult t = reference_plan("time-moe/mb-25.09-qwen3-30b-a3b-h100-fp8-cs-16g.toml");
  CHECK(t.step_band.family == "megatron · MoE");
  CHECK(t.step_band.cases >= 12);
}

TEST_CASE("a band holds its estimate, widens with the confidence, and narrows when measured",
          "[bands]") {
  const PlanResult p = test::plan_text(test::read_file(test::source_path(k_fsdp)));
  const Band& b = p.verdict.peak_band;
  REQUIRE(b.cases > 0);
  CHECK(b.confidence == 0.9);
  CHECK(b.family == "dense · multi-GPU");
  CHECK(b.low <= p.verdict.peak_bytes);
  CHECK(b.high >= p.verdict.peak_bytes);
  CHECK(b.high == Approx(p.verdict.peak_bytes * b.ratio_high));
  PlanResult wide = p;
  apply_bands(wide, 0.98);
  CHECK(wide.verdict.peak_band.high >= b.high);
  CHECK(wide.verdict.peak_band.low <= b.low);
  PlanResult narrow = p;
  apply_bands(narrow, 0.6);
  CHECK(narrow.verdict.peak_band.high <= b.high);
  PlanResult off = p;
  apply_bands(off, 0);
  CHECK(off.verdict.peak_band.cases == 0);
  CHECK(off.verdict.band_fits == off.verdict.fits);
  // A measured part does not widen: mark the CUDA context measured (as a calibration profile
  // does) and the band shrinks by its share.
  PlanResult measured = p;
  double context = 0;
  for (StageMemory& st : measured.stages)
    for (LineItem& i : st.items)
      if (i.item == ItemId::overhead_cuda_context) {
        i.kind = Kind::measured;
        context = i.value;
      }
  REQUIRE(context > 0);
  apply_bands(measured, 0.9);
  CHECK(measured.verdict.peak_band.high ==
        Approx(context + (p.verdict.peak_bytes - context) * b.ratio_high));
  // The step time and the throughput: inverse ends.
  REQUIRE(p.step_band.cases > 0);
  const double step = value_of(p.time, ItemId::time_step);
  const double tput = value_of(p.time, ItemId::throughput_tokens_per_s_per_gpu);
  CHECK(p.step_band.low <= step);
  CHECK(p.step_band.high >= step);
  CHECK(p.throughput_band.low == Approx(tput * step / p.step_band.high));
  CHECK(p.throughput_band.high == Approx(tput * step / p.step_band.low));
}

TEST_CASE("check fails a plan whose band's upper end does not fit, --confidence off does not",
          "[bands][check]") {
  const PlanResult p = test::plan_text(test::read_file(test::source_path(k_fsdp)));
  const double estimate = p.verdict.peak_bytes, high = p.verdict.peak_band.high;
  // A capacity whose 90 % limit holds the estimate but not the band's upper end.
  const double capacity = (estimate + high) / 2 / 0.9;
  REQUIRE(estimate < 0.9 * capacity);
  REQUIRE(high > 0.9 * capacity);
  const std::string cap = fmt::format("{:.0f} B", capacity);
  const auto near = test::run_cli({"check", k_fsdp, "--capacity", cap});
  CHECK(near.code == 1);
  CHECK(near.out.find("NEAR") != std::string::npos);
  CHECK(near.out.find("fits at the estimate") != std::string::npos);
  CHECK(near.out.find("90 % band") != std::string::npos);
  const auto off = test::run_cli({"check", k_fsdp, "--capacity", cap, "--confidence", "off"});
  CHECK(off.code == 0);
  const auto roomy =
      test::run_cli({"check", k_fsdp, "--capacity", fmt::format("{:.0f} B", high / 0.9 * 1.01)});
  CHECK(roomy.code == 0);
  const auto j = nlohmann::json::parse(
      test::run_cli({"check", k_fsdp, "--capacity", cap, "--format", "json"}).out);
  CHECK(j["plans"][0]["status"] == "NEAR");
  CHECK(j["plans"][0]["confidence"] == 0.9);
  CHECK(j["plans"][0]["peak_band_bytes"][1].get<double>() == Approx(high).epsilon(1e-9));
  // plan's verdict says the same, and its JSON carries the band.
  const auto plan = test::run_cli(
      {"plan", k_fsdp, "--set", fmt::format("cluster.gpu_memory={:.0f} B", capacity)});
  CHECK(plan.out.find("Verdict: near: fits at the estimate, but not at its band's upper end") !=
        std::string::npos);
  const auto pj = nlohmann::json::parse(test::run_cli({"plan", k_fsdp, "--format", "json"}).out);
  CHECK(pj["verdict"]["confidence"] == 0.9);
  CHECK(pj["verdict"]["peak_band_bytes"].size() == 2);
  bool step_band = false;
  for (const auto& i : pj["time"]["items"])
    if (i["id"] == "time.step") step_band = i.contains("band") && i["band"].size() == 2;
  CHECK(step_band);
  // A confidence that is not one is refused, located at the option.
  const auto bad = test::run_cli({"check", k_fsdp, "--confidence", "30%"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--confidence") != std::string::npos);
}

TEST_CASE("plan --max and search hold the estimate to what the band leaves", "[bands][search]") {
  const std::string memory = "cluster.gpu_memory=160 GiB";
  const auto banded = nlohmann::json::parse(
      test::run_cli({"plan", k_fsdp, "--max", "seq_len", "--set", memory, "--format", "json"}).out);
  const auto bare =
      nlohmann::json::parse(test::run_cli({"plan", k_fsdp, "--max", "seq_len", "--set", memory,
                                           "--confidence", "off", "--format", "json"})
                                .out);
  CHECK(banded["search"]["value"].get<int>() < bare["search"]["value"].get<int>());
  CHECK(banded["search"]["estimate_limit_bytes"].get<double>() <
        banded["search"]["limit_bytes"].get<double>());
  CHECK(banded["verdict"]["peak_band_bytes"][1].get<double>() <=
        banded["search"]["limit_bytes"].get<double>());
  // search: every layout it keeps has its band's upper end within the limit.
  const PlanInput base = test::load_text(test::read_file(test::source_path(k_fsdp))).input;
  SearchOptions o;
  o.confidence = 0.9;
  o.top = 50;
  const SearchResult r = search_layouts(base, o);
  REQUIRE(r.band.cases > 0);
  CHECK(r.estimate_limit_bytes == Approx(r.limit_bytes / r.band.ratio_high));
  REQUIRE(!r.top.empty());
  for (const Layout& l : r.top)
    CHECK(l.peak_bytes * r.band.ratio_high <= r.limit_bytes * (1 + 1e-12));
  SearchOptions none = o;
  none.confidence = 0;
  CHECK(search_layouts(base, none).fitting >= r.fitting);
}
