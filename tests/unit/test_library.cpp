// The commands as functions with plans given as text (what the Python module calls,
// docs/python.md): the same documents as the command line's, every JSON document named by its
// schema, and errors that name the key they are about.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app.hpp"
#include "helpers.hpp"
#include "trainledger/config.hpp"

using namespace trainledger;

namespace {

const std::string k_default = "configs/plans/default.toml";

cli::PlanText default_as_text(const std::string& name = "(string)") {
  return {test::read_file(test::source_path(k_default)), name, test::source_path("configs/plans")};
}

nlohmann::json plan_json(const cli::PlanOptions& given) {
  cli::PlanOptions o = given;
  o.format = "json";
  std::ostringstream out, err;
  REQUIRE(cli::run_plan(o, out, err) == cli::k_exit_ok);
  return nlohmann::json::parse(out.str());
}

}  // namespace

TEST_CASE("key_in_message names the key a message is about", "[config][library]") {
  CHECK(config::key_in_message("unknown key model.layerz (did you mean \"layers\"?)") ==
        "model.layerz");
  CHECK(config::key_in_message("parallel.tp (6) must divide model.heads (64)") == "parallel.tp");
  CHECK(config::key_in_message("training.micro_batch: -1 must be at least 1") ==
        "training.micro_batch");
  CHECK(config::key_in_message("parallel: tp × pp × cp = 3 × 1 × 1 = 3 does not divide the world "
                               "size 8 (cluster.nodes 1 × cluster.gpus_per_node 8)") == "parallel");
  // A dotted word that is no plan section (a file name, a version) is not a key.
  CHECK(config::key_in_message("cannot read config.json: no such file (see training.seq_len.)") ==
        "training.seq_len");
  CHECK(config::key_in_message("cannot read the plan file: no such file") == "");
  CHECK(config::key_in_message("vLLM 0.10.0 and default.toml") == "");
}

TEST_CASE("a plan given as text plans as its file does", "[cli][library]") {
  cli::PlanOptions by_file;
  by_file.plan = test::source_path(k_default);
  cli::PlanOptions by_text;
  by_text.text = default_as_text();
  const nlohmann::json a = plan_json(by_file);
  const nlohmann::json b = plan_json(by_text);
  CHECK(b["plan"] == "(string)");
  CHECK(a["verdict"] == b["verdict"]);
  CHECK(a["memory"] == b["memory"]);
  CHECK(a["time"] == b["time"]);
  CHECK(a["communication"] == b["communication"]);

  // Its errors are located in the text, under its name.
  cli::PlanOptions typo;
  typo.text = default_as_text();
  const std::string::size_type at = typo.text->text.find("micro_batch = 1");
  REQUIRE(at != std::string::npos);
  typo.text->text.replace(at, 15, "micro_bach = 1");
  try {
    cli::load(typo);
    FAIL("a typo was accepted");
  } catch (const config::ConfigError& e) {
    const config::Diagnostic& d = e.diagnostics().front();
    CHECK(d.origin.file == "(string)");
    CHECK(d.origin.line == 9);
    CHECK(config::key_in_message(d.message) == "training.micro_bach");
  }
}

TEST_CASE("a text plan's paths resolve in its base folder and stay inside it", "[cli][library]") {
  const std::string root = test::scratch_folder(
      "python-base", {{"inside/model/config.json",
                       R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 256,
                           "num_attention_heads": 4, "num_key_value_heads": 4,
                           "intermediate_size": 512, "vocab_size": 1000})"},
                      {"outside.json", "{}"}});
  // root: <scratch>/python-base/inside/model/config.json
  const std::string base =
      std::filesystem::path(root).parent_path().parent_path().parent_path().string();
  const std::string cluster =
      "\n[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 1\ngpus_per_node = 8\n";
  cli::PlanOptions inside;
  inside.text = cli::PlanText{"[model]\nhf_config = \"model/config.json\"\n" + cluster, "(dict)",
                              base + "/inside"};
  const nlohmann::json j = plan_json(inside);
  CHECK(j["inputs"]["model"]["layers"] == 2);
  cli::PlanOptions outside = inside;
  outside.text->text = "[model]\nhf_config = \"../outside.json\"\n" + cluster;
  CHECK_THROWS_AS(cli::load(outside), config::ConfigError);
}

