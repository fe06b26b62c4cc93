// The RL step's timeline (docs/rl.md#step-time) and its charts (docs/rl.md#charts): parts in
// the frameworks' order, the overlap of a split off-policy step, the exposed parts summing to
// the step; the SVG marks, the JSON and the Mermaid gantt carrying the same numbers.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <regex>
#include <string>

#include "helpers.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

using namespace trainledger;
using test::plan_text;
using test::read_file;
using test::run_cli;
using test::source_path;

namespace {

const std::string k_grpo = source_path("configs/plans/grpo-llama-3.1-8b.toml");
const std::string k_ppo = source_path("configs/plans/ppo-qwen2.5-7b-split.toml");

double part(const PlanResult& p, ItemId id) {
  for (const LineItem& i : p.rl.time)
    if (i.item == id) return i.value;
  return 0;
}

double exposed_sum(const PlanResult& p) {
  double e = 0;
  for (const RlSpan& sp : p.rl.timeline) e += sp.exposed_s;
  return e;
}

}  // namespace

TEST_CASE("RL timeline: colocated parts one after another, from the weight sync to training",
          "[rl][report]") {
  const PlanResult p = plan_text(read_file(k_grpo));
  REQUIRE(p.rl.present);
  const double step = part(p, ItemId::rl_time_step);
  REQUIRE(step > 0);
  REQUIRE(p.rl.timeline.size() >= 4);
  // One lane, no gaps, in the frameworks' order: sync, prefill, decode, scoring, training.
  double at = 0;
  for (const RlSpan& sp : p.rl.timeline) {
    CHECK(sp.lane == "all");
    CHECK(sp.start_s == Approx(at));
    CHECK(sp.exposed_s == Approx(sp.end_s - sp.start_s));
    CHECK_FALSE(sp.next_step);
    at = sp.end_s;
  }
  CHECK(at == Approx(step));
  CHECK(p.rl.timeline.front().item == ItemId::rl_time_weight_sync);
  std::vector<ItemId> order;
  for (const RlSpan& sp : p.rl.timeline) order.push_back(sp.item);
  const auto pos = [&](ItemId id) { return std::find(order.begin(), order.end(), id); };
  CHECK(pos(ItemId::rl_time_decode) < pos(ItemId::rl_time_log_probs));
  CHECK(pos(ItemId::rl_time_log_probs) < pos(ItemId::rl_time_training));
  CHECK(exposed_sum(p) == Approx(step));
}

TEST_CASE("RL timeline: a split off-policy step overlaps the shorter pool's work", "[rl][report]") {
  const PlanResult off = plan_text(read_file(k_ppo));
  REQUIRE(off.rl.present);
  REQUIRE(off.input.rl.off_policy);
  const double gen = part(off, ItemId::rl_time_prefill) + part(off, ItemId::rl_time_decode);
  double train = 0;
  for (ItemId id : {ItemId::rl_time_log_probs, ItemId::rl_time_reference, ItemId::rl_time_values,
                    ItemId::rl_time_training, ItemId::rl_time_critic_training})
    train += part(off, id);
  const double step = part(off, ItemId::rl_time_step);
  CHECK(exposed_sum(off) == Approx(step));
  const bool generation_longer = gen >= train;
  for (const RlSpan& sp : off.rl.timeline) {
    INFO(info(sp.item).name << " on " << sp.lane);
    if (sp.item == ItemId::rl_time_weight_sync) {
      // After both pools are done, on both; counted once.
      CHECK(sp.start_s == Approx(std::max(gen, train)));
      CHECK(sp.exposed_s == Approx(sp.lane == "training" ? sp.end_s - sp.start_s : 0.0));
    } else if (sp.lane == "rollout") {
      CHECK(sp.next_step);
      CHECK(sp.start_s < gen);
      CHECK(sp.exposed_s == Approx(generation_longer ? sp.end_s - sp.start_s : 0.0));
    } else {
      CHECK(sp.lane == "training");
      CHECK_FALSE(sp.next_step);
      CHECK(sp.exposed_s == Approx(generation_longer ? 0.0 : sp.end_s - sp.start_s));
    }
  }
  // On-policy, the trainers wait for the samples: the step is the sum and training starts
  // where generation ends.
  const PlanResult on = plan_text(read_file(k_ppo), {"rl.off_policy=false"});
  double first_training = -1;
  for (const RlSpan& sp : on.rl.timeline) {
    CHECK_FALSE(sp.next_step);
    if (sp.lane == "training" && first_training < 0) first_training = sp.start_s;
  }
  const double gen_on = part(on, ItemId::rl_time_prefill) + part(on, ItemId::rl_time_decode);
  CHECK(first_training == Approx(gen_on));
  CHECK(exposed_sum(on) == Approx(part(on, ItemId::rl_time_step)));
  CHECK(part(on, ItemId::rl_time_step) > part(off, ItemId::rl_time_step));
}

