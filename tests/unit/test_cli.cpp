// The command line: README example kept true, exit codes, nothing on stdout on errors.
#include <catch2/catch.hpp>

#include <sstream>

#include <filesystem>

#include <algorithm>

#include <map>

#include <nlohmann/json.hpp>

#include "helpers.hpp"

using trainledger::test::read_file;
using trainledger::test::run_cli;
using trainledger::test::source_path;

namespace {

// The text between "```text" after `marker` and the closing fence.
std::string readme_block(const std::string& marker) {
  const std::string readme = read_file(source_path("README.md"));
  const std::size_t at = readme.find(marker);
  REQUIRE(at != std::string::npos);
  const std::size_t start = readme.find("```text\n", at);
  REQUIRE(start != std::string::npos);
  const std::size_t body = start + 8;
  const std::size_t end = readme.find("```", body);
  return readme.substr(body, end - body);
}

}  // namespace

TEST_CASE("the README's first example is the program's real output", "[cli][readme]") {
  const auto r = run_cli({"plan"});
  REQUIRE(r.code == 0);
  CHECK(readme_block("<!-- readme-example: trainledger plan -->") ==
        "$ trainledger plan\n" + r.out);
}

TEST_CASE("every trainledger command in the README's and docs' shell blocks runs as written",
          "[cli][readme]") {
  // Each ```sh line that starts with `trainledger`, its comment dropped and globs expanded
  // from the repository root, runs to exit 0 or 1 (a plan that does not fit), never 2 or 3.
  int commands = 0;
  for (const char* doc :
       {"README.md", "docs/cli.md", "docs/config.md", "docs/formulas.md", "docs/json-schema.md",
        "docs/accuracy.md", "docs/architecture.md", "docs/calibration.md", "docs/rl.md"}) {
    const std::string text = read_file(source_path(doc));
    for (std::size_t at = text.find("```sh\n"); at != std::string::npos;
         at = text.find("```sh\n", at + 1)) {
      const std::size_t end = text.find("```", at + 6);
      std::istringstream block(text.substr(at + 6, end - at - 6));
      for (std::string line; std::getline(block, line);) {
        if (line.rfind("trainledger ", 0) != 0) continue;
        line = line.substr(0, line.find(" #"));
        line = line.substr(0, line.find(" > "));  // a redirect to a file: the output is read here
        std::istringstream words(line.substr(12));
        std::vector<std::string> args;
        for (std::string w; words >> w;) {
          if (w.find('*') != std::string::npos) {
            // A glob over one folder, e.g. configs/plans/*.toml.
            const auto slash = w.rfind('/');
            const std::string folder = w.substr(0, slash);
            const std::string suffix = w.substr(w.find('*') + 1);
            std::vector<std::string> matches;
            for (const auto& e : std::filesystem::directory_iterator(source_path(folder))) {
              const std::string name = e.path().filename().string();
              if (name.size() >= suffix.size() &&
                  name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
                matches.push_back(e.path().string());
            }
            std::sort(matches.begin(), matches.end());
            REQUIRE_FALSE(matches.empty());
            args.insert(args.end(), matches.begin(), matches.end());
          } else if (std::filesystem::exists(source_path(w))) {
            args.push_back(source_path(w));
          } else {
            args.push_back(w);
          }
        }
        INFO(doc << ": " << line);
        const auto r = run_cli(args);
        CHECK((r.code == 0 || r.code == 1));
        CHECK_FALSE(r.out.empty());
        ++commands;
      }
    }
  }
  CHECK(commands >= 11);
}

TEST_CASE("invalid input exits 2 with the message on stderr and nothing on stdout",
          "[cli][errors]") {
  const auto bad_file = run_cli({"plan", source_path("tests/data/no-such-plan.toml")});
  CHECK(bad_file.code == 2);
  CHECK(bad_file.out.empty());
  CHECK(bad_file.err.find("cannot read the plan file") != std::string::npos);

  const auto bad_set = run_cli({"plan", "--set", "parallel.tp=0", "--format", "json"});
  CHECK(bad_set.code == 2);
  CHECK(bad_set.out.empty());
  CHECK(bad_set.err ==
        "trainledger: error: --set parallel.tp=0: parallel.tp: 0 must be at least 1\n");

  const auto bad_flag = run_cli({"plan", "--frmat", "json"});
  CHECK(bad_flag.code == 2);
  CHECK(bad_flag.out.empty());

  const auto bad_format = run_cli({"plan", "--format", "yaml"});
  CHECK(bad_format.code == 2);
}

TEST_CASE("trainledger with no arguments prints the help, as --help does", "[cli]") {
  const auto none = run_cli({});
  CHECK(none.code == 0);
  CHECK(none.err.empty());
  CHECK(none.out == run_cli({"--help"}).out);
  CHECK(none.out.find("Subcommands:") != std::string::npos);
}

TEST_CASE("help documents the commands and exit codes, --version prints the version", "[cli]") {
  const auto help = run_cli({"--help"});
  CHECK(help.code == 0);
  for (const char* word : {"plan", "explain", "models", "gpus", "keys", "Exit codes", "2 invalid"})
    CHECK(help.out.find(word) != std::string::npos);
  const auto plan_help = run_cli({"plan", "--help"});
  CHECK(plan_help.code == 0);
  CHECK(plan_help.out.find("--format") != std::string::npos);
  CHECK(plan_help.out.find("--set") != std::string::npos);
  const auto version = run_cli({"--version"});
  CHECK(version.code == 0);
  CHECK(version.out.rfind("trainledger 0.", 0) == 0);
}

TEST_CASE("explain prints one item's basis", "[cli]") {
  const auto r = run_cli({"explain", "optimizer.m", "--stage", "1"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("optimizer.m — Adam m (fp32, ZeRO-1 shard)   [stage 1 (middle), backward phase "
                   "(its peak)]") == 0);
  CHECK(r.out.find("formula  4 B/param × ") != std::string::npos);
  CHECK(r.out.find("source   Rajbhandari et al. 2020") != std::string::npos);
  CHECK(r.out.find("kind     estimated") != std::string::npos);

  const auto unknown = run_cli({"explain", "optimizer.x"});
  CHECK(unknown.code == 2);
  CHECK(unknown.out.empty());
  CHECK(unknown.err.find("no item \"optimizer.x\" in this plan (items: params, grads, ") !=
        std::string::npos);
  const auto bad_stage = run_cli({"explain", "params", "--stage", "9"});
  CHECK(bad_stage.code == 2);
}

TEST_CASE("explain works for every item the report shows, in any phase", "[cli]") {
  // ZeRO-0 with bf16 gradients: the peak is the optimizer step's fp32 upcast, where the
  // activations are gone; explain finds them in the first phase that holds them.
  const std::vector<std::string> plan = {"--set", "model.preset=\"llama-2-7b\"",
                                         "--set", "training.seq_len=128",
                                         "--set", "training.framework=\"generic\"",
                                         "--set", "cluster.gpu_memory=300 GiB",
                                         "--set", "cluster.gpus_per_node=1",
                                         "--set", "cluster.nodes=1",
                                         "--set", "parallel.tp=1",
                                         "--set", "parallel.pp=1",
                                         "--set", "parallel.dp=1",
                                         "--set", "training.global_batch=1"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), plan.begin(), plan.end());
    return run_cli(args);
  };
  const auto act = with({"explain", "activations"});
  REQUIRE(act.code == 0);
  CHECK(act.out.find("[stage 0 (only), forward phase (not held at the optimizer peak)]") !=
        std::string::npos);
  const auto at_peak = with({"explain", "activations", "--phase", "optimizer"});
  CHECK(at_peak.code == 2);
  CHECK(at_peak.err.find("is not in stage 0 (only)'s ledger in the optimizer phase") !=
        std::string::npos);
  const auto grads = with({"explain", "temporaries", "--phase", "optimizer"});
  CHECK(grads.code == 0);
  CHECK(grads.out.find("optimizer phase]") != std::string::npos);
  // Host items are per node.
  const auto host = run_cli({"explain", "host.checkpoint_staging"});
  CHECK(host.code == 0);
  CHECK(host.out.find("[per node]") != std::string::npos);
  // Every id the JSON report lists can be explained.
  const auto j = nlohmann::json::parse(run_cli({"plan", "--format", "json"}).out);
  std::vector<std::string> ids;
  for (const auto& st : j["memory"]["stages"])
    for (const auto& i : st["items"]) ids.push_back(i["id"]);
  for (const char* section : {"host", "communication", "time", "reliability"})
    for (const auto& i : j[section]["items"]) ids.push_back(i["id"]);
  for (const std::string& id : ids) {
    INFO(id);
    CHECK(run_cli({"explain", id}).code == 0);
  }
}