TEST_CASE("check, diff and explain take plans as text", "[cli][library]") {
  cli::CheckOptions c;
  c.text = default_as_text("(dict)");
  c.format = "json";
  std::ostringstream out, err;
  REQUIRE(cli::run_check(c, out, err) == cli::k_exit_ok);
  const nlohmann::json checked = nlohmann::json::parse(out.str());
  CHECK(checked["schema"] == "trainledger.check/2");
  REQUIRE(checked["plans"].size() == 1);
  CHECK(checked["plans"][0]["plan"] == "(dict)");
  const auto by_cli = test::run_cli({"check", test::source_path(k_default), "--format", "json"});
  CHECK(nlohmann::json::parse(by_cli.out)["plans"][0]["peak_bytes"] ==
        checked["plans"][0]["peak_bytes"]);

  cli::DiffOptions d;
  d.plan.plan = test::source_path(k_default);
  d.other_text = default_as_text("(dict)");
  const std::string::size_type at = d.other_text->text.find("zero = 1");
  REQUIRE(at != std::string::npos);
  d.other_text->text.replace(at, 8, "zero = 0");
  d.format = "json";
  std::ostringstream dout, derr;
  REQUIRE(cli::run_diff(d, dout, derr) == cli::k_exit_ok);
  const nlohmann::json diff = nlohmann::json::parse(dout.str());
  CHECK(diff["schema"] == "trainledger.diff/1");
  CHECK(diff["b"]["plan"] == "(dict)");
  const auto by_set = test::run_cli(
      {"diff", test::source_path(k_default), "--set", "parallel.zero=0", "--format", "json"});
  CHECK(nlohmann::json::parse(by_set.out)["b"]["peak_bytes"] == diff["b"]["peak_bytes"]);
  CHECK(diff["b"]["peak_bytes"].get<double>() > diff["a"]["peak_bytes"].get<double>());
}

TEST_CASE("explain --format json: the item as plan's JSON writes it", "[cli][library]") {
  const std::string file = test::source_path(k_default);
  const auto r = test::run_cli({"explain", "optimizer.m", file, "--format", "json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "trainledger.explain/1");
  CHECK(j["item"]["id"] == "optimizer.m");
  CHECK(j["where"].get<std::string>().rfind("stage 0", 0) == 0);
  const auto plan = nlohmann::json::parse(test::run_cli({"plan", file, "--format", "json"}).out);
  const int worst = plan["verdict"]["worst_stage"];
  bool found = false;
  for (const auto& item : plan["memory"]["stages"][worst]["items"])
    if (item["id"] == "optimizer.m") {
      CHECK(item == j["item"]);
      found = true;
    }
  CHECK(found);
  // A communication item lists the link inputs its time read, with their origins.
  const auto comm =
      nlohmann::json::parse(test::run_cli({"explain", "comm.pp", file, "--format", "json"}).out);
  REQUIRE(!comm["inputs_read"].empty());
  CHECK(comm["inputs_read"][0]["key"].get<std::string>().find("bandwidth") != std::string::npos);
  CHECK(test::run_cli({"explain", "optimizer.m", file, "--format", "yaml"}).code == 2);
}

TEST_CASE(
    "every JSON document names its schema, and search --fewest that finds nothing is JSON too",
    "[cli][library]") {
  const std::string file = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  const auto sweep =
      test::run_cli({"sweep", file, "--vary", "training.micro_batch=1,2", "--format", "json"});
  CHECK(nlohmann::json::parse(sweep.out)["schema"] == "trainledger.sweep/1");
  const auto search =
      test::run_cli({"search", file, "--top", "1", "--jobs", "1", "--format", "json"});
  CHECK(nlohmann::json::parse(search.out)["schema"] == "trainledger.search/1");
  // 405B on at most 2 GPUs: no layout fits.
  const auto none = test::run_cli({"search", "--set", "model.preset=\"llama-3.1-405b\"", "--fewest",
                                   "--gpus", "2", "--format", "json"});
  CHECK(none.code == 1);
  const auto j = nlohmann::json::parse(none.out);
  CHECK(j["schema"] == "trainledger.search/1");
  CHECK(j["search"]["found"] == false);
  CHECK(j["search"]["limit_gpus"] == 2);
  CHECK(j["top"].empty());
}
