// RL post-training runs against their published step times (tests/reference/rl.json lists the
// sources with their split; tests/reference/rl/<source>/cases.json holds the cases, each plan
// beside it). Every run ran, so every phase of every plan must fit; the step time is scored
// where the source gives the mean lengths (docs/accuracy.md#rl has the table and what is
// missing). The bounds below hold today's numbers so that a change that moves them is seen;
// they are not the goal.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "helpers.hpp"
#include "trainledger/config.hpp"
#include "trainledger/items.hpp"

using namespace trainledger;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

TEST_CASE("RL step time and fit against published runs, by source", "[reference][rl]") {
  const auto index =
      nlohmann::json::parse(test::read_file(test::source_path("tests/reference/rl.json")));
  std::map<std::string, std::vector<double>> errors;  // by split and policy
  std::set<std::string> frameworks;
  int cases = 0, fit = 0;
  for (const auto& src : index["sources"]) {
    const std::string dir = src["dir"], split = src["split"];
    REQUIRE((split == "dev" || split == "held-back"));
    frameworks.insert(src["framework"].get<std::string>());
    const auto list = nlohmann::json::parse(
        test::read_file(test::source_path("tests/reference/rl/" + dir + "/cases.json")));
    for (const auto& c : list) {
      const std::string plan = c["plan"];
      INFO(dir << "/" << plan);
      REQUIRE(!c["source"].get<std::string>().empty());
      const config::LoadedPlan loaded =
          config::load_plan_file(test::source_path("tests/reference/rl/" + dir + "/" + plan), {});
      const PlanResult p = test::plan_checked(loaded.input);  // the invariant checker
      REQUIRE(p.rl.present);
      ++cases;
      if (p.verdict.rl_fits) ++fit;
      // The dev source's runs all ran: each of their phases fits.
      if (split == "dev") CHECK(p.verdict.rl_fits);
      if (!c["scored_time"].get<bool>()) continue;
      double step = 0;
      for (const LineItem& i : p.rl.time)
        if (i.item == ItemId::rl_time_step) step = i.value;
      const double measured = c["measured"]["step_s"];
      const double e = (step - measured) / measured;
      errors[split].push_back(e);
      errors[split + " " + c["policy"].get<std::string>()].push_back(e);
    }
  }
  CHECK(frameworks.size() >= 3);
  CHECK(cases >= 60);
  // Today: 57 of 60 runs fit in every phase; three verl runs with 20k-28k-token responses do
  // not (docs/accuracy.md#rl).
  CHECK(fit >= 57);
  // Today's step errors (docs/accuracy.md#rl: still optimistic on colocated on-policy steps).
  // Off-policy dev runs within 10 % at the median; the dev set within 10 % signed; the
  // held-back sources within 20 % at the median, and not optimistic past 20 % nor pessimistic
  // past 10 %: the engines across nodes, the host work between engine steps and the trainer's
  // offload through pageable memory took them from -51 % to -14 % on the first 7 runs; with the
  // NeMo-RL GB200 and v0.6 tables taken whole (18 runs) they were at 19.7 % and -11.9 %. The
  // GB200 racks' NVLink domain (cluster.nvlink_domain) moved the MoE runs' all-to-all off the
  // network and showed how optimistic the RL MoE phases are there as on H100 (Qwen3-30B-A3B
  // -14 % -> -49 %): 23.7 %, -19.6 %. With NeMo-RL's v0.4 table (27 runs): 20.2 %, -17.5 %
  // (docs/accuracy.md#rl).
  REQUIRE(errors["dev"].size() == 11);
  CHECK(std::fabs(median(errors["dev off"])) < 0.10);
  CHECK(std::fabs(median(errors["dev"])) < 0.10);
  CHECK(median(errors["dev on"]) > -0.15);
  REQUIRE(errors["held-back"].size() == 27);
  std::vector<double> held_abs;
  for (double e : errors["held-back"]) held_abs.push_back(std::fabs(e));
  CHECK(median(held_abs) < 0.22);
  CHECK(median(errors["held-back"]) > -0.19);
  CHECK(median(errors["held-back"]) < 0.10);
}
