// Calibration from nccl-tests logs (docs/calibration.md): parsing real posted logs
// (tests/data/nccl-tests/SOURCES.md), the fit, the profile, and plan --calibration.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "collectives.hpp"
#include "helpers.hpp"
#include "trainledger/calibrate.hpp"
#include "trainledger/config.hpp"
#include "trainledger/text.hpp"

using namespace trainledger;

namespace {

std::string log_path(const std::string& name) {
  return test::source_path("tests/data/nccl-tests/" + name);
}

calibrate::Sweep parse(const std::string& name, const calibrate::ImportHints& hints = {}) {
  return calibrate::parse_nccl_tests(test::read_file(log_path(name)), name, hints);
}

std::string first_error(const std::string& name, const calibrate::ImportHints& hints = {}) {
  try {
    parse(name, hints);
  } catch (const config::ConfigError& e) {
    return e.diagnostics().front().to_string();
  }
  return "";
}

// Each line with a launcher's prefix.
std::string prefixed(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += prefix + line + "\n";
  return out;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("trainledger-test-" + name)).string();
}

// Two profiles imported from the test logs into `dir`: an intra-node one (8-rank send/recv, one
// node) and an inter-node one (a 4-node all-reduce), under the names given.
std::pair<std::string, std::string> two_profiles(const std::filesystem::path& dir,
                                                 const std::string& intra,
                                                 const std::string& inter) {
  const std::string d = test::source_path("tests/data/nccl-tests/");
  const std::string p1 = (dir / intra).string(), p2 = (dir / inter).string();
  REQUIRE(test::run_cli({"calibrate", "import", d + "a100-8gpu-sendrecv.txt", "--ranks", "8",
                         "--nodes", "1", "-o", p1})
              .code == 0);
  REQUIRE(test::run_cli({"calibrate", "import", d + "deepops-dgx-a100-4x8-all_reduce.txt",
                         "--nodes", "4", "-o", p2})
              .code == 0);
  return {p1, p2};
}

}  // namespace

TEST_CASE("nccl-tests: 2 × 8 H100 all-reduce, current format", "[calibrate]") {
  const calibrate::Sweep s = parse("a3mega-h100-2x8-all_reduce.txt");
  CHECK(s.kind == CollKind::all_reduce);
  CHECK(s.ranks == 16);
  CHECK(s.nodes == 2);
  CHECK(s.ranks_per_node() == 8);
  CHECK(s.gpu_name == "NVIDIA H100 80GB HBM3");
  CHECK(s.hosts == std::vector<std::string>{"ztan-mig-235z", "ztan-mig-gq73"});
  REQUIRE(s.points.size() == 31);
  // busbw recomputed from size and time: 8 GiB in 47,535 us × 2·15/16 = 338.8 GB/s (printed).
  CHECK(s.points.back().busbw / 1e9 == Approx(338.82).epsilon(0.001));
  const calibrate::Fit f = calibrate::fit_sweep(s);
  // B within 5 % of the large-message busbw; α among the small messages' times (123-159 us).
  CHECK(f.busbw / 1e9 == Approx(338.82).epsilon(0.05));
  CHECK(f.busbw / 1e9 == Approx(330.58).epsilon(0.001));  // the median of 2, 4 and 8 GiB
  CHECK(f.alpha_s * 1e6 > 123.0);
  CHECK(f.alpha_s * 1e6 < 159.4);
  CHECK_FALSE(f.alpha_extrapolated);
  // The model's time of the 8-byte message is the measured one within 10 %.
  CHECK(f.alpha_s / s.points.front().seconds == Approx(1).epsilon(0.1));
}

TEST_CASE("nccl-tests: launcher prefixes change nothing", "[calibrate]") {
  const std::string text = test::read_file(log_path("a3mega-h100-2x8-all_reduce.txt"));
  const calibrate::Fit plain = calibrate::fit_sweep(parse("a3mega-h100-2x8-all_reduce.txt"));
  for (const std::string prefix : {"[1,0]<stdout>:", "0: ", "  3: "}) {
    INFO(prefix);
    const calibrate::Fit f =
        calibrate::fit_sweep(calibrate::parse_nccl_tests(prefixed(text, prefix), "x.log", {}));
    CHECK(f.ranks == 16);
    CHECK(f.nodes == 2);
    CHECK(f.busbw == plain.busbw);
    CHECK(f.alpha_s == plain.alpha_s);
  }
}

