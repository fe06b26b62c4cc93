// `trainledger check` (the CI gate) and `plan --max`: exit codes and messages.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include "helpers.hpp"

using trainledger::test::run_cli;
using trainledger::test::source_path;

namespace {
const std::string k_default = source_path("configs/plans/default.toml");
const std::string k_fsdp = source_path("configs/plans/llama-3.1-8b-fsdp.toml");
}  // namespace

TEST_CASE("check exits 0 when every plan fits with the headroom", "[check]") {
  const auto r = run_cli({"check", k_default, source_path("configs/plans/llama-2-7b-qlora.toml")});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("status") != std::string::npos);
  CHECK(r.out.find(" ok ") != std::string::npos);
}

TEST_CASE("check exits 1 for a plan over capacity and names stage, phase and knobs", "[check]") {
  const auto r = run_cli({"check", k_default, "--capacity", "30 GiB"});
  CHECK(r.code == 1);
  CHECK(r.out.find("OVER") != std::string::npos);
  CHECK(r.out.find("does not fit: stage 0 (first), backward phase needs") != std::string::npos);
  CHECK(r.out.find("largest contributors on stage 0:") != std::string::npos);
  CHECK(r.out.find("activations") != std::string::npos);
  CHECK(r.out.find("recompute = full frees") != std::string::npos);
}

// These cases test the headroom on the estimate alone (--confidence off); the bands' own gate is
// tested in tests/unit/test_bands.cpp.
TEST_CASE("a near miss (fits by less than the headroom) fails with its own message", "[check]") {
  // 79.37 GiB at its peak: over the 76.50 GiB limit of 85 GiB less 10 %, under 85 GiB.
  const auto r = run_cli({"check", "--confidence", "off", k_fsdp, "--capacity", "85 GiB"});
  CHECK(r.code == 1);
  CHECK(r.out.find("NEAR") != std::string::npos);
  CHECK(r.out.find("fits by only") != std::string::npos);
  CHECK(r.out.find("less than the 10 % headroom") != std::string::npos);
  const auto relaxed =
      run_cli({"check", "--confidence", "off", k_fsdp, "--capacity", "85 GiB", "--headroom", "1%"});
  CHECK(relaxed.code == 0);
}

TEST_CASE("check --format json reports every plan for CI", "[check][json]") {
  const auto r = run_cli({"check", k_default, k_fsdp, "--capacity", "85 GiB", "--format", "json"});
  CHECK(r.code == 1);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "trainledger.check/2");
  REQUIRE(j["plans"].size() == 2);
  CHECK(j["plans"][0]["status"] == "ok");
  CHECK(j["plans"][1]["status"] == "NEAR");
  REQUIRE(j["plans"][1]["suggestions"].size() == 3);
  const auto& first = j["plans"][1]["suggestions"][0];
  CHECK(first["knob"] == "recompute = full");
  // The change as data: the plan-file key it sets, from and to as the plan file writes them.
  REQUIRE(first["changes"].size() == 1);
  CHECK(first["changes"][0]["key"] == "training.recompute");
  CHECK(first["changes"][0]["from"] == "none");
  CHECK(first["changes"][0]["to"] == "full");
  // The limit is the capacity less the headroom, in plan's verdict as in check.
  CHECK(j["plans"][1]["capacity_bytes"] == std::int64_t{85} << 30);
  CHECK(j["plans"][1]["limit_bytes"].get<double>() ==
        Approx(0.9 * static_cast<double>(std::int64_t{85} << 30)).epsilon(1e-9));
}

TEST_CASE("check exits 2 on invalid input and still reports every plan", "[check][errors]") {
  const auto bad = run_cli({"check", source_path("tests/data/no-such.toml"), k_default});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("no-such.toml") != std::string::npos);
  CHECK(bad.out.find("  ERROR  invalid plan (errors on stderr)") != std::string::npos);
  CHECK(bad.out.find("default.toml") != std::string::npos);
  CHECK(bad.out.find("2 plans: 1 ok, 1 ERROR\n") != std::string::npos);
  const auto capacity = run_cli({"check", k_default, "--capacity", "80"});
  CHECK(capacity.code == 2);
  CHECK(capacity.err.find("--capacity: \"80\" has no unit") != std::string::npos);
  const auto headroom = run_cli({"check", k_default, "--headroom", "ten"});
  CHECK(headroom.code == 2);
}