TEST_CASE("RL charts: the marks carry the timeline's and the phases' numbers",
          "[rl][report][charts]") {
  for (const std::string& plan : {k_grpo, k_ppo}) {
    INFO(plan);
    const auto json_r = run_cli({"plan", plan, "--format", "json"});
    REQUIRE(json_r.code == 0);
    const nlohmann::json j = nlohmann::json::parse(json_r.out);
    const auto& tl = j["rl"]["timeline"];
    REQUIRE(tl.size() > 0);
    const auto svg = run_cli({"plan", plan, "--format", "svg", "--chart", "rl-timeline"});
    REQUIRE(svg.code == 0);
    const auto spans = test::svg_marks(svg.out, "rl-span");
    REQUIRE(spans.size() == tl.size());
    // Drawn lane by lane: each mark is the JSON's span of its item on its lane.
    std::map<std::string, nlohmann::json> by_key;
    for (const auto& sp : tl)
      by_key[sp["item"].get<std::string>() + "@" + sp["lane"].get<std::string>()] = sp;
    REQUIRE(by_key.size() == tl.size());
    for (const auto& m : spans) {
      const std::string key = m.at("data-item") + "@" + m.at("data-lane");
      INFO(key);
      REQUIRE(by_key.count(key) == 1);
      const nlohmann::json& sp = by_key[key];
      CHECK(std::stod(m.at("data-start")) == Approx(sp["start_s"].get<double>()));
      CHECK(std::stod(m.at("data-end")) == Approx(sp["end_s"].get<double>()));
      CHECK(std::stod(m.at("data-exposed")) == Approx(sp["exposed_s"].get<double>()));
    }
    const auto mem = run_cli({"plan", plan, "--format", "svg", "--chart", "rl-memory"});
    REQUIRE(mem.code == 0);
    const auto bars = test::svg_marks(mem.out, "rl-mem");
    std::map<std::string, double> drawn;
    for (const auto& b : bars)
      drawn[b.at("data-phase") + "/" + b.at("data-pool")] += std::stod(b.at("data-bytes"));
    REQUIRE(drawn.size() == j["rl"]["phases"].size());
    for (const auto& ph : j["rl"]["phases"]) {
      const std::string key = ph["name"].get<std::string>() + "/" + ph["pool"].get<std::string>();
      // Each phase's rects stack to its peak (rounded to whole bytes in the attributes).
      CHECK(drawn[key] == Approx(ph["peak_bytes"].get<double>()).epsilon(1e-6));
    }
    // The HTML report carries both, the Markdown report the gantt.
    const auto html = run_cli({"plan", plan, "--format", "html"});
    REQUIRE(html.code == 0);
    CHECK(html.out.find("id=\"chart-rl-timeline\"") != std::string::npos);
    CHECK(html.out.find("id=\"chart-rl-memory\"") != std::string::npos);
    const auto md = run_cli({"plan", plan, "--format", "markdown"});
    REQUIRE(md.code == 0);
    CHECK(md.out.find("```mermaid\ngantt\n  title One RL step") != std::string::npos);
  }
  // A plan without [rl]: no RL section in HTML; the SVG says why, and exits 0.
  const auto html = run_cli({"plan", "--format", "html"});
  REQUIRE(html.code == 0);
  CHECK(html.out.find("chart-rl-timeline") == std::string::npos);
  const auto svg = run_cli({"plan", "--format", "svg", "--chart", "rl-memory"});
  CHECK(svg.code == 0);
  CHECK(svg.out.find("not an RL plan") != std::string::npos);
}

TEST_CASE("RL charts: no text overflows its SVG in headless Chromium", "[rl][charts][chromium]") {
  const std::string probe = test::text_probe();
  for (const std::string& plan : {k_grpo, k_ppo}) {
    const auto html = run_cli({"plan", plan, "--format", "html"});
    REQUIRE(html.code == 0);
    std::string page = html.out;
    page.insert(page.find("</body>"), probe);
    const std::optional<std::string> dom = test::browser_dom("rl-overflow", page);
    if (!dom) {
      WARN("skipped: chromium is not installed (scripts/dev test installs it)");
      return;
    }
    const std::optional<std::string> found = test::attribute(*dom, "data-overflow");
    REQUIRE(found);  // the probe ran
    INFO(plan);
    CHECK(*found == "0 ");
  }
}

TEST_CASE("the invariant checker holds the RL timeline to the step", "[rl][report]") {
  PlanResult p = plan_text(read_file(k_ppo));
  REQUIRE(check_invariants(p).empty());
  SECTION("an exposed part more than the step waits for") {
    p.rl.timeline.front().exposed_s += 1.0;
    const auto errors = check_invariants(p);
    REQUIRE_FALSE(errors.empty());
    CHECK_THAT(errors.front(), Catch::Contains("rl timeline"));
  }
  SECTION("a part past the step's end") {
    p.rl.timeline.back().end_s += 10.0;
    const auto errors = check_invariants(p);
    REQUIRE_FALSE(errors.empty());
    CHECK_THAT(errors.front(), Catch::Contains("outside the step"));
  }
}
