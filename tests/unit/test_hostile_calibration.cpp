// Calibration inputs and numeric options from a hostile pull request (a CI gate): nccl-tests
// logs whose counts drive loops, profiles and memory stats with absurd or broken values, options
// that contradict each other. Each is a located error with exit 2, never a hang, a crash, a
// non-finite number printed or a file that does not read back (docs/calibration.md).
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "helpers.hpp"
#include "trainledger/calibrate.hpp"

using namespace trainledger;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("trainledger-hostile-" + name)).string();
}

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string import_error(const std::string& text, const std::string& name) {
  try {
    calibrate::parse_nccl_tests(text, name, {});
  } catch (const config::ConfigError& e) {
    return e.diagnostics().front().to_string();
  }
  return "";
}

// nccl-tests -J output with `processes` device entries of `nthreads` × `ngpus` ranks each.
std::string json_log(int processes, long long nthreads, long long ngpus, long long first_rank = 0) {
  nlohmann::json devices = nlohmann::json::array();
  for (int p = 0; p < processes; ++p)
    devices.push_back({{"rank", first_rank + p * nthreads * ngpus},
                       {"hostname", "node" + std::to_string(p)},
                       {"device_info", "NVIDIA H100 80GB HBM3"}});
  nlohmann::json results = nlohmann::json::array();
  results.push_back(
      {{"size", 1 << 20}, {"out_of_place", {{"time", 100.0}, {"alg_bw", 10.49}, {"bus_bw", 0}}}});
  return nlohmann::json{
      {"args", {"./all_reduce_perf"}},
      {"config", {{"nthreads", nthreads}, {"ngpus", ngpus}, {"devices", devices}}},
      {"results", results}}
      .dump();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string profile(const std::string& name, const std::string& body) {
  const std::string path = temp_path(name);
  write(path, "[profile]\nformat = 1\n[cluster]\n" + body);
  return path;
}

}  // namespace

TEST_CASE("nccl-tests -J: rank counts in the millions are refused before any loop",
          "[hostile][calibrate]") {
  const auto t0 = std::chrono::steady_clock::now();
  // 64 processes × 1024 threads × 1024 GPUs: 2^26 ranks would be stored one by one.
  const std::string many = import_error(json_log(64, 1024, 1024), "run.json");
  CHECK_THAT(many, Catch::Contains("run.json: config: nthreads 1024 × ngpus 1024"));
  CHECK_THAT(many, Catch::Contains("at most 65536 ranks"));
  // Each factor allowed, the product of processes and ranks per process too large.
  const std::string product = import_error(json_log(300, 16, 16), "run.json");
  CHECK_THAT(product, Catch::Contains("config/devices: 300 processes × 256 ranks each"));
  // A rank whose range passes the limit.
  const std::string rank = import_error(json_log(1, 1, 8, 65530), "run.json");
  CHECK_THAT(rank, Catch::Contains("config/devices/0: rank 65530 out of range"));
  // A results list longer than any sweep.
  nlohmann::json long_results = nlohmann::json::parse(json_log(2, 1, 1));
  long_results["results"] = nlohmann::json::array();
  for (int i = 0; i < 70000; ++i) long_results["results"].push_back({{"size", 0}});
  CHECK_THAT(import_error(long_results.dump(), "run.json"),
             Catch::Contains("results: 70000 entries, at most 65536"));
  CHECK(seconds_since(t0) < 20);
  // Through the command: exit 2, nothing on stdout.
  const std::string path = temp_path("millions-all_reduce.json");
  write(path, json_log(64, 1024, 1024));
  const auto r = test::run_cli({"calibrate", "import", path});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  std::filesystem::remove(path);
}