TEST_CASE("plan --max prints the largest value that fits and the plan at it", "[check][max]") {
  const std::string memory = "cluster.gpu_memory=95 GiB";
  const auto r =
      run_cli({"plan", "--confidence", "off", k_fsdp, "--max", "micro_batch", "--set", memory});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("largest micro_batch that fits: 1 (peak ", 0) == 0);
  CHECK(r.out.find("micro_batch = 2 needs") != std::string::npos);
  const auto json = run_cli({"plan", "--confidence", "off", k_fsdp, "--max", "seq_len", "--set",
                             memory, "--format", "json"});
  CHECK(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["search"]["knob"] == "seq_len");
  CHECK(j["search"]["value"].get<int>() > 8192);
  CHECK(j["search"]["next_peak_bytes"].get<double>() > j["search"]["limit_bytes"].get<double>());
  const auto none = run_cli({"plan", "--confidence", "off", k_fsdp, "--max", "seq_len", "--set",
                             "cluster.gpu_memory=20 GiB"});
  CHECK(none.code == 1);
  CHECK(none.out.rfind("no seq_len fits", 0) == 0);
}

TEST_CASE("plan lists the biggest levers, each re-planned and still fitting", "[check][levers]") {
  const auto r = run_cli({"plan"});
  REQUIRE(r.code == 0);
  // The biggest first: FP8 GEMMs on the H100 (a change of numerics, said so); then TP 8 with
  // 21 % of the step in exposed TP communication gains most from overlapping it (Transformer
  // Engine's TP comm overlap), then a larger batch for the bubble.
  CHECK(r.out.find("\nLevers:\n  precision = fp8: 778 → 1060 tokens/s per GPU (+36.2 %), peak "
                   "55.59 GiB; the GEMMs' numerics change") != std::string::npos);
  CHECK(r.out.find("\n  overlap_tp = true: 778 → 977 tokens/s per GPU (+25.5 %)") !=
        std::string::npos);
  CHECK(r.out.find("\n  global_batch 256 → 1024: grad accum 128 → 512, bubble 2.3 % → 0.6 %") !=
        std::string::npos);
  // The report prints a lever's peak in the report's units.
  const auto gb = run_cli({"plan", "--units", "gb"});
  CHECK(gb.out.find("peak 59.34 GB\n") != std::string::npos);
  CHECK(gb.out.find(" GiB\n") == std::string::npos);
  const auto j = nlohmann::json::parse(run_cli({"plan", "--format", "json"}).out);
  REQUIRE(j["levers"].size() >= 1);
  for (const auto& l : j["levers"]) {
    CHECK(l["fits"] == true);
    CHECK(l["tokens_per_s_per_gpu_after"].get<double>() >
          l["tokens_per_s_per_gpu_before"].get<double>());
  }
}

TEST_CASE("check without plan files is a usage error, not a pass", "[check][errors]") {
  // A CI step whose glob matched nothing must fail.
  const auto none = run_cli({"check"});
  CHECK(none.code == 2);
  CHECK(none.out.empty());
  CHECK(none.err.find("no plan files given") != std::string::npos);
  CHECK(none.err.find("usage: trainledger check PLAN...") != std::string::npos);
  // `default` names the embedded default plan.
  const auto builtin = run_cli({"check", "default"});
  CHECK(builtin.code == 0);
  CHECK(builtin.out.find("(default plan)") != std::string::npos);
}