TEST_CASE("plan --phase shows every stage's ledger in that phase", "[cli]") {
  const auto r = run_cli({"plan", "--phase", "optimizer"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("Memory per GPU (GiB), optimizer phase") != std::string::npos);
  // The optimizer step holds no activations; the totals are the phase's, the verdict the peak's.
  const auto j =
      nlohmann::json::parse(run_cli({"plan", "--phase", "optimizer", "--format", "json"}).out);
  for (const auto& st : j["memory"]["stages"]) {
    for (const auto& i : st["items"]) CHECK(i["id"] != "activations");
    double sum = 0;
    for (const auto& i : st["items"]) sum += i["value"].get<double>();
    for (const auto& ph : st["phases"])
      if (ph["phase"] == "optimizer")
        CHECK(st["peak_bytes"].get<double>() == Approx(ph["bytes"].get<double>()));
    CHECK(sum == Approx(st["peak_bytes"].get<double>()));
  }
  CHECK(j["verdict"]["phase"] == "backward");
  CHECK(run_cli({"plan", "--phase", "warmup"}).code == 2);
}

TEST_CASE("every stage shows what a user measures: allocated, reserved, nvidia-smi, state",
          "[cli]") {
  const auto r = run_cli({"plan"});
  for (const char* row :
       {"  persistent state (weights, grads, optimizer)", "  as torch.cuda.max_memory_allocated",
        "  as torch.cuda.max_memory_reserved", "  as nvidia-smi (the total)"})
    CHECK(r.out.find(std::string("\n") + row) != std::string::npos);
  const auto j = nlohmann::json::parse(run_cli({"plan", "--format", "json"}).out);
  for (const auto& st : j["memory"]["stages"]) {
    std::map<std::string, std::int64_t> v;
    for (const auto& i : st["items"]) v[i["id"]] = i["value"].get<std::int64_t>();
    const auto& p = st["predicted"];
    // docs/formulas.md#overheads: device = every item; reserved = device − CUDA context − NCCL;
    // allocated = reserved − fragmentation; state = weights, gradients, optimizer, master.
    CHECK(p["nvidia_smi_bytes"] == st["peak_bytes"]);
    CHECK(p["max_memory_reserved_bytes"].get<std::int64_t>() ==
          Approx(st["peak_bytes"].get<double>() - v["overhead.cuda_context"] - v["overhead.nccl"])
              .margin(2));
    CHECK(p["max_memory_allocated_bytes"].get<std::int64_t>() ==
          Approx(p["max_memory_reserved_bytes"].get<double>() - v["overhead.fragmentation"])
              .margin(2));
    CHECK(p["persistent_state_bytes"].get<std::int64_t>() ==
          Approx(v["params"] + v["grads"] + v["optimizer.m"] + v["optimizer.v"] + v["master"])
              .margin(5));
  }
}

TEST_CASE("the JSON report's inputs hold every key that can change the numbers", "[cli][json]") {
  const auto j = nlohmann::json::parse(run_cli({"plan", "--format", "json"}).out);
  // An RL plan's [rl] keys (docs/rl.md); a plan without the section has none.
  const auto rl = nlohmann::json::parse(
      run_cli({"plan", source_path("configs/plans/grpo-llama-3.1-8b.toml"), "--format", "json"})
          .out);
  CHECK_FALSE(j["inputs"].contains("rl"));
  const auto keys = run_cli({"keys"}).out;
  std::string section;
  int checked = 0;
  std::istringstream lines(keys);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("### [", 0) == 0) section = line.substr(5, line.find(']') - 5);
    if (line.rfind("| `", 0) != 0 || section.empty()) continue;
    const std::string key = line.substr(3, line.find('`', 3) - 3);
    // The preset selectors are named in "origins"; their values are the keys they set.
    if (key == "preset" || key == "hf_config" || key == "hf_arch" || key == "gpu" ||
        section == "import")
      continue;
    INFO(section << "." << key);
    if (section == "rl")
      CHECK(rl["inputs"]["rl"].contains(key));
    else
      CHECK(j["inputs"][section].contains(key));
    ++checked;
  }
  CHECK(checked > 90);
}