TEST_CASE("nccl-tests: 4 DGX A100 all-reduce, older format without a device list", "[calibrate]") {
  // No devices, no command: the collective comes from the file name, the ranks from the
  // printed busbw/algbw ratio (191.05 / 98.61 = 2·31/32 → 32 ranks), the nodes from --nodes.
  CHECK_THAT(first_error("deepops-dgx-a100-4x8-all_reduce.txt"), Catch::Contains("give --nodes"));
  calibrate::ImportHints hints;
  hints.nodes = 4;
  const calibrate::Sweep s = parse("deepops-dgx-a100-4x8-all_reduce.txt", hints);
  CHECK(s.ranks == 32);
  CHECK(s.ranks_per_node() == 8);
  const calibrate::Fit f = calibrate::fit_sweep(s);
  CHECK(f.busbw / 1e9 == Approx(191.05).epsilon(0.05));
  // No message under 1 MiB: α from the line through 1 and 2 MiB (135.3 and 161.5 us).
  CHECK(f.alpha_extrapolated);
  CHECK(f.alpha_s * 1e6 == Approx(135.3 - 26.2).epsilon(0.01));
  // A wrong rank count is caught by the printed busbw.
  hints.ranks = 16;
  CHECK_THAT(first_error("deepops-dgx-a100-4x8-all_reduce.txt", hints),
             Catch::Contains("--ranks 16"));
}

TEST_CASE("nccl-tests: one-node send/recv needs its ranks, no latency from 128 MiB messages",
          "[calibrate]") {
  CHECK_THAT(first_error("a100-8gpu-sendrecv.txt"), Catch::Contains("give --ranks"));
  calibrate::ImportHints hints;
  hints.ranks = 8;
  hints.nodes = 1;
  const calibrate::Sweep s = parse("a100-8gpu-sendrecv.txt", hints);
  CHECK(s.kind == CollKind::send_recv);
  const calibrate::Fit f = calibrate::fit_sweep(s);
  CHECK(f.busbw / 1e9 == Approx(195.10).epsilon(0.05));
  CHECK_FALSE(f.alpha_measured);
  const calibrate::Profile p = calibrate::build_profile({s}, "t", "m", "2026-01-01T00:00:00Z");
  REQUIRE(p.cluster.size() == 1);
  CHECK(p.cluster[0].key == "intra_node_gather_bandwidth");
}

TEST_CASE("nccl-tests: bad logs are located errors", "[calibrate]") {
  auto error_of = [](const std::string& text, const std::string& name,
                     calibrate::ImportHints hints = {}) -> std::string {
    try {
      calibrate::parse_nccl_tests(text, name, hints);
    } catch (const config::ConfigError& e) {
      return e.diagnostics().front().to_string();
    }
    return "";
  };
  CHECK_THAT(error_of("hello\n", "all_reduce.log"), Catch::Contains("no nccl-tests result rows"));
  CHECK_THAT(error_of("# x\n", "run.log"), Catch::Contains("give --collective"));
  CHECK_THAT(error_of("./build/broadcast_perf -g 8\n", "run.log"),
             Catch::Contains("not a collective the planner models"));
  CHECK_THAT(error_of("all_reduce_perf\nall_gather_perf\n", "run.log"),
             Catch::Contains("several tests"));
  calibrate::ImportHints hints;
  hints.collective = "allreduce2";
  CHECK_THAT(error_of("x", "run.log", hints), Catch::Contains("unknown collective"));
  // Ranks on two GPU types.
  const std::string mixed =
      "all_reduce_perf\n"
      "#  Rank  0 Group  0 Pid 1 on a device  0 [0x1] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid 2 on a device  1 [0x2] NVIDIA A100-SXM4-80GB\n";
  CHECK_THAT(error_of(mixed, "run.log"), Catch::Contains("run.log:3"));
}