TEST_CASE("nccl-tests text: out-of-range ranks, zero times and many hosts",
          "[hostile][calibrate]") {
  const std::string head = "all_reduce_perf\n";
  // A rank beyond the largest test: located, not silently skipped.
  CHECK_THAT(import_error(head + "#  Rank 70000 Group  0 Pid 1 on a device  0 [0x1] NVIDIA X\n",
                          "run.log"),
             Catch::Contains("run.log:2:1: a rank out of range"));
  // A time of 1e-300 us would make the bandwidth infinite.
  const std::string rows =
      "#  Rank  0 Group  0 Pid 1 on a device  0 [0x1] NVIDIA X\n"
      "#  Rank  1 Group  0 Pid 2 on a device  1 [0x2] NVIDIA X\n"
      "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      "1048576 262144 float sum -1 1e-300 0 0 0 100 10.49 10.49 0\n";
  CHECK_THAT(import_error(head + rows, "run.log"), Catch::Contains("run.log:5:1:"));
  CHECK_THAT(import_error(head + rows, "run.log"), Catch::Contains("below 1 ns"));
  // 60,000 ranks on as many hosts: read in well under a second (no quadratic host search).
  std::string wide = head;
  for (int r = 0; r < 60000; ++r)
    wide += "#  Rank " + std::to_string(r) + " Group 0 Pid 1 on host" + std::to_string(r) +
            " device 0 [0x1] NVIDIA X\n";
  wide +=
      "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
      "1048576 262144 float sum -1 100 10.49 20.97 0 100 10.49 20.97 0\n";
  const auto t0 = std::chrono::steady_clock::now();
  const calibrate::Sweep s = calibrate::parse_nccl_tests(wide, "wide.log", {});
  CHECK(s.ranks == 60000);
  CHECK(s.hosts.size() == 60000);
  const calibrate::Profile p = calibrate::build_profile({s}, "t", "m", "c");
  CHECK(p.hosts.size() == 60000);
  CHECK(seconds_since(t0) < 10);
}

TEST_CASE("calibrate import: a GPU name with DEL or invalid UTF-8 still reads back",
          "[hostile][calibrate]") {
  std::string log =
      test::read_file(test::source_path("tests/data/nccl-tests/a3mega-h100-2x8-all_reduce.txt"));
  const std::string clean = "NVIDIA H100 80GB HBM3";
  for (std::size_t at = log.find(clean); at != std::string::npos; at = log.find(clean, at + 1))
    log.replace(at, clean.size(), "NVIDIA H100\x7f \xff\xfe 80GB\x1b[31m");
  const std::string path = temp_path("del-all_reduce.txt");
  const std::string out = temp_path("del-profile.toml");
  write(path, log);
  std::filesystem::remove(out);
  const auto imported = test::run_cli({"calibrate", "import", path, "-o", out});
  REQUIRE(imported.code == 0);
  CHECK(imported.out.find('\x7f') == std::string::npos);
  CHECK(imported.out.find('\x1b') == std::string::npos);
  const std::string written = test::read_file(out);
  CHECK(written.find('\x7f') == std::string::npos);
  CHECK(written.find('\xff') == std::string::npos);
  CHECK_THAT(written,
             Catch::Contains("gpu_name = \"NVIDIA H100\\\\x7F \\\\xFF\\\\xFE 80GB\\\\x1B[31m\""));
  // Round trip: the profile parses, and applies to a plan whose GPU has that (printable) name.
  const auto plan = test::run_cli({"plan", "--format", "json", "--calibration", out, "--set",
                                   "cluster.gpu_name=\"NVIDIA H100\\\\x7F \\\\xFF\\\\xFE "
                                   "80GB\\\\x1B[31m\""});
  CHECK(plan.err == "");
  REQUIRE(plan.code == 0);
  // Bandwidth and latency across nodes, the intra-node steps at the same latency, and the
  // Simple protocol's latency and the low-latency share across nodes fitted to the ramp.
  CHECK(nlohmann::json::parse(plan.out)["calibration"]["measured"].size() == 5);
  std::filesystem::remove(path);
  std::filesystem::remove(out);
}