TEST_CASE("models and gpus list the presets", "[cli]") {
  const auto models = run_cli({"models"});
  REQUIRE(models.code == 0);
  for (const char* name : {"gpt3-175b", "bloom-176b", "llama-2-7b", "llama-2-13b", "llama-2-70b",
                           "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "mistral-7b",
                           "qwen2.5-7b", "qwen2.5-72b", "6,738,415,616"})
    CHECK(models.out.find(name) != std::string::npos);
  const auto gpus = run_cli({"gpus"});
  REQUIRE(gpus.code == 0);
  for (const char* name : {"v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb",
                           "h100-pcie-80gb", "h100-nvl-94gb", "h200-sxm-141gb", "b200-180gb",
                           "mi300x-192gb", "81559 MiB", "gb300-284gb", "mi325x-256gb"})
    CHECK(gpus.out.find(name) != std::string::npos);
  // Every precision's dense peak: GB300's NVFP4 15 PF, a "-" where a GPU has none.
  const auto row = [&](const std::string& preset) {
    const std::size_t at = gpus.out.find("\n" + preset + " ");
    REQUIRE(at != std::string::npos);
    return gpus.out.substr(at + 1, gpus.out.find('\n', at + 1) - at - 1);
  };
  CHECK(gpus.out.find(" fp8 ") != std::string::npos);
  CHECK(gpus.out.find(" fp4 ") != std::string::npos);
  CHECK(row("gb300-284gb").find("15000.0") != std::string::npos);
  CHECK(row("h100-sxm5-80gb").find("1978.9") != std::string::npos);
  CHECK(row("h100-sxm5-80gb").find(" - ") != std::string::npos);
}

TEST_CASE("plan --format json is valid JSON with the contract's keys", "[cli][json]") {
  const auto r = run_cli({"plan", "--format", "json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "trainledger.plan/2");
  for (const char* key : {"version", "inputs", "origins", "derived", "memory", "communication",
                          "time", "reliability", "verdict", "warnings"})
    CHECK(j.contains(key));
}