TEST_CASE("plan --calibration: measured links replace assumed ones", "[calibrate][cli]") {
  const std::string profile = temp_path("a3mega.toml");
  std::filesystem::remove(profile);
  const auto imported = test::run_cli(
      {"calibrate", "import", log_path("a3mega-h100-2x8-all_reduce.txt"), "-o", profile});
  REQUIRE(imported.code == 0);
  CHECK_THAT(imported.out, Catch::Contains("cluster.inter_node_bandwidth = \"41.32 GB/s\""));
  // No temporary file is left beside the profile.
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    CHECK(e.path().filename().string().find("trainledger-test-a3mega.toml.tmp") ==
          std::string::npos);

  const auto plain = test::run_cli({"plan", "--format", "json"});
  const auto measured = test::run_cli({"plan", "--format", "json", "--calibration", profile});
  REQUIRE(plain.code == 0);
  REQUIRE(measured.code == 0);
  const auto j = nlohmann::json::parse(measured.out);
  // The links, and NCCL's Simple protocol and the low-latency share fitted to the sweep's ramp.
  CHECK(j["calibration"]["measured"] ==
        nlohmann::json::array({"cluster.intra_node_latency", "cluster.inter_node_bandwidth",
                               "cluster.inter_node_latency", "cluster.inter_node_simple_latency",
                               "cluster.inter_node_ll_share"}));
  CHECK(j["origins"]["cluster.inter_node_bandwidth"].get<std::string>().find(profile) == 0);
  std::string kind;
  for (const auto& i : j["time"]["items"])
    if (i["id"] == "time.comm_exposed") kind = i["kind"];
  CHECK(kind == "measured");
  const auto assumed = nlohmann::json::parse(plain.out);
  for (const auto& i : assumed["time"]["items"])
    if (i["id"] == "time.comm_exposed") CHECK(i["kind"] == "assumed");
  // --set still wins over the profile.
  const auto set = test::run_cli({"plan", "--format", "json", "--calibration", profile, "--set",
                                  "cluster.inter_node_bandwidth=\"10 GB/s\""});
  REQUIRE(set.code == 0);
  CHECK(
      nlohmann::json::parse(set.out)["calibration"]["measured"] ==
      nlohmann::json::array({"cluster.intra_node_latency", "cluster.inter_node_latency",
                             "cluster.inter_node_simple_latency", "cluster.inter_node_ll_share"}));
  // The table says which numbers are measured and which are still assumed.
  const auto table = test::run_cli({"plan", "--calibration", profile});
  CHECK_THAT(table.out,
             Catch::Contains("measured: cluster.intra_node_latency, cluster.inter_node_bandwidth"));
  CHECK_THAT(table.out, Catch::Contains("still assumed: cluster.intra_node_bandwidth"));
  // check takes it too.
  CHECK(test::run_cli({"check", "default", "--calibration", profile}).code == 0);
  // A profile of other GPUs is an error.
  const auto a100 =
      test::run_cli({"plan", "--calibration", profile, "--set", "cluster.gpu=\"a100-sxm4-80gb\""});
  CHECK(a100.code == 2);
  CHECK_THAT(a100.err, Catch::Contains("measured on \"NVIDIA H100 80GB HBM3\""));
  std::filesystem::remove(profile);
}

TEST_CASE("plan --calibration: a profile sets only measured keys", "[calibrate][cli]") {
  const std::string profile = temp_path("bad-profile.toml");
  {
    std::ofstream f(profile);
    f << "[profile]\nformat = 1\n[cluster]\ngpu_memory = \"90 GiB\"\nintra_node_latency = "
         "\"-3 us\"\n";
  }
  const auto r = test::run_cli({"plan", "--calibration", profile});
  CHECK(r.code == 2);
  CHECK_THAT(r.err,
             Catch::Contains("bad-profile.toml:4:1: cluster.gpu_memory is not a measured key"));
  CHECK_THAT(r.err, Catch::Contains("bad-profile.toml:5"));
  CHECK(test::run_cli({"plan", "--calibration", temp_path("missing.toml")}).code == 2);
  std::filesystem::remove(profile);
}

TEST_CASE("calibrate import: failures exit 2 or 3 and leave no profile", "[calibrate][cli]") {
  const std::string out = temp_path("never.toml");
  std::filesystem::remove(out);
  const auto bad = test::run_cli(
      {"calibrate", "import", test::source_path("tests/data/bad-value.toml"), "-o", out});
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("give --collective"));
  CHECK_FALSE(std::filesystem::exists(out));
  const auto unwritable =
      test::run_cli({"calibrate", "import", log_path("a3mega-h100-2x8-all_reduce.txt"), "-o",
                     temp_path("no-such-dir/p.toml")});
  CHECK(unwritable.code == 3);
  CHECK_FALSE(std::filesystem::exists(temp_path("no-such-dir")));
  // Without -o the profile goes to standard output, and it loads.
  const auto printed =
      test::run_cli({"calibrate", "import", log_path("a3mega-h100-2x8-all_reduce.txt")});
  REQUIRE(printed.code == 0);
  CHECK_THAT(printed.out, Catch::StartsWith("# trainledger calibration profile"));
  CHECK_THAT(printed.out, Catch::Contains("[[sweep]]"));
}

