// Every JSON output validates against the published schemas (docs/schema/*.json).
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "json_schema.hpp"

using trainledger::test::read_file;
using trainledger::test::run_cli;
using trainledger::test::schema_errors;
using trainledger::test::source_path;

namespace {

nlohmann::json schema(const char* name) {
  return nlohmann::json::parse(read_file(source_path(std::string("docs/schema/") + name)));
}

void require_valid(const nlohmann::json& s, const std::vector<std::string>& args) {
  const auto r = run_cli(args);
  std::string line;
  for (const auto& a : args) line += a + " ";
  INFO(line);
  REQUIRE_FALSE(r.out.empty());
  const std::vector<std::string> errors = schema_errors(s, nlohmann::json::parse(r.out));
  for (const std::string& e : errors) FAIL_CHECK(e);
  CHECK(errors.empty());
}

}  // namespace

TEST_CASE("plan's JSON validates against trainledger.plan/2", "[json][schema]") {
  const auto s = schema("trainledger.plan.schema.json");
  require_valid(s, {"plan", "--format", "json"});
  require_valid(s, {"plan", "--format", "json", "--phase", "optimizer"});
  require_valid(s, {"plan", "--format", "json", "--max", "micro_batch"});
  require_valid(s, {"plan", "--format", "json", "--max", "seq_len"});
  // A plan that does not fit: its fixes, with their changes.
  require_valid(s, {"plan", "--format", "json", "--set", "training.micro_batch=4"});
  for (const char* plan :
       {"tests/data/count-only.toml", "tests/data/no-bandwidth.toml",
        "tests/data/guessed-arch.toml", "configs/plans/llama-2-7b-qlora.toml",
        "configs/plans/llama-3.1-8b-fsdp.toml", "configs/plans/grpo-llama-3.1-8b.toml",
        "configs/plans/ppo-qwen2.5-7b-split.toml",
        "tests/reference/time/nvidia-mb-llama31-405b-gbs512.toml",
        "tests/reference/time/mpt-1b-h100-fp8-s512-g8.toml",
        "tests/reference/memory/litgpt-resource-tables/litgpt-llama2-7b-lora-b1.toml"})
    require_valid(s, {"plan", source_path(plan), "--format", "json"});
  // Every golden case (their JSON is pinned byte for byte by test_golden, without the
  // program's version so that a release does not change them).
  for (const auto& e : std::filesystem::directory_iterator(source_path("golden"))) {
    if (e.path().extension() != ".json" || e.path().stem() == "published") continue;
    auto doc = nlohmann::json::parse(read_file(e.path().string()));
    doc["version"] = "golden";
    for (const std::string& err : schema_errors(s, doc))
      FAIL_CHECK(e.path().filename().string() + err);
  }
}

TEST_CASE("check's JSON validates against trainledger.check/2", "[json][schema]") {
  const auto s = schema("trainledger.check.schema.json");
  const std::string fsdp = source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  require_valid(s, {"check", "default", "--format", "json"});
  require_valid(s, {"check", "default", fsdp, "--format", "json", "--capacity", "89 GiB"});
  require_valid(s, {"check", fsdp, source_path("tests/data/no-such.toml"), "--format", "json"});
  require_valid(
      s, {"check", source_path("tests/data/guessed-arch.toml"), "--strict", "--format", "json"});
  require_valid(s, {"check", source_path("tests/data/bad-value.toml"), "--format", "json"});
  require_valid(s, {"check", "default", "--set", "parallel.tp=abc", "--format", "json"});
}

TEST_CASE("the schema validator rejects what the schemas forbid", "[json][schema]") {
  const auto s = schema("trainledger.check.schema.json");
  auto doc = nlohmann::json::parse(run_cli({"check", "default", "--format", "json"}).out);
  CHECK(schema_errors(s, doc).empty());
  doc["plans"][0]["peak_bytes"] = 1.5;  // bytes must be whole
  doc["plans"][0]["status"] = "fine";
  doc["plans"][0]["extra"] = true;
  doc.erase("summary");
  const std::vector<std::string> errors = schema_errors(s, doc);
  REQUIRE(errors.size() == 4);
  CHECK(errors[0] == ": missing required \"summary\"");
}