TEST_CASE("profiles: absurd values and unknown formats are refused where they are written",
          "[hostile][calibrate]") {
  // 1e300 s: located at the profile's line, naming the key and the value.
  const std::string latency = profile("latency.toml", "inter_node_latency = \"1e300 s\"\n");
  const auto r = test::run_cli({"plan", "--calibration", latency});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains(latency + ":4:22: cluster.inter_node_latency: \"1e300 s\" is "
                                              "out of range"));
  // The same on the command line.
  const auto set = test::run_cli({"plan", "--set", "checkpoint.gpu_failure_rate=1e308 /h"});
  CHECK(set.code == 2);
  CHECK_THAT(set.err, Catch::Contains("--set checkpoint.gpu_failure_rate=1e308 /h: "
                                      "checkpoint.gpu_failure_rate: \"1e308 /h\" is out of range"));
  // A profile of a newer format.
  const std::string future = temp_path("format2.toml");
  write(future, "[profile]\nformat = 2\n[cluster]\ninter_node_latency = \"20 us\"\n");
  const auto f = test::run_cli({"plan", "--calibration", future});
  CHECK(f.code == 2);
  CHECK_THAT(f.err, Catch::Contains(future + ":2:1: profile.format = 2"));
  std::filesystem::remove(latency);
  std::filesystem::remove(future);
}

TEST_CASE("non-finite and never-progressing results name the key and input behind them",
          "[hostile][calibrate]") {
  // A rate at the edge of a double: MTBF infinite; the message names the --set.
  const auto tiny = test::run_cli({"plan", "--set", "checkpoint.gpu_failure_rate=5e-324 /h"});
  CHECK(tiny.code == 2);
  CHECK_THAT(tiny.err, Catch::Contains("the plan's numbers are out of range"));
  CHECK_THAT(tiny.err, Catch::Contains("from checkpoint.gpu_failure_rate = \"5e-324 /h\" (--set "
                                       "checkpoint.gpu_failure_rate=5e-324 /h)"));
  const auto slow = test::run_cli({"plan", "--set", "cluster.matmul_efficiency=5e-324"});
  CHECK(slow.code == 2);
  CHECK_THAT(slow.err, Catch::Contains("from cluster.matmul_efficiency = 5e-324 (--set "
                                       "cluster.matmul_efficiency=5e-324)"));
  // Waste of 100 % or more: the run never progresses; no "140 %" anywhere.
  for (const auto& format : {"table", "json"}) {
    const auto w =
        test::run_cli({"plan", "--format", format, "--set", "checkpoint.gpu_failure_rate=1 /h"});
    CHECK(w.code == 2);
    CHECK(w.out.empty());
    CHECK_THAT(w.err, Catch::Contains("checkpoint.waste: the run never progresses"));
    CHECK_THAT(w.err, Catch::Contains("checkpoint.gpu_failure_rate = \"1 /h\" (--set "));
  }
  // At a planned interval that wastes everything while Young's does not.
  const auto planned = test::run_cli({"plan", "--set", "checkpoint.interval=\"900 d\""});
  CHECK(planned.code == 2);
  CHECK_THAT(planned.err, Catch::Contains("checkpoint.waste_planned: the run never progresses"));
  CHECK_THAT(planned.err, Catch::Contains("at checkpoint.interval = \"900 d\" (--set"));
  // check refuses it the same way; a sweep marks the point invalid.
  CHECK(test::run_cli({"check", "default", "--set", "checkpoint.gpu_failure_rate=1 /h"}).code == 2);
}