TEST_CASE("check prints every plan's warnings, in the table and in JSON", "[check]") {
  // A count-only model has no activations: the gate never passes it as plain ok, and says why.
  const std::string plan = source_path("tests/data/count-only.toml");
  const auto r = run_cli({"check", plan});
  CHECK(r.code == 4);
  CHECK(r.out.find("count-only.toml  UNSURE") != std::string::npos);
  CHECK(r.out.find("count-only.toml: warning (guess): model: count-only model") !=
        std::string::npos);
  const auto j = nlohmann::json::parse(run_cli({"check", plan, "--format", "json"}).out);
  REQUIRE(j["plans"][0]["warnings"].size() == 1);
  CHECK(j["plans"][0]["warnings"][0].get<std::string>().rfind("model: count-only model", 0) == 0);
  // A plan without warnings has an empty list.
  const auto clean = nlohmann::json::parse(run_cli({"check", k_default, "--format", "json"}).out);
  CHECK(clean["plans"][0]["warnings"].empty());
}

TEST_CASE("check --strict fails a plan that rests on a guess, with its own exit code",
          "[check][strict]") {
  const std::string guessed = source_path("tests/data/guessed-arch.toml");
  const std::string count = source_path("tests/data/count-only.toml");
  // Without --strict the gate passes a guessed architecture and marks the guesses among the
  // warnings; a count-only model, whose peak is its training state alone, is UNSURE all the same.
  const auto lax = run_cli({"check", "--confidence", "off", guessed, count});
  CHECK(lax.code == 4);
  CHECK(lax.out.find("guessed-arch.toml: warning (guess): ") != std::string::npos);
  CHECK(lax.out.find("model_type \"in_house_decoder\" is not a known architecture; read as "
                     "\"llama\" because model.hf_arch says so") != std::string::npos);
  CHECK(lax.out.find("2 plans: 1 ok, 1 UNSURE\n") != std::string::npos);
  CHECK(run_cli({"check", "--confidence", "off", guessed}).code == 0);
  const auto strict = run_cli({"check", "--confidence", "off", guessed, count, "--strict"});
  CHECK(strict.code == 4);
  CHECK(strict.out.find("guessed-arch.toml  UNSURE") != std::string::npos);
  CHECK(strict.out.find("2 plans: 2 UNSURE\n") != std::string::npos);
  // A plan without guesses still passes; one that does not fit still exits 1.
  CHECK(run_cli({"check", "--confidence", "off", k_default, "--strict"}).code == 0);
  CHECK(run_cli({"check", "--confidence", "off", guessed, k_default, "--strict", "--capacity",
                 "30 GiB"})
            .code == 1);
  // Collectives over a link whose bandwidth no input gives are a guess too.
  const auto no_link = run_cli(
      {"check", "--confidence", "off", source_path("tests/data/no-bandwidth.toml"), "--strict"});
  CHECK(no_link.code == 4);
  CHECK(no_link.out.find("_bandwidth is not given") != std::string::npos);
  const auto j = nlohmann::json::parse(
      run_cli({"check", "--confidence", "off", guessed, k_default, "--strict", "--format", "json"})
          .out);
  CHECK(j["exit_code"] == 4);
  CHECK(j["summary"] == "2 plans: 1 ok, 1 UNSURE");
  CHECK(j["plans"][0]["status"] == "UNSURE");
  CHECK(j["plans"][0]["guesses"].size() == 1);
  CHECK(j["plans"][1]["guesses"].empty());
}

TEST_CASE("check's JSON counts bytes in whole bytes and lists broken plans", "[check][json]") {
  const auto r =
      run_cli({"check", k_fsdp, source_path("tests/data/no-such.toml"), "--format", "json"});
  CHECK(r.code == 2);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["plans"].size() == 2);
  for (const char* key : {"peak_bytes", "capacity_bytes", "limit_bytes"})
    CHECK(j["plans"][0][key].is_number_integer());
  for (const auto& s : j["plans"][0]["suggestions"]) {
    CHECK(s["bytes"].is_number_integer());
    CHECK(s["freed_bytes"].is_number_integer());
  }
  CHECK(j["plans"][1]["status"] == "ERROR");
  REQUIRE(j["plans"][1]["errors"].size() == 1);
  const auto& e = j["plans"][1]["errors"][0];
  CHECK(e["file"].get<std::string>().find("no-such.toml") != std::string::npos);
  CHECK(e["text"].get<std::string>().find("no-such.toml") != std::string::npos);
  CHECK(e["message"].get<std::string>().find("no such file") != std::string::npos);
}