TEST_CASE("calibrate compare: memory stats and step time against the plan", "[calibrate][cli]") {
  const std::string dir = test::source_path("tests/data/memory-stats/");
  const auto r = test::run_cli({"calibrate", "compare", "--memory-stats", dir + "rank0.json",
                                dir + "rank63.json", "--step-time", "40", "--format", "json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "trainledger.compare/2");
  REQUIRE(j["memory"].size() == 2);
  // The default plan (tp 8, pp 4, dp 2, placement tp, cp, dp, pp): rank 63 is on stage 3.
  CHECK(j["memory"][0]["stage"] == 0);
  CHECK(j["memory"][1]["stage"] == 3);
  const auto plain = test::run_cli({"plan", "--format", "json"});
  const auto p = nlohmann::json::parse(plain.out);
  double predicted0 = 0, predicted3 = 0, step = 0;
  for (const auto& st : p["memory"]["stages"]) {
    if (st["stage"] == 0) predicted0 = st["predicted"]["max_memory_allocated_bytes"];
    if (st["stage"] == 3) predicted3 = st["predicted"]["max_memory_allocated_bytes"];
  }
  for (const auto& i : p["time"]["items"])
    if (i["id"] == "time.step") step = i["value"];
  REQUIRE(predicted0 > 0);
  CHECK(j["memory"][0]["allocated_bytes"]["predicted"].get<double>() == Approx(predicted0));
  CHECK(j["memory"][0]["allocated_bytes"]["error"].get<double>() ==
        Approx((predicted0 - 60129542144.0) / 60129542144.0));
  CHECK(j["memory"][1]["allocated_bytes"]["error"].get<double>() ==
        Approx((predicted3 - 53687091200.0) / 53687091200.0));
  CHECK(j["step_time"]["error"].get<double>() == Approx((step - 40) / 40));
  // Rank 63: 3 allocator retries and reserved 40 % over allocated are named as causes.
  const std::string causes = j["memory"][1]["causes"].dump();
  CHECK_THAT(causes, Catch::Contains("3 allocator retries"));
  CHECK_THAT(causes, Catch::Contains("fragmentation"));
  // Without --step-time, the files' step_time (the slowest rank's).
  const auto from_file = test::run_cli(
      {"calibrate", "compare", "--memory-stats", dir + "rank63.json", "--format", "json"});
  REQUIRE(from_file.code == 0);
  CHECK(nlohmann::json::parse(from_file.out)["step_time"]["measured_s"] == 42.0);
  // A bare dump says no rank: fine without pipeline stages, an error with them.
  const auto bare = test::run_cli({"calibrate", "compare", "--memory-stats", dir + "single.json"});
  CHECK(bare.code == 2);
  CHECK_THAT(bare.err, Catch::Contains("give \"rank\" or \"stage\""));
  CHECK(test::run_cli({"calibrate", "compare", "--memory-stats", dir + "single.json", "--set",
                       "parallel.pp=1", "--set", "parallel.dp=8"})
            .code == 0);
  // Not memory stats: a located error.
  const auto wrong = test::run_cli(
      {"calibrate", "compare", "--memory-stats", test::source_path("tests/data/bad-value.toml")});
  CHECK(wrong.code == 2);
  CHECK_THAT(wrong.err, Catch::Contains("not JSON"));
}

namespace {

// A sweep as nccl-tests -J writes it (src/util.cu of nccl-tests 2.19: "args", "config" with one
// "devices" entry per process, "results" with out_of_place/in_place timings).
nlohmann::json as_json_output(const calibrate::Sweep& s, int gpus_per_process, double nwrong = 0) {
  nlohmann::json devices = nlohmann::json::array();
  const int rpn = s.ranks_per_node();
  for (int r = 0; r < s.ranks; r += gpus_per_process)
    devices.push_back({{"rank", r},
                       {"group", 0},
                       {"pid", 1000 + r},
                       {"hostname", s.hosts[static_cast<std::size_t>(r / rpn)]},
                       {"device", r % rpn},
                       {"device_hex", "0000:00:00"},
                       {"device_info", s.gpu_name}});
  nlohmann::json results = nlohmann::json::array();
  for (const calibrate::Point& p : s.points) {
    const double us = p.seconds * 1e6;
    const nlohmann::json t = {{"time", us},
                              {"alg_bw", p.bytes / p.seconds / 1e9},
                              {"bus_bw", p.busbw / 1e9},
                              {"nwrong", nwrong}};
    results.push_back({{"size", p.bytes},
                       {"count", p.bytes / 4},
                       {"type", "float"},
                       {"redop", "sum"},
                       {"root", "    -1"},
                       {"out_of_place", t},
                       {"in_place", t},
                       {"actual_iterations", 20},
                       {"experiment_name", ""}});
  }
  return {
      {"version", 1},
      {"start_time", "2025-01-01 00:00:00"},
      {"args", {"./build/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-J", "out.json"}},
      {"env", nlohmann::json::array()},
      {"nccl_version", 22703},
      {"config",
       {{"nthreads", 1}, {"ngpus", gpus_per_process}, {"minimum_bytes", 8}, {"devices", devices}}},
      {"results", results},
      {"end_time", "2025-01-01 00:01:00"}};
}

}  // namespace

TEST_CASE("nccl-tests -J JSON: the same sweep as the text table", "[calibrate]") {
  // No public -J file was found; the public 2 × 8 H100 log is written in -J's layout.
  const calibrate::Sweep text = parse("a3mega-h100-2x8-all_reduce.txt");
  for (int gpus_per_process : {1, 8}) {
    INFO("gpus per process " << gpus_per_process);
    const calibrate::Sweep json =
        calibrate::parse_nccl_tests(as_json_output(text, gpus_per_process).dump(1), "run.json", {});
    CHECK(json.kind == CollKind::all_reduce);
    CHECK(json.ranks == 16);
    CHECK(json.nodes == 2);
    CHECK(json.hosts == text.hosts);
    CHECK(json.gpu_name == "NVIDIA H100 80GB HBM3");
    REQUIRE(json.points.size() == text.points.size());
    for (std::size_t i = 0; i < json.points.size(); ++i) {
      CHECK(json.points[i].bytes == text.points[i].bytes);
      CHECK(json.points[i].seconds == Approx(text.points[i].seconds).epsilon(1e-12));
    }
    const calibrate::Fit a = calibrate::fit_sweep(json), b = calibrate::fit_sweep(text);
    CHECK(a.busbw == Approx(b.busbw).epsilon(1e-12));
    CHECK(a.alpha_s == Approx(b.alpha_s).epsilon(1e-12));
  }
  // Wrong results, a file that is not -J output, a broken file: located errors.
  auto error_of = [](const std::string& t) {
    try {
      calibrate::parse_nccl_tests(t, "run.json", {});
    } catch (const config::ConfigError& e) {
      return e.diagnostics().front().to_string();
    }
    return std::string();
  };
  CHECK_THAT(error_of(as_json_output(text, 1, 3).dump()),
             Catch::Contains("results/0: 3 wrong elements"));
  CHECK_THAT(error_of("{\"version\": 1}"), Catch::Contains("without a \"results\" list"));
  CHECK_THAT(error_of("{\"results\": [1, 2"), Catch::Contains("not valid JSON"));
  CHECK_THAT(error_of("{\"results\": [{\"size\": 8}]}"),
             Catch::Contains("results/0: neither out_of_place nor in_place"));
  // Through the command: the profile is the text log's.
  const std::string path = temp_path("run-all_reduce.json");
  {
    std::ofstream f(path);
    f << as_json_output(text, 1).dump(1);
  }
  const auto r = test::run_cli({"calibrate", "import", path});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("inter_node_bandwidth = \"41.32 GB/s\""));
  std::filesystem::remove(path);
}

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-calibrate-cli" / name;
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("calibrate import takes --ranks and --nodes per log", "[calibrate][cli]") {
  const std::string d = test::source_path("tests/data/nccl-tests/");
  const auto dir = scratch("per-log");
  const std::string out = (dir / "both.toml").string();
  // An intra-node send/recv log (8 ranks, 1 node) and a 4-node all-reduce log (32 ranks): one
  // value for each. One value for both could not describe them.
  const auto one = test::run_cli({"calibrate", "import", d + "a100-8gpu-sendrecv.txt",
                                  d + "deepops-dgx-a100-4x8-all_reduce.txt", "--ranks", "8",
                                  "--nodes", "1", "-o", out});
  CHECK(one.code == 2);
  const auto both = test::run_cli({"calibrate", "import", d + "a100-8gpu-sendrecv.txt",
                                   d + "deepops-dgx-a100-4x8-all_reduce.txt", "--ranks", "8,32",
                                   "--nodes", "1,4", "-o", out});
  INFO(both.err);
  REQUIRE(both.code == 0);
  const std::string profile = slurp(out);
  CHECK(profile.find("intra_node_gather_bandwidth") != std::string::npos);
  CHECK(profile.find("inter_node_bandwidth") != std::string::npos);
  // A count that is neither one nor one per log is refused, naming the option.
  const auto three =
      test::run_cli({"calibrate", "import", d + "a100-8gpu-sendrecv.txt",
                     d + "deepops-dgx-a100-4x8-all_reduce.txt", "--ranks", "8,32,4"});
  CHECK(three.code == 2);
  CHECK(three.err ==
        "trainledger: error: --ranks: 3 values for 2 logs: give one value for "
        "every log, or one per log in the logs' order\n");
}

TEST_CASE("several calibration profiles: a later one wins and each key says where it came from",
          "[calibrate][cli]") {
  const std::string d = test::source_path("tests/data/nccl-tests/");
  const auto dir = scratch("profiles");
  const auto [p1, p2] = two_profiles(dir, "intra.toml", "inter.toml");
  const std::string p3 = (dir / "inter-faster.toml").string();
  // The same profile with another inter-node bandwidth.
  std::string text = slurp(p2);
  const std::size_t at = text.find("inter_node_bandwidth = \"");
  REQUIRE(at != std::string::npos);
  const std::size_t v = at + std::string("inter_node_bandwidth = \"").size();
  text.replace(v, text.find('"', v) - v, "30 GB/s");
  std::ofstream(p3) << text;
  const auto json_of = [&](const std::vector<std::string>& profiles) {
    std::vector<std::string> args = {"plan", "--format", "json"};
    for (const std::string& p : profiles) {
      args.push_back("--calibration");
      args.push_back(p);
    }
    const auto r = test::run_cli(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
  };
  const auto j = json_of({p1, p2, p3});
  const auto& cal = j["calibration"];
  REQUIRE(cal["measured"].size() == cal["measured_from"].size());
  std::map<std::string, std::string> from;
  for (std::size_t i = 0; i < cal["measured"].size(); ++i)
    from[cal["measured"][i]] = cal["measured_from"][i];
  CHECK(from["cluster.intra_node_gather_bandwidth"] == p1);
  CHECK(from["cluster.inter_node_bandwidth"] == p3);
  CHECK(from["cluster.inter_node_latency"] == p3);
  CHECK(j["inputs"]["cluster"]["inter_node_bandwidth"].get<double>() == Approx(30e9));
  // In the other order the earlier profile's value is the one that stays.
  const auto k = json_of({p1, p3, p2});
  CHECK(k["inputs"]["cluster"]["inter_node_bandwidth"].get<double>() == Approx(23.78e9));
  // The table names each key's profile, and warns that neither names its GPU.
  const auto table = test::run_cli({"plan", "--calibration", p1, "--calibration", p3});
  CHECK(table.out.find("cluster.inter_node_bandwidth (from " + p3 + ")") != std::string::npos);
  CHECK(table.out.find("the calibration profile " + p1 + " names no GPU") != std::string::npos);
  // explain shows where the bandwidth it used came from.
  const auto ex = test::run_cli({"explain", "comm.pp", "--calibration", p1, "--calibration", p3});
  REQUIRE(ex.code == 0);
  CHECK(ex.out.find("inputs   cluster.inter_node_bandwidth = \"30 GB/s\" (measured: " + p3) !=
        std::string::npos);
  // A profile that names its GPU is checked, not warned about.
  const std::string named = (dir / "named.toml").string();
  REQUIRE(test::run_cli({"calibrate", "import", d + "a100-8gpu-sendrecv.txt", "--ranks", "8",
                         "--nodes", "1", "--gpu-name", "NVIDIA H100 80GB HBM3", "-o", named})
              .code == 0);
  const auto ok = test::run_cli({"plan", "--calibration", named});
  CHECK(ok.code == 0);
  CHECK(ok.out.find("names no GPU") == std::string::npos);
  const auto other =
      test::run_cli({"plan", "--calibration", named, "--set", "cluster.gpu=\"a100-sxm4-80gb\""});
  CHECK(other.code == 2);
  CHECK(other.err.find("a profile applies only to the GPUs it measured") != std::string::npos);
}

TEST_CASE("calibrate compare refuses a rank the plan does not have, counters are integers",
          "[calibrate][cli]") {
  const auto dir = scratch("compare");
  const std::string file = (dir / "rank99.json").string();
  std::ofstream(file) << "{\"rank\": 99, \"memory_stats\": {\"allocated_bytes.all.peak\": "
                         "53687091200, \"reserved_bytes.all.peak\": 75161927680}}\n";
  const auto r = test::run_cli({"calibrate", "compare", "--memory-stats", file});
  CHECK(r.code == 2);
  CHECK(r.err.find(file + ":1:") != std::string::npos);
  CHECK(r.err.find("\"rank\": 99 is not a rank of the plan, which has 64 (0 to 63)") !=
        std::string::npos);
  const std::string d = test::source_path("tests/data/memory-stats/");
  const auto ok = test::run_cli(
      {"calibrate", "compare", "--memory-stats", d + "rank63.json", "--format", "json"});
  REQUIRE(ok.code == 0);
  const auto j = nlohmann::json::parse(ok.out);
  CHECK(j["memory"][0]["num_alloc_retries"].is_number_integer());
  CHECK(j["memory"][0]["num_alloc_retries"] == 3);
  CHECK(j["memory"][0]["num_ooms"].is_number_integer());
  CHECK(j["memory"][0]["rank"] == 63);
  // A rank and a stage that disagree under the plan's placement are refused.
  const std::string both = (dir / "both.json").string();
  std::ofstream(both) << "{\"rank\": 63, \"stage\": 0, \"memory_stats\": "
                         "{\"allocated_bytes.all.peak\": 53687091200, "
                         "\"reserved_bytes.all.peak\": 75161927680}}\n";
  const auto disagree = test::run_cli({"calibrate", "compare", "--memory-stats", both});
  CHECK(disagree.code == 2);
  CHECK(disagree.err.find("\"stage\": 0 but rank 63 is on stage 3") != std::string::npos);
}

TEST_CASE("a profile path with a backtick stays code in the Markdown report", "[calibrate][cli]") {
  const auto [p1, p2] = two_profiles(scratch("backtick"), "intra.toml", "x`<img src=x>`.toml");
  const auto md =
      test::run_cli({"plan", "--format", "markdown", "--calibration", p1, "--calibration", p2});
  REQUIRE(md.code == 0);
  CHECK(md.out.find("(from " + text::markdown_code(p2) + ")") != std::string::npos);
}

TEST_CASE("a rank's pipeline stage under every placement order", "[calibrate]") {
  PlanInput in;  // only the layout matters
  in.parallel.tp = 2;
  in.parallel.cp = 1;
  in.parallel.dp = 3;
  in.parallel.pp = 4;
  // tp-cp-dp-pp (Megatron-Core's default): stage s holds ranks 6s to 6s + 5.
  in.parallel.placement = {"tp", "cp", "dp", "pp"};
  CHECK(stage_of_rank(in, 0) == 0);
  CHECK(stage_of_rank(in, 5) == 0);
  CHECK(stage_of_rank(in, 6) == 1);
  CHECK(stage_of_rank(in, 23) == 3);
  // tp-cp-pp-dp: the stages repeat every tp = 2 ranks within each replica of 8.
  in.parallel.placement = {"tp", "cp", "pp", "dp"};
  CHECK(stage_of_rank(in, 1) == 0);
  CHECK(stage_of_rank(in, 2) == 1);
  CHECK(stage_of_rank(in, 7) == 3);
  CHECK(stage_of_rank(in, 8) == 0);
  CHECK(stage_of_rank(in, 23) == 3);
}

TEST_CASE(
    "a profile reproduces the sweep it came from, a tree all-reduce is capped at the line "
    "rate",
    "[calibrate]") {
  // Google Cloud A3 Mega: 2 nodes × 8 H100, one 200 Gb/s NIC per GPU (25 GB/s). NCCL's
  // all-reduce across them reaches 330.6 GB/s busbw, 41.3 GB/s per GPU: more than a ring's NICs
  // carry (a tree sends each node's reduced half once).
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tl-reproduce";
  std::filesystem::create_directories(dir);
  const std::string profile = (dir / "a3mega.toml").string();
  const std::string log = log_path("a3mega-h100-2x8-all_reduce.txt");
  REQUIRE(test::run_cli({"calibrate", "import", log, "-o", profile}).code == 0);
  config::LoadOptions o;
  o.sets = {"model.preset=\"llama-3.1-8b\"",
            "cluster.gpu=\"h100-sxm5-80gb\"",
            "cluster.nodes=2",
            "parallel.tp=1",
            "parallel.pp=1",
            "parallel.dp=16"};
  o.calibration = {profile};
  const PlanInput in = config::load_default_plan(o).input;
  const Group g = group_of(in, "dp", 16);
  REQUIRE(g.nodes() == 2);
  // α + volume/B with the profile's keys gives back the log's small- and large-message times
  // (α is the median of the messages up to 64 KiB, B the median busbw of the largest quarter).
  const calibrate::Sweep s = parse("a3mega-h100-2x8-all_reduce.txt");
  // The planner's time of a call: NCCL's tuner picks among the algorithms (a ring or a tree).
  auto time_of = [&](double bytes) {
    return nccl_calls_time<Num>(in, CollKind::all_reduce, g, Num::constant(bytes), Num::constant(1))
        .time.value();
  };
  // The profile's latencies hold NCCL's own pick at these sizes: the planner keeps the ring it
  // fitted them to (a tree on the same per-step latencies would halve the small messages).
  CHECK(
      nccl_calls_time<Num>(in, CollKind::all_reduce, g, Num::constant(8), Num::constant(1)).algo ==
      Algo::ring);
  // From 1 MiB up the profile's two protocols (LL at α and its fitted share of B, Simple at its
  // fitted latency and B) give back every size within 10 % (α + volume/B alone: 39-77 % under
  // at 8-16 MiB).
  for (const calibrate::Point& p : s.points) {
    INFO(p.bytes << " B: measured " << p.seconds << " s, planned " << time_of(p.bytes) << " s");
    if (p.bytes <= 65536) CHECK(time_of(p.bytes) == Approx(p.seconds).epsilon(0.25));
    if (p.bytes >= s.points.back().bytes / 4)
      CHECK(time_of(p.bytes) == Approx(p.seconds).epsilon(0.05));
    if (p.bytes >= 1 << 20) CHECK(time_of(p.bytes) == Approx(p.seconds).epsilon(0.10));
  }
  // Without the fitted protocol keys (one protocol, α + volume/B) the mid sizes are far under.
  config::LoadOptions one = o;
  one.sets.push_back("cluster.inter_node_simple_latency=\"0 us\"");
  one.sets.push_back("cluster.intra_node_simple_latency=\"0 us\"");
  const PlanInput plain_in = config::load_default_plan(one).input;
  const double mib16 = 16 << 20;
  const double measured16 = 977.6e-6;  // the log's 16 MiB all-reduce
  CHECK(calls_time<Num>(plain_in, CollKind::all_reduce, group_of(plain_in, "dp", 16),
                        Num::constant(mib16), Num::constant(1))
            .value() < 0.5 * measured16);
  CHECK(time_of(mib16) == Approx(measured16).epsilon(0.10));
  // The line rate caps what rings, sends and all-to-alls get from that all-reduce.
  const auto capped = test::run_cli({"calibrate", "import", log, "--nic-rate", "200 Gb/s"});
  REQUIRE(capped.code == 0);
  CHECK_THAT(capped.out, Catch::Contains("inter_node_bandwidth = \"25.00 GB/s\""));
  CHECK_THAT(capped.out, Catch::Contains("NCCL ran it as a tree"));
  const auto plain = test::run_cli({"calibrate", "import", log});
  CHECK_THAT(plain.out, Catch::Contains("give --nic-rate"));
  CHECK(test::run_cli({"calibrate", "import", log, "--nic-rate", "fast"}).code == 2);
  std::filesystem::remove_all(dir);
}