TEST_CASE("calibrate compare: memory stats errors are located, quoted printable and bounded",
          "[hostile][calibrate]") {
  const std::vector<std::string> one_stage = {"--set", "parallel.pp=1", "--set", "parallel.dp=8"};
  auto compare = [&](const std::string& text, const std::vector<std::string>& extra = {}) {
    const std::string path = temp_path("stats.json");
    write(path, text);
    std::vector<std::string> args = {"calibrate", "compare", "--memory-stats", path};
    args.insert(args.end(), one_stage.begin(), one_stage.end());
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = test::run_cli(args);
    std::filesystem::remove(path);
    return r;
  };
  const std::string path = temp_path("stats.json");
  // Broken JSON with an escape sequence and an invalid byte: file:line:column, no raw bytes,
  // no parser echo ("last read"), a bounded excerpt.
  const auto broken = compare(
      "{\"memory_stats\": {\"allocated_bytes.all.peak\": 5,\n"
      " \"reserved_bytes.all.peak\": \x1b[31mevil\xff" +
      std::string(5000, 'x') + "}}");
  CHECK(broken.code == 2);
  CHECK(broken.out.empty());
  CHECK_THAT(broken.err, Catch::StartsWith("trainledger: error: " + path + ":2:29: not JSON"));
  CHECK(broken.err.find('\x1b') == std::string::npos);
  CHECK(broken.err.find('\xff') == std::string::npos);
  CHECK(broken.err.find("last read") == std::string::npos);
  CHECK(broken.err.size() < 400);
  // A missing or wrong value: the key's path and line.
  const auto missing = compare("{\"memory_stats\": {\n\"allocated_bytes.all.peak\": 5}}");
  CHECK_THAT(missing.err, Catch::Contains("memory_stats/reserved_bytes.all.peak: missing"));
  const auto text =
      compare("{\n\"allocated_bytes.all.peak\": 5,\n\"reserved_bytes.all.peak\": \"x\"}");
  CHECK_THAT(text.err, Catch::Contains(path + ":3:1: reserved_bytes.all.peak: a string"));
  // Values beyond 2^53 (llround would overflow in the JSON), fractions, reserved below allocated.
  const auto huge = compare(
      "{\"allocated_bytes.all.peak\": 1e300, \"reserved_bytes.all.peak\": "
      "1e301}",
      {"--format", "json"});
  CHECK(huge.code == 2);
  CHECK(huge.out.empty());
  CHECK_THAT(huge.err, Catch::Contains("allocated_bytes.all.peak: 1e+300 is out of range"));
  CHECK_THAT(compare("{\"allocated_bytes.all.peak\": 5.5, \"reserved_bytes.all.peak\": 9}").err,
             Catch::Contains("5.5 is not a whole number"));
  CHECK_THAT(compare("{\"allocated_bytes.all.peak\": 9, \"reserved_bytes.all.peak\": 5}").err,
             Catch::Contains("is below allocated_bytes.all.peak"));
  // A measured step time at the edge: no 1e302 % error.
  CHECK(compare("{\"allocated_bytes.all.peak\": 9, \"reserved_bytes.all.peak\": 9}",
                {"--step-time", "1e-300"})
            .code == 2);
  const auto step = compare(
      "{\"rank\": 0, \"step_time\": 1e-300, \"memory_stats\": "
      "{\"allocated_bytes.all.peak\": 9, \"reserved_bytes.all.peak\": 9}}");
  CHECK_THAT(step.err, Catch::Contains("\"step_time\" must be a number of seconds"));
  // A rank that hardly allocated: finite numbers, no "inf %", a capped error in the table.
  const auto frag = compare(
      "{\"allocated_bytes.all.peak\": 1, \"reserved_bytes.all.peak\": "
      "9007199254740992}");
  REQUIRE(frag.code == 0);
  CHECK(frag.out.find("inf") == std::string::npos);
  CHECK_THAT(frag.out, Catch::Contains(">+999%"));
  const auto frag_json = compare(
      "{\"allocated_bytes.all.peak\": 1, \"reserved_bytes.all.peak\": "
      "9007199254740992}",
      {"--format", "json"});
  REQUIRE(frag_json.code == 0);
  const auto j = nlohmann::json::parse(frag_json.out);
  CHECK(j["memory"][0]["reserved_bytes"]["measured"].get<std::int64_t>() == 9007199254740992);
  CHECK(j["memory"][0]["allocated_bytes"]["predicted"].get<std::int64_t>() > 0);
}