TEST_CASE("check's JSON errors carry the file, line and column of each", "[check][json]") {
  const auto r = run_cli({"check", source_path("tests/data/bad-value.toml"), "--format", "json"});
  CHECK(r.code == 2);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "trainledger.check/2");
  REQUIRE(j["plans"][0]["errors"].size() >= 1);
  const auto& e = j["plans"][0]["errors"][0];
  CHECK(e["file"].get<std::string>().find("bad-value.toml") != std::string::npos);
  CHECK(e["option"].is_null());
  CHECK(e["line"].get<int>() >= 1);
  CHECK(e["column"].get<int>() >= 1);
  // The text is the line as printed: file:line:column: message.
  CHECK(e["text"].get<std::string>() == "trainledger: error: " + e["file"].get<std::string>() +
                                            ":" + std::to_string(e["line"].get<int>()) + ":" +
                                            std::to_string(e["column"].get<int>()) + ": " +
                                            e["message"].get<std::string>());
  // An option's error names the option.
  const auto set = run_cli({"check", "default", "--set", "parallel.tp=abc", "--format", "json"});
  CHECK(set.code == 2);
  const auto k = nlohmann::json::parse(set.out);
  const auto& o = k["plans"][0]["errors"][0];
  CHECK(o["file"].is_null());
  CHECK(o["option"] == "--set");
}

TEST_CASE("check --format junit and github show CI systems the failing plans", "[check]") {
  const std::string bad = source_path("tests/data/bad-value.toml");
  // 78 GiB: the FSDP plan (79.37 GiB at its peak) does not fit, the default one does.
  const auto junit =
      run_cli({"check", k_default, k_fsdp, bad, "--format", "junit", "--capacity", "78 GiB"});
  CHECK(junit.code == 2);
  CHECK(junit.out.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", 0) == 0);
  CHECK(junit.out.find("<testsuites name=\"trainledger check\" tests=\"3\" failures=\"1\" "
                       "errors=\"1\">") != std::string::npos);
  CHECK(junit.out.find("<failure message=\"does not fit: stage 0 needs ") != std::string::npos);
  CHECK(junit.out.find("<error message=\"trainledger: error: ") != std::string::npos);
  CHECK(junit.out.find("</testsuites>\n") != std::string::npos);
  // Characters XML reserves are escaped.
  CHECK(junit.out.find("&quot;") != std::string::npos);
  const auto gh =
      run_cli({"check", k_default, k_fsdp, bad, "--format", "github", "--capacity", "78 GiB"});
  CHECK(gh.code == 2);
  CHECK(gh.out.find("3 plans: 1 ok, 1 OVER, 1 ERROR\n") != std::string::npos);
  CHECK(gh.out.find("::error file=" + k_fsdp + ",title=trainledger check: OVER::does not fit") !=
        std::string::npos);
  // An invalid plan's annotation points at the line and column of the error.
  CHECK(gh.out.find("::error file=" + bad + ",line=5,col=11,") != std::string::npos);
}

TEST_CASE("a report that cannot be written exits 3, not 0", "[check][errors]") {
  // check --format json > report.json on a full disk must not pass the gate.
  if (!std::ifstream("/dev/full")) {
    WARN("skipped: this system has no /dev/full");
    return;
  }
  const std::string command = std::string("\"") + TRAINLEDGER_BINARY + "\" check " + k_default +
                              " --format json > /dev/full 2> /dev/null";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
}

TEST_CASE("plan --max keeps the global batch and agrees with check", "[check][max]") {
  // Llama 3.1 8B FSDP on 8 GPUs, global batch 64 (8 per rank): micro-batches 1, 2, 4, 8.
  const std::string memory = "cluster.gpu_memory=160 GiB";
  const auto r =
      run_cli({"plan", "--confidence", "off", k_fsdp, "--max", "micro_batch", "--set", memory});
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind("largest micro_batch that fits: 2 (peak ", 0) == 0);
  CHECK(r.out.find("micro_batch = 4 needs") != std::string::npos);  // 3 does not divide 8
  CHECK(r.out.find("global batch kept at 64: grad accum 8 → 4") != std::string::npos);
  CHECK(r.out.find("limit = capacity − 10 % headroom") != std::string::npos);
  // check, with the same (default) headroom, passes the value found and fails the next one.
  CHECK(run_cli({"check", "--confidence", "off", k_fsdp, "--set", memory, "--set",
                 "training.micro_batch=2"})
            .code == 0);
  CHECK(run_cli({"check", "--confidence", "off", k_fsdp, "--set", memory, "--set",
                 "training.micro_batch=4"})
            .code == 1);
  // --keep accum lets the global batch grow instead, and says so.
  const auto accum = run_cli({"plan", "--confidence", "off", k_fsdp, "--max", "micro_batch",
                              "--keep", "accum", "--set", memory});
  CHECK(accum.out.find("largest micro_batch that fits: 2 (peak ") == 0);
  CHECK(accum.out.find("micro_batch = 3 needs") != std::string::npos);
  CHECK(accum.out.find("grad accum kept at 8: global batch 64 → 128") != std::string::npos);
  // The same headroom in both: with --headroom 0% the limit is the capacity.
  const auto j =
      nlohmann::json::parse(run_cli({"plan", "--confidence", "off", k_fsdp, "--max", "micro_batch",
                                     "--set", memory, "--headroom", "0%", "--format", "json"})
                                .out);
  CHECK(j["search"]["keep"] == "global_batch");
  CHECK(j["search"]["headroom"] == 0.0);
  CHECK(j["search"]["limit_bytes"].get<std::int64_t>() == std::int64_t{160} << 30);
  CHECK(j["derived"]["global_batch"] == 64);
}

