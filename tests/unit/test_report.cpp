// Renderers: every format lists the same items; JSON follows the contract; units are explicit.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>

#include "helpers.hpp"
#include "trainledger/report.hpp"

using namespace trainledger;

namespace {

const char* const k_plans[] = {
    // a multi-stage plan, a count-only plan, a QLoRA plan, a MoE plan
    "[model]\npreset = \"llama-3.1-70b\"\n[parallel]\ntp = 8\npp = 4\nzero = 1\n[cluster]\n"
    "gpu = \"h100-sxm5-80gb\"\nnodes = 8\n",
    "[model]\nparams = 7e9\n[training]\noptimizer = \"adamw-8bit\"\n[cluster]\n"
    "gpu_memory = \"80 GiB\"\ngpus_per_node = 1\n",
    "[model]\npreset = \"llama-2-7b\"\n[training]\nfinetune = \"qlora\"\n[cluster]\n"
    "gpu = \"rtx-4090-24gb\"\ngpus_per_node = 1\n",
    "[model]\npreset = \"mixtral-8x7b\"\n[parallel]\nep = 8\nzero = 3\n[cluster]\n"
    "gpu = \"h100-sxm5-80gb\"\n",
};

std::set<std::string> ids_of(const PlanResult& p) {
  std::set<std::string> ids;
  for (const StageMemory& st : p.stages)
    for (const LineItem& i : st.items) ids.insert(i.id);
  return ids;
}

}  // namespace

TEST_CASE("table, markdown and JSON list the same items", "[report]") {
  for (const char* text : k_plans) {
    INFO(text);
    const config::LoadedPlan loaded = test::load_text(text);
    const PlanResult plan = test::plan_checked(loaded.input);
    const std::string table = report::render_table(plan, loaded.plan_source(), {});
    const std::string md = report::render_markdown(plan, loaded.plan_source(), {});
    const auto j = nlohmann::json::parse(report::render_json(plan, loaded.plan_source()));
    std::set<std::string> json_ids;
    for (const auto& st : j["memory"]["stages"])
      for (const auto& item : st["items"]) json_ids.insert(item["id"].get<std::string>());
    CHECK(json_ids == ids_of(plan));
    for (const std::string& id : ids_of(plan)) {
      CHECK(table.find("\n" + id + " ") != std::string::npos);
      CHECK(md.find("| `" + id + "` |") != std::string::npos);
    }
    for (const char* section : {"communication", "time", "reliability"}) {
      const auto& items = section == std::string("communication") ? plan.communication
                          : section == std::string("time")        ? plan.time
                                                                  : plan.reliability;
      REQUIRE(j[section]["items"].size() == items.size());
      for (const LineItem& i : items) {
        INFO(section << " " << i.id);
        CHECK(table.find("\n" + i.id + " ") != std::string::npos);
        CHECK(md.find("| `" + i.id + "` |") != std::string::npos);
      }
    }
  }
}

TEST_CASE("JSON: base units, integer bytes, stable key order, stage totals", "[report][json]") {
  const config::LoadedPlan loaded = test::load_text(k_plans[0]);
  const PlanResult plan = test::plan_checked(loaded.input);
  const auto j = nlohmann::ordered_json::parse(report::render_json(plan, loaded.plan_source()));
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  CHECK(keys == std::vector<std::string>{"schema", "version", "plan", "inputs", "origins",
                                         "derived", "memory", "host", "communication", "time",
                                         "reliability", "verdict", "levers", "fixes", "warnings"});
  const auto& stages = j["memory"]["stages"];
  REQUIRE(stages.size() == 4);
  CHECK(stages[0]["role"] == "first");
  CHECK(stages[3]["role"] == "last");
  for (const auto& st : stages) {
    std::int64_t sum = 0;
    for (const auto& item : st["items"]) {
      REQUIRE(item["value"].is_number_integer());
      CHECK(item["unit"] == "bytes");
      for (const char* k : {"id", "label", "value", "unit", "formula", "terms", "source", "kind"})
        CHECK(item.contains(k));
      sum += item["value"].get<std::int64_t>();
    }
    CHECK(sum == st["peak_bytes"].get<std::int64_t>());
  }
  CHECK(j["inputs"]["cluster"]["gpu_memory"] == 85520809984);
  CHECK(j["inputs"]["cluster"]["intra_node_latency"] == 8e-6);
  CHECK(j["origins"]["model.layers"] == "configs/models/llama-3.1-70b.toml:5:10");
  CHECK(j["verdict"]["worst_stage"] == plan.worst_stage);
}