TEST_CASE("calibrate import: a report that cannot be written is exit 3", "[hostile][calibrate]") {
  // Standard output on a full disk (/dev/full): the profile was not delivered, so not exit 0.
  if (!std::filesystem::exists("/dev/full")) return;
  const std::string log = test::source_path("tests/data/nccl-tests/a3mega-h100-2x8-all_reduce.txt");
  const std::string err = temp_path("full.err");
  const int status = std::system((std::string(TRAINLEDGER_BINARY) + " calibrate import '" + log +
                                  "' > /dev/full 2> '" + err + "'")
                                     .c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK_THAT(test::read_file(err), Catch::Contains("cannot write"));
  std::filesystem::remove(err);
}

TEST_CASE("search and sweep: options that are wrong or contradict each other are exit 2",
          "[hostile][calibrate]") {
  const std::string plan = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--gpus", "0"}, "--gpus: \"0\" is not a GPU count"},
      {{"--gpus", "-8"}, "--gpus: \"-8\" is not a GPU count"},
      {{"--gpus", "8x"}, "--gpus: \"8x\" is not a GPU count"},
      {{"--nodes", "4294967304"}, "--nodes: \"4294967304\" is not a node count"},
      {{"--nodes", "0"}, "--nodes: \"0\" is not a node count"},
      {{"--fix", "tp=2", "--fix", "tp=4"}, "tp is fixed twice to different values"},
      {{"--fix", "mb=2", "--fix", "micro_batch=4"}, "micro_batch is fixed twice"},
      {{"--fix", "tp=2", "--allow", "tp=4,8"}, "--fix tp=2 contradicts --allow tp=4,8"},
      {{"--allow", "zero=1", "--allow", "zero=2,3"}, "zero is given twice"},
      {{"--fix", "tp=2,4"}, "--fix holds a key at one value"},
      {{"--fix", "tp=0"}, "tp: \"0\" is not a whole number from 1"},
      {{"--fix", "tp= 8"}, "tp: \" 8\" is not a whole number"},
      {{"--fix", "uneven=banana"}, "uneven: \"banana\" is not true or false"},
      {{"--fewest", "--target-step-time", ""}, "--target-step-time: an empty value"},
      {{"--fewest", "--target-time-to-train", ""}, "--target-time-to-train: an empty value"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"search", plan};
    args.insert(args.end(), c.args.begin(), c.args.end());
    INFO(fmt::format("{}", fmt::join(c.args, " ")));
    const auto r = test::run_cli(args);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
  // The same value fixed twice, or a --fix among its --allow, is no contradiction.
  CHECK(test::run_cli({"search", plan, "--top", "1", "--jobs", "2", "--fix", "tp=2", "--fix",
                       "tp=2", "--allow", "tp=1,2"})
            .code == 0);
  // sweep: one key varied twice; a grid whose size overflows.
  const auto twice = test::run_cli(
      {"sweep", "--vary", "training.seq_len=2048,4096", "--vary", "training.seq_len=8192"});
  CHECK(twice.code == 2);
  CHECK(twice.out.empty());
  CHECK_THAT(twice.err, Catch::Contains("--vary: training.seq_len is varied twice"));
  std::vector<std::string> grid = {"sweep"};
  const std::string values = "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16";
  for (int i = 0; i < 17; ++i) {
    grid.push_back("--vary");
    grid.push_back("training.key" + std::to_string(i) + "=" + values);
  }
  const auto big = test::run_cli(grid);
  CHECK(big.code == 2);
  CHECK_THAT(big.err, Catch::Contains("more than 10000 points"));
}
