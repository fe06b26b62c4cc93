// calibrate probe (docs/calibration.md#probe): the MPI backend end to end under mpirun (probe →
// fit → profile → plan --calibration), topology from host names, failures that end every rank
// with exit 3 and leave no profile, the torchrun-style rendezvous, the NCCL backend without a GPU.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "helpers.hpp"
#include "probe.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace trainledger;

namespace {

struct Proc {
  int code = -1;
  std::string out;  // stdout and stderr
  double seconds = 0;
};

Proc sh(const std::string& cmd) {
  Proc p;
  const auto t0 = std::chrono::steady_clock::now();
  FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) p.out.append(buf, n);
  const int status = ::pclose(f);
  p.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

// Why the MPI tests cannot run here; empty when they can.
std::string mpi_missing() {
  const auto b = probe::available_backends();
  if (std::find(b.begin(), b.end(), "mpi") == b.end())
    return "this build has no MPI backend (libopenmpi-dev was not found)";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) return "no mpirun (openmpi-bin)";
  return "";
}

// mpirun as the tests need it: as root when the tests run as root, more ranks than cores, shared
// memory without ptrace (containers), OpenMPI's own allocations not reported as leaks.
std::string mpirun(int ranks) {
  return "ASAN_OPTIONS=detect_leaks=0 mpirun --allow-run-as-root --oversubscribe --mca "
         "btl_vader_single_copy_mechanism none -np " +
         std::to_string(ranks) + " ";
}