TEST_CASE("memory prints in GiB by default and GB on request", "[report]") {
  const config::LoadedPlan loaded = test::load_text(k_plans[1]);
  const PlanResult plan = test::plan_checked(loaded.input);
  const std::string gib = report::render_table(plan, loaded.plan_source(), {});
  report::Options gb_opts;
  gb_opts.units = report::MemUnits::gb;
  const std::string gb = report::render_table(plan, loaded.plan_source(), gb_opts);
  CHECK(gib.find("Memory per GPU (GiB)") != std::string::npos);
  CHECK(gb.find("Memory per GPU (GB)") != std::string::npos);
  // 7e9 params × 2 B = 14 GB = 13.04 GiB.
  CHECK(gb.find("14.00") != std::string::npos);
  CHECK(gib.find("13.04") != std::string::npos);
}

TEST_CASE("the table folds identical stages into one column", "[report]") {
  const config::LoadedPlan loaded = test::load_text(k_plans[0]);
  const std::string table =
      report::render_table(test::plan_checked(loaded.input), loaded.plan_source(), {});
  CHECK(table.find("stage 0") != std::string::npos);
  CHECK(table.find("stages 1-2") != std::string::npos);
  CHECK(table.find("stage 3") != std::string::npos);
}

TEST_CASE("count-only models carry a warning into every format", "[report]") {
  const config::LoadedPlan loaded = test::load_text(k_plans[1]);
  const PlanResult plan = test::plan_checked(loaded.input);
  REQUIRE(!plan.warnings.empty());
  CHECK(report::render_table(plan, loaded.plan_source(), {}).find("count-only model") !=
        std::string::npos);
  CHECK(report::render_markdown(plan, loaded.plan_source(), {}).find("count-only model") !=
        std::string::npos);
  CHECK(report::render_json(plan, loaded.plan_source()).find("count-only model") !=
        std::string::npos);
}

TEST_CASE("a plan that does not fit says by how much", "[report]") {
  const config::LoadedPlan loaded = test::load_text(
      "[model]\npreset = \"llama-2-70b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n"
      "gpus_per_node = 1\n");
  const PlanResult plan = test::plan_checked(loaded.input);
  CHECK_FALSE(plan.verdict.fits);
  const std::string table = report::render_table(plan, loaded.plan_source(), {});
  CHECK(table.find("does NOT fit") != std::string::npos);
  CHECK(table.find("OVER") != std::string::npos);
}

TEST_CASE("JSON inputs list every resolved key that changes a number", "[report][json]") {
  for (const char* plan : {"configs/plans/default.toml", "configs/plans/llama-2-7b-qlora.toml",
                           "configs/plans/llama-3.1-8b-fsdp.toml"}) {
    INFO(plan);
    const auto r = test::run_cli({"plan", test::source_path(plan), "--format", "json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    const bool lora = j["inputs"]["training"]["finetune"] != "full";
    for (const auto& [key, origin] : j["origins"].items()) {
      // Preset names are where values came from, not values; LoRA's keys change nothing in a
      // full fine-tune.
      if (key == "model.preset" || key == "model.hf_config" || key == "cluster.gpu") continue;
      if (!lora && (key.rfind("training.lora_", 0) == 0 || key == "training.double_quant"))
        continue;
      const std::string section = key.substr(0, key.find('.'));
      INFO(key << " (" << origin << ")");
      CHECK(j["inputs"][section].contains(key.substr(key.find('.') + 1)));
    }
  }
}