TEST_CASE("plan's verdict and levers keep check's headroom", "[check][levers]") {
  const std::string memory = "cluster.gpu_memory=85 GiB";  // 81.24 GiB needed: 4.4 % free
  const auto tight = run_cli({"plan", "--confidence", "off", k_fsdp, "--set", memory});
  CHECK(tight.out.find("Verdict: fits, but by less than the 10.0 % headroom (check fails it)") !=
        std::string::npos);
  const auto relaxed =
      run_cli({"plan", "--confidence", "off", k_fsdp, "--set", memory, "--headroom", "1%"});
  CHECK(relaxed.out.find("Verdict: fits: ") != std::string::npos);
  const auto j = nlohmann::json::parse(
      run_cli({"plan", "--confidence", "off", k_fsdp, "--set", memory, "--format", "json"}).out);
  CHECK(j["verdict"]["fits"] == true);
  CHECK(j["verdict"]["fits_with_headroom"] == false);
  CHECK(j["verdict"]["required_headroom"] == 0.1);
  // Every lever's plan fits with the headroom.
  const auto d =
      nlohmann::json::parse(run_cli({"plan", "--confidence", "off", "--format", "json"}).out);
  for (const auto& l : d["levers"])
    CHECK(l["peak_bytes"].get<double>() <=
          0.9 * d["inputs"]["cluster"]["gpu_memory"].get<double>());
}

TEST_CASE("traffic over a link with no bandwidth has no time, and no step time is made up",
          "[check][comm]") {
  const std::string plan = source_path("tests/data/no-bandwidth.toml");
  const auto r = run_cli({"plan", plan});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("100.41 GiB, time not computed") != std::string::npos);
  CHECK(r.out.find("Step time") == std::string::npos);
  CHECK(r.out.find("intra_node_bandwidth is not given: communication and step time are not "
                   "computed") != std::string::npos);
  const auto j = nlohmann::json::parse(run_cli({"plan", plan, "--format", "json"}).out);
  CHECK(j["time"]["items"].empty());
  REQUIRE(j["communication"]["items"].size() == 1);
  CHECK_FALSE(j["communication"]["items"][0].contains("time_s"));
}