const std::string k_bin = TRAINLEDGER_BINARY;
const std::string k_small = " --backend mpi --min-bytes 8B --max-bytes 256KiB --warmup 1 --iters 3";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("trainledger-probe-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// One app context of an MPMD mpirun line whose ranks each write their exit status to
// `dir`/rank-R. Each rank runs in a session of its own under a recorder shell, so that the
// launcher's SIGKILL of the context's process group (which follows its SIGTERM) cannot stop the
// recorder before it writes; the context's shell passes the launcher's SIGTERM on to the rank.
std::string recorded(const std::string& dir, int np, const std::string& cmd) {
  const std::string rank = "trap : TERM INT; " + cmd + "; rc=\\$?; echo \\$rc > " + dir +
                           "/rank-\\$OMPI_COMM_WORLD_RANK; exit \\$rc";
  return "-np " + std::to_string(np) + " sh -c 'setsid sh -c \"" + rank +
         "\" & c=$!; trap \"kill -TERM -$c\" TERM INT; wait $c; rc=$?; "
         "if [ $rc -gt 128 ]; then wait $c; rc=$?; fi; exit $rc' ";
}

// The exit status each of `ranks` wrote to `dir` (-1: none), waiting for the recorders (they
// outlive mpirun by a moment).
std::vector<int> statuses(const std::string& dir, const std::vector<int>& ranks) {
  std::vector<int> v(ranks.size(), -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const std::filesystem::path f =
          std::filesystem::path(dir) / ("rank-" + std::to_string(ranks[i]));
      const std::string text = std::filesystem::exists(f) ? test::read_file(f.string()) : "";
      if (text.find('\n') == std::string::npos) {
        all = false;
        continue;
      }
      v[i] = std::atoi(text.c_str());
    }
    if (all || std::chrono::steady_clock::now() > deadline) return v;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

TEST_CASE("calibrate probe: MPI on 4 ranks → profile → plan --calibration turns items measured",
          "[probe]") {
  if (const std::string why = mpi_missing(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string profile = temp_path("mpi.toml");
  std::filesystem::remove(profile);
  const Proc p = sh(mpirun(4) + k_bin + " calibrate probe" + k_small + " -o " + profile);
  INFO(p.out);
  REQUIRE(p.code == 0);
  CHECK_THAT(p.out, Catch::Contains("wrote " + profile));
  const std::string text = test::read_file(profile);
  CHECK_THAT(text, Catch::Contains("backend = \"mpi\""));
  CHECK_THAT(text, Catch::Contains("launcher = \"mpi\""));
  CHECK_THAT(text, Catch::Contains("gpu_name = \"host CPU (MPI)\""));
  CHECK_THAT(text, Catch::Contains("method = \"calibrate probe (mpi backend, 4 ranks on 1 node"));
  // Five collectives on the world (one node), each a sweep of 8 B … 256 KiB.
  CHECK(count(text, "[[sweep]]") == 5);
  CHECK(count(text, "[[fit]]") == 5);
  CHECK(count(text, "ranks = 4") == 10);
  CHECK_THAT(text, Catch::Contains("bytes = [8, 16, 32,"));   // all-reduce: whole floats
  CHECK_THAT(text, Catch::Contains("bytes = [16, 32, 64,"));  // all-gather: a float per rank
  for (const char* key :
       {"intra_node_bandwidth = ", "intra_node_latency = ", "intra_node_gather_bandwidth = "})
    CHECK_THAT(text, Catch::Contains(key));

  // The profile drives a plan on these "GPUs": the measured keys replace the assumed ones.
  const auto plan = test::run_cli({"plan", "--format", "json", "--calibration", profile, "--set",
                                   "cluster.gpu_name=\"host CPU (MPI)\""});
  INFO(plan.err);
  REQUIRE(plan.code == 0);
  const auto j = nlohmann::json::parse(plan.out);
  CHECK(
      j["calibration"]["measured"] ==
      nlohmann::json::array({"cluster.intra_node_bandwidth", "cluster.intra_node_gather_bandwidth",
                             "cluster.intra_node_latency"}));
  std::string kind;
  for (const auto& i : j["time"]["items"])
    if (i["id"] == "time.comm_exposed") kind = i["kind"];
  CHECK(kind == "measured");
  // A profile of CPUs does not apply to a plan of GPUs.
  CHECK(test::run_cli({"plan", "--calibration", profile}).code == 2);
  std::filesystem::remove(profile);
}

TEST_CASE("calibrate probe: two nodes by host name sweep one GPU per node, a node and the world",
          "[probe]") {
  if (const std::string why = mpi_missing(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string profile = temp_path("nodes.toml");
  std::filesystem::remove(profile);
  const std::string args = " calibrate probe" + k_small + " --collectives all_reduce -o " + profile;
  // Two app contexts: ranks 0-1 on host "node-a", ranks 2-3 on "node-b".
  const Proc p =
      sh("ASAN_OPTIONS=detect_leaks=0 mpirun --allow-run-as-root --oversubscribe --mca "
         "btl_vader_single_copy_mechanism none -np 2 env TRAINLEDGER_PROBE_HOSTNAME=node-a " +
         k_bin + args + " : -np 2 env TRAINLEDGER_PROBE_HOSTNAME=node-b " + k_bin + args);
  INFO(p.out);
  REQUIRE(p.code == 0);
  const std::string text = test::read_file(profile);
  CHECK_THAT(text, Catch::Contains("hosts = [\"node-a\", \"node-b\"]"));
  CHECK_THAT(text, Catch::Contains("sources = [\"probe:one-gpu-per-node\", \"probe:intra-node\", "
                                   "\"probe:world\"]"));
  // The world's all-reduce across the nodes sets the inter-node keys (busbw over 2 ranks per
  // node); the node's all-reduce sets the intra-node ones.
  CHECK_THAT(text, Catch::Contains("inter_node_bandwidth = "));
  CHECK_THAT(text, Catch::Contains("over 4 ranks on 2 nodes / 2 ranks per node (probe:world)"));
  CHECK_THAT(text, Catch::Contains("intra_node_bandwidth = "));
  CHECK_THAT(text, Catch::Contains("all-reduce busbw over 2 ranks (probe:intra-node)"));
  std::filesystem::remove(profile);
}

TEST_CASE("calibrate probe: a hung, failing or killed rank ends the job, no profile written",
          "[probe]") {
  if (const std::string why = mpi_missing(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string profile = temp_path("fault.toml");
  std::filesystem::remove(profile);
  const std::string probe = k_bin + " calibrate probe" + k_small + " -o " + profile;
  SECTION("a rank that hangs: every rank's watchdog ends it with exit 3") {
    const Proc p = sh("TRAINLEDGER_PROBE_FAULT=hang:2 " + mpirun(4) + probe + " --timeout 5");
    INFO(p.out);
    CHECK(p.code == 3);
    // Rank 2 hangs before its first all-reduce; the others wait in it.
    CHECK_THAT(p.out, Catch::Contains("no progress for 5 s in "));
    CHECK_THAT(p.out, Catch::Contains("exit 3, no profile written"));
    CHECK(p.seconds < 60);
  }
  SECTION("a rank that fails: MPI_Abort ends every rank with exit 3") {
    const Proc p = sh("TRAINLEDGER_PROBE_FAULT=fail:1 " + mpirun(4) + probe);
    INFO(p.out);
    CHECK(p.code == 3);
    CHECK_THAT(p.out, Catch::Contains("rank 1: injected failure"));
    CHECK(p.seconds < 60);
  }
  SECTION("a rank killed by a signal: the launcher ends the others") {
    const Proc p = sh("TRAINLEDGER_PROBE_FAULT=kill:1 " + mpirun(4) + probe + " --timeout 20");
    INFO(p.out);
    CHECK(p.code != 0);
    CHECK(p.seconds < 60);
  }
  CHECK_FALSE(std::filesystem::exists(profile));
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
    CHECK(e.path().filename().string().find("fault.toml.tmp") == std::string::npos);
}

TEST_CASE("calibrate probe: the NCCL backend without a GPU is exit 3 with no profile", "[probe]") {
  if (std::system("command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1") == 0) {
    WARN("skipped: this machine has a GPU");
    return;
  }
  const std::string profile = temp_path("nogpu.toml");
  const Proc p =
      sh("ASAN_OPTIONS=detect_leaks=0 " + k_bin + " calibrate probe --backend nccl -o " + profile);
  INFO(p.out);
  CHECK(p.code == 3);
  const auto b = probe::available_backends();
  if (std::find(b.begin(), b.end(), "nccl") != b.end())
    CHECK_THAT(p.out, Catch::Contains("no GPU visible") || Catch::Contains("cannot load"));
  else
    CHECK_THAT(p.out, Catch::Contains("this build has no NCCL backend"));
  CHECK_THAT(p.out, Catch::Contains("exit 3, no profile written"));
  CHECK_FALSE(std::filesystem::exists(profile));
}

TEST_CASE("calibrate probe: under torchrun the MPI backend is refused, exit 3", "[probe]") {
  const Proc p =
      sh("ASAN_OPTIONS=detect_leaks=0 RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "
         "MASTER_PORT=29500 " +
         k_bin + " calibrate probe --backend mpi");
  INFO(p.out);
  CHECK(p.code == 3);
  CHECK_THAT(p.out, Catch::Contains("the MPI backend needs an MPI launcher (mpirun or srun)"));
}

TEST_CASE("calibrate probe: bad options are exit 2 before any process group", "[probe][cli]") {
  auto r = test::run_cli({"calibrate", "probe", "--collectives", "all_reduce,broadcast"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("unknown collective \"broadcast\""));
  r = test::run_cli({"calibrate", "probe", "--min-bytes", "2 MiB", "--max-bytes", "1 MiB"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--min-bytes ≤ --max-bytes"));
  r = test::run_cli({"calibrate", "probe", "--backend", "gloo"});
  CHECK(r.code == 2);
  r = test::run_cli({"calibrate", "probe", "missing-plan.toml"});
  CHECK(r.code == 2);
}

TEST_CASE("calibrate probe: the torchrun-style rendezvous gathers every rank's bytes", "[probe]") {
  const int port = 20000 + static_cast<int>(::getpid() % 20000);
  const int n = 4;
  std::vector<std::future<std::vector<std::string>>> ranks;
  for (int r = 0; r < n; ++r)
    ranks.push_back(std::async(std::launch::async, [=] {
      return probe::tcp_allgather("127.0.0.1", port, r, n, "host-" + std::to_string(r), 20);
    }));
  for (int r = 0; r < n; ++r) {
    const auto all = ranks[static_cast<std::size_t>(r)].get();
    CHECK(all == std::vector<std::string>{"host-0", "host-1", "host-2", "host-3"});
  }
  // A rank that never comes: rank 0 gives up after the timeout, naming what it waited for.
  try {
    probe::tcp_allgather("127.0.0.1", port + 1, 0, 2, "alone", 0.5);
    FAIL("no timeout");
  } catch (const probe::ProbeError& e) {
    CHECK_THAT(e.what(),
               Catch::Contains("timed out waiting for ranks to connect (1 of 2 arrived)"));
  }
}

TEST_CASE("calibrate probe: a rank that fails or never starts at start-up ends every rank with 3",
          "[probe]") {
  if (const std::string why = mpi_missing(); !why.empty()) {
    WARN("skipped: " << why);
    return;
  }
  const std::string dir = temp_path("startup");
  const std::string profile = dir + "/profile.toml";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // The ranks that start well; the failing rank is rank 1, a second after the others (they wait
  // for it in MPI_Init).
  const std::string probe =
      k_bin + " calibrate probe" + k_small + " --startup-timeout 10 -o " + profile;
  const std::string launch =
      "ASAN_OPTIONS=detect_leaks=0 timeout -k 5 45 mpirun --allow-run-as-root "
      "--oversubscribe --mca btl_vader_single_copy_mechanism none ";
  auto job = [&](const std::string& rank1) {
    return sh(launch + recorded(dir, 1, probe) + ": " + rank1 + " : " + recorded(dir, 2, probe));
  };
  const std::vector<int> others = {0, 2, 3};
  SECTION("an invalid plan on one rank: it exits 2 with the located error, the others 3") {
    const Proc p = job(recorded(dir, 1, "sleep 1; " + probe + " " + dir + "/missing-plan.toml"));
    INFO(p.out);
    CHECK(p.code == 2);
    CHECK_THAT(p.out, Catch::Contains("missing-plan.toml"));
    CHECK(statuses(dir, {1}) == std::vector<int>{2});
    CHECK(statuses(dir, others) == std::vector<int>{3, 3, 3});
    CHECK_THAT(p.out, Catch::Contains("rank 0: stopped by a signal"));
    CHECK(p.seconds < 20);
  }
  SECTION("a bad argument on one rank: it exits 2, the others 3") {
    const Proc p = job(recorded(dir, 1, "sleep 1; " + probe + " --iters 0"));
    INFO(p.out);
    CHECK(p.code == 2);
    CHECK_THAT(p.out, Catch::Contains("--iters"));
    CHECK(statuses(dir, others) == std::vector<int>{3, 3, 3});
    CHECK(p.seconds < 20);
  }
  SECTION("a rank killed by a signal before MPI_Init: the others exit 3") {
    const Proc p = job("-np 1 sh -c 'sleep 1; kill -KILL $$' ");
    INFO(p.out);
    CHECK(p.code == 137);
    CHECK(statuses(dir, others) == std::vector<int>{3, 3, 3});
    CHECK(p.seconds < 20);
  }
  SECTION("a rank that ends without MPI_Init: the others exit 3") {
    const Proc p = job("-np 1 sh -c 'sleep 1' ");
    INFO(p.out);
    CHECK(p.code != 0);
    CHECK(statuses(dir, others) == std::vector<int>{3, 3, 3});
    CHECK(p.seconds < 20);
  }
  SECTION("a rank that never starts: the start-up timeout ends the others with 3") {
    const std::string quick =
        k_bin + " calibrate probe" + k_small + " --startup-timeout 3 -o " + profile;
    const Proc p =
        sh(launch + recorded(dir, 1, quick) + ": -np 1 sleep 30 : " + recorded(dir, 2, quick));
    INFO(p.out);
    CHECK(p.code == 3);
    CHECK_THAT(p.out, Catch::Contains("no progress for 3 s in the start-up: joining the other "
                                      "ranks (MPI_Init or the rendezvous)"));
    CHECK(statuses(dir, others) == std::vector<int>{3, 3, 3});
    CHECK(p.seconds < 20);
  }
  CHECK_FALSE(std::filesystem::exists(profile));
  std::filesystem::remove_all(dir);
}

TEST_CASE("calibrate probe: --startup-timeout is checked, and a failed start-up leaves no watchdog",
          "[probe][cli]") {
  auto r = test::run_cli({"calibrate", "probe", "--startup-timeout", "0"});
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--startup-timeout"));
  // In this process: the start-up's deadline and signal handlers end with the failed start-up
  // (a watchdog left armed would end this process with exit 3).
  struct sigaction before {
  }, after{};
  ::sigaction(SIGTERM, nullptr, &before);
  r = test::run_cli({"calibrate", "probe", "--startup-timeout", "0.5", "missing-plan.toml"});
  CHECK(r.code == 2);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::sigaction(SIGTERM, nullptr, &after);
  CHECK(after.sa_handler == before.sa_handler);
}
