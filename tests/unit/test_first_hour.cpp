// What a new user meets first: a plan fits only when its GPUs and its hosts do, a plan that
// does not fit says what to change, a model given without a layout gets one, search never
// refuses the layout it is about to vary, and files and pipes fail with the reason.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "helpers.hpp"
#include "trainledger/layout_search.hpp"

namespace fs = std::filesystem;
using trainledger::test::run_cli;

namespace {

// ZeRO-3 with the optimizer state on the host: the GPUs hold 35 GiB of 80, a node's host
// memory needs 233 GiB (offloaded state, checkpoint staging, the ranks' processes).
const std::string k_offload =
    "[model]\npreset = \"llama-3.1-8b\"\n[training]\nseq_len = 4096\n[parallel]\nzero = 3\n"
    "offload = \"optimizer\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n";

fs::path write_plan(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "trainledger-first-hour";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

}  // namespace

TEST_CASE("a plan whose GPUs fit but whose host memory does not is not a plan that fits",
          "[first-hour][host]") {
  const trainledger::PlanResult small =
      trainledger::test::plan_text(k_offload + "host_memory = \"128 GiB\"\n");
  REQUIRE(small.verdict.fits);  // every GPU fits
  CHECK_FALSE(small.verdict.host_fits);
  CHECK_FALSE(trainledger::plan_fits(small.verdict));
  CHECK_FALSE(trainledger::near_by_band(small.verdict));
  const trainledger::PlanResult big =
      trainledger::test::plan_text(k_offload + "host_memory = \"2 TiB\"\n");
  CHECK(trainledger::plan_fits(big.verdict));
  // No host capacity given: the host is not judged.
  CHECK(trainledger::plan_fits(trainledger::test::plan_text(k_offload).verdict));

  const std::string plan = write_plan("offload.toml", k_offload + "host_memory = \"128 GiB\"\n");
  const auto table = run_cli({"plan", plan.c_str()});
  CHECK(table.code == 0);
  CHECK(table.out.find("Verdict: does NOT fit: the host memory per node needs 233.41 of 128.00 "
                       "GiB") != std::string::npos);
  CHECK(table.out.find("Verdict: fits") == std::string::npos);
  // What shrinks the host, largest item first, and the capacity that would hold it.
  CHECK(table.out.find("host.offload 119.66 GiB → offload less") != std::string::npos);
  CHECK(table.out.find("cluster.host_memory = \"234 GiB\" holds it") != std::string::npos);

  const auto json = run_cli({"plan", plan.c_str(), "--format", "json"});
  const auto v = nlohmann::json::parse(json.out)["verdict"];
  CHECK(v["fits"] == false);
  CHECK(v["gpus_fit"] == true);
  CHECK(v["host_fits"] == false);
  CHECK(v["fits_with_headroom"] == false);

  const auto html = run_cli({"plan", plan.c_str(), "--format", "html"});
  CHECK(html.out.find("data-fits=\"false\"") != std::string::npos);
  CHECK(html.out.find("DOES NOT FIT (host memory per node)") != std::string::npos);

  const auto check = run_cli({"check", plan.c_str()});
  CHECK(check.code == 1);
  CHECK(check.out.find("OVER") != std::string::npos);
  CHECK(check.out.find("the host memory per node needs 233.41 GiB of 128.00 GiB") !=
        std::string::npos);
  const auto check_json = run_cli({"check", plan.c_str(), "--format", "json"});
  CHECK(check_json.code == 1);
  const auto c = nlohmann::json::parse(check_json.out)["plans"][0];
  CHECK(c["status"] == "OVER");
  CHECK(c["host_fits"] == false);
  CHECK(c["host_capacity_bytes"] == 128LL << 30);
  CHECK(c["host_peak_bytes"].get<double>() > c["host_capacity_bytes"].get<double>());
  // With room on the host, the same plan passes the gate.
  const auto roomy = run_cli({"check", plan.c_str(), "--set", "cluster.host_memory=2 TiB"});
  CHECK(roomy.code == 0);
}

TEST_CASE("search keeps only layouts whose host memory fits", "[first-hour][host][search]") {
  const trainledger::config::LoadedPlan loaded =
      trainledger::test::load_text(k_offload + "host_memory = \"128 GiB\"\n");
  trainledger::SearchOptions so;
  so.space.zero = {3};
  so.space.offload = {trainledger::Offload::optimizer};
  so.jobs = 2;
  const trainledger::SearchResult r = trainledger::search_layouts(loaded.input, so);
  // Every layout offloads the same optimizer state to one node's host: none fits.
  CHECK(r.valid > 0);
  CHECK(r.fitting == 0);
  trainledger::PlanInput roomy = loaded.input;
  roomy.cluster.host_memory = 2.0 * (1LL << 40);
  CHECK(trainledger::search_layouts(roomy, so).fitting > 0);
  // With offload left open, nothing fits with the plan's own: every choice is searched, and the
  // layouts that keep the state on the GPUs fit.
  so.space.offload.clear();
  const trainledger::SearchResult open = trainledger::search_layouts(loaded.input, so);
  CHECK(open.offload_tried);
  REQUIRE(open.fitting > 0);
  CHECK(open.top.front().offload == trainledger::Offload::none);
}

TEST_CASE("plan prints the fixes check prints, and points to search when none is enough",
          "[first-hour][fixes]") {
  // Llama-3.1-405B on 64 GPUs with the default layout's tp 8 and ZeRO-1: 284 GiB per GPU.
  const std::vector<std::string> sets = {
      "plan",  "--set",        "model.preset=llama-3.1-405b", "--set", "parallel.pp=2",
      "--set", "parallel.dp=4"};
  const auto table = run_cli(sets);
  CHECK(table.code == 0);
  CHECK(table.out.find("To make it fit:\n  grads ") != std::string::npos);
  CHECK(table.out.find("no single change fits: trainledger search") != std::string::npos);
  auto md_args = sets;
  md_args.insert(md_args.end(), {"--format", "markdown"});
  const auto md = run_cli(md_args);
  CHECK(md.out.find("**To make it fit**") != std::string::npos);
  auto json_args = sets;
  json_args.insert(json_args.end(), {"--format", "json"});
  const auto j = nlohmann::json::parse(run_cli(json_args).out);
  REQUIRE(j["fixes"].size() == 3);
  CHECK(j["fixes"][0]["id"] == "grads");
  CHECK(j["fixes"][0]["knob"] == "zero 1 → 2");
  CHECK(j["fixes"][0]["then_fits"] == false);
  // A fix that is enough says so; the default plan, which fits, lists none.
  const auto near = run_cli({"plan", "--set", "parallel.zero=0", "--format", "json"});
  const auto n = nlohmann::json::parse(near.out);
  CHECK(n["verdict"]["fits"] == true);
  bool then_fits = false;
  for (const auto& f : n["fixes"]) then_fits = then_fits || f["then_fits"] == true;
  CHECK(then_fits);
  CHECK(nlohmann::json::parse(run_cli({"plan", "--format", "json"}).out)["fixes"].empty());
  // check prints the same pointer when no single change is enough.
  auto check_args = sets;
  check_args[0] = "check";
  check_args.insert(check_args.begin() + 1, "default");
  const auto check = run_cli(check_args);
  CHECK(check.code == 1);
  CHECK(check.out.find("no single change fits: trainledger search") != std::string::npos);
}

TEST_CASE("a model given without a layout gets a valid one, and the plan says which",
          "[first-hour][layout]") {
  // Qwen2.5-7B has 28 heads: the default plan's tp 8 does not divide them.
  const auto r = run_cli({"plan", "--set", "model.preset=qwen2.5-7b", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const int tp = j["inputs"]["parallel"]["tp"];
  CHECK(28 % tp == 0);
  CHECK(j["verdict"]["fits"] == true);
  bool said = false;
  for (const auto& w : j["warnings"])
    said = said || w.get<std::string>().find(
                       "the default plan's layout does not suit Qwen2.5-7B "
                       "on 64 GPUs (parallel.tp (8) must divide "
                       "model.heads (28))") != std::string::npos;
  CHECK(said);
  // The same model with the layout given is the user's layout, refused when it is invalid.
  const auto mine = run_cli({"plan", "--set", "model.preset=qwen2.5-7b", "--set", "parallel.tp=8"});
  CHECK(mine.code == 2);
  CHECK(mine.err.find("parallel.tp (8) must divide model.heads (28)") != std::string::npos);
  // A model that fits no layout of the cluster is shown over, with the way to more GPUs.
  const auto huge =
      run_cli({"plan", "--set", "model.preset=llama-3.1-405b", "--set", "cluster.nodes=1"});
  CHECK(huge.code == 0);
  CHECK(huge.out.find("Verdict: does NOT fit") != std::string::npos);
  CHECK(huge.out.find("no layout fits on them") != std::string::npos);
}

TEST_CASE("search never validates the layout it searches over", "[first-hour][search]") {
  const auto r = run_cli({"search", "--set", "model.preset=qwen2.5-7b", "--no-progress", "--top",
                          "1", "--format", "json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("the plan's own layout is not valid for it") != std::string::npos);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["search"]["model"] == "Qwen2.5-7B");
  // A plan file that sizes its world by its layout (no cluster.nodes) keeps that world.
  const std::string plan =
      write_plan("layout-world.toml",
                 "[model]\npreset = \"qwen2.5-7b\"\n[parallel]\ntp = 8\ndp = 2\n[cluster]\n"
                 "gpu = \"h100-sxm5-80gb\"\n");
  const auto file = run_cli({"search", plan.c_str(), "--no-progress", "--top", "1"});
  INFO(file.err);
  CHECK(file.code == 0);
  CHECK(file.out.find("on 16 × NVIDIA H100") != std::string::npos);
  // An error outside the layout is still refused, at its key.
  const auto typo = run_cli({"search", "--set", "model.preset=qwen2.5-7b", "--set",
                             "training.seq_len=0", "--no-progress"});
  CHECK(typo.code == 2);
  CHECK(typo.err.find("training.seq_len") != std::string::npos);
}

TEST_CASE("search --fix with a value no layout can take says why and what can",
          "[first-hour][search]") {
  const auto r = run_cli({"search", "--fix", "tp=3", "--no-progress"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  // The core's rules say why (check_rules), each once, then the values that can be taken.
  CHECK(r.err.rfind("trainledger: error: --fix: tp = 3: no layout can take it: parallel.tp (3) "
                    "must divide the 64 GPUs; parallel.tp (3) must divide model.heads (64); ",
                    0) == 0);
  CHECK(r.err.find("(possible: 1, 2, 4, 8, 16, 32, 64)\n") != std::string::npos);
  const auto ep = run_cli({"search", "--allow", "ep=2,4", "--no-progress"});
  CHECK(ep.code == 2);
  CHECK(ep.err.find("parallel.ep (2) needs a MoE model") != std::string::npos);
  // The core's rules, all of them: a tp that divides the heads but not the MLP width is refused.
  const auto ffn =
      run_cli({"search", "--set", "model.ffn=1000", "--fix", "tp=16", "--no-progress"});
  CHECK(ffn.code == 2);
  CHECK(ffn.err.find("parallel.tp (16) must divide the MLP width (1000)") != std::string::npos);
  // One possible value among those allowed is enough.
  const auto some = run_cli({"search", "--allow", "tp=3,8", "--no-progress", "--top", "1"});
  CHECK(some.code == 0);
}

TEST_CASE("search --fewest's plan settings carry the cluster it found", "[first-hour][search]") {
  const auto r = run_cli(
      {"search", "--set", "model.preset=llama-3.1-8b", "--fewest", "--no-progress", "--top", "1"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto at = r.out.find("trainledger plan ... ");
  REQUIRE(at != std::string::npos);
  const std::string line = r.out.substr(at + 20, r.out.find('\n', at) - at - 20);
  CHECK(line.find("--set cluster.nodes=") != std::string::npos);
  // Pasted after the same model, the settings make a plan that fits.
  std::vector<std::string> args = {"check", "default", "--set", "model.preset=llama-3.1-8b"};
  std::size_t pos = 0;
  while ((pos = line.find("--set ", pos)) != std::string::npos) {
    const std::size_t start = pos + 6;
    const std::size_t end = line.find(' ', start);
    std::string value = line.substr(start, end == std::string::npos ? end : end - start);
    if (value.size() > 1 && value.front() == '\'') value = value.substr(1, value.size() - 2);
    args.push_back("--set");
    args.push_back(value);
    pos = start;
  }
  const auto check = run_cli(args);
  INFO(check.out << check.err);
  CHECK(check.code == 0);
}

TEST_CASE("a plan file that cannot be read says why", "[first-hour][files]") {
  const auto missing = run_cli({"plan", "no-such-plan.toml"});
  CHECK(missing.code == 2);
  CHECK(missing.err ==
        "trainledger: error: no-such-plan.toml: cannot read the plan file: no such file\n");
  const std::string dir = fs::temp_directory_path().string();
  const auto folder = run_cli({"check", dir});
  CHECK(folder.code == 2);
  CHECK(folder.err.find("cannot read the plan file: a directory, not a file") != std::string::npos);
}

TEST_CASE("a reader that closes the pipe early ends the program with exit 3, not a signal",
          "[first-hour][cli]") {
  // 16 pipeline stages, so the report is far larger than the pipe's buffer.
  const std::string command =
      std::string("bash -c 'set -o pipefail; \"") + TRAINLEDGER_BINARY +
      "\" plan --set parallel.pp=16 --set parallel.dp=4 --set cluster.nodes=64 "
      "--set training.global_batch=4096 --format json 2>/dev/null | head -c 1 >/dev/null'";
  const int status = std::system(command.c_str());
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
}

TEST_CASE("a model read from config.json is named from it, not \"custom model\"",
          "[first-hour][hf]") {
  // No _name_or_path: its class.
  CHECK(trainledger::test::load_text(
            "[model]\nhf_config = \"hf/gemma-2-9b.json\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n")
            .input.model.name == "Gemma2ForCausalLM");
  const fs::path dir = fs::temp_directory_path() / "trainledger-first-hour-hf";
  fs::create_directories(dir);
  const std::string body =
      "\"hidden_size\": 2048, \"intermediate_size\": 5632, \"num_attention_heads\": 32, "
      "\"num_hidden_layers\": 22, \"num_key_value_heads\": 4, \"vocab_size\": 32000";
  auto name_of = [&](const std::string& extra) {
    std::ofstream(dir / "config.json") << "{\"model_type\": \"llama\", " << extra << body << "}";
    const fs::path plan = dir / "plan.toml";
    std::ofstream(plan) << "[model]\nhf_config = \"config.json\"\n[cluster]\ngpu = "
                           "\"h100-sxm5-80gb\"\n";
    const auto r = run_cli({"plan", plan.string(), "--format", "json"});
    INFO(r.err);
    return nlohmann::json::parse(r.out)["inputs"]["model"]["name"].get<std::string>();
  };
  CHECK(name_of("") == "llama");  // only its model_type
  CHECK(name_of("\"architectures\": [\"LlamaForCausalLM\"], ") == "LlamaForCausalLM");
  CHECK(name_of("\"_name_or_path\": \"TinyLlama/TinyLlama-1.1B\", ") == "TinyLlama/TinyLlama-1.1B");
  // A local path names the folder it was saved from.
  CHECK(name_of("\"_name_or_path\": \"/data/ckpt/my-run-7/\", ") == "my-run-7");
  fs::remove_all(dir);
}

namespace {

// Display columns of UTF-8 text (every glyph the table uses is one column).
std::size_t columns_of(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// The memory table's lines: from its head to the line after the bars.
std::vector<std::string> memory_lines(const std::string& out) {
  std::vector<std::string> lines;
  const std::size_t start = out.find("Memory per GPU");
  const std::size_t end = out.find("phases of stage", start);
  std::size_t at = start;
  while (at < end) {
    const std::size_t nl = out.find('\n', at);
    lines.push_back(out.substr(at, nl - at));
    at = nl + 1;
  }
  return lines;
}

const std::vector<std::string> k_pp16 = {"plan",          "--set", "parallel.pp=16", "--set",
                                         "parallel.dp=1", "--set", "parallel.tp=4"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("a 16-stage pipeline folds to the terminal's width", "[first-hour][table]") {
  const auto wide = run_cli(with(k_pp16, {"--width", "0"}));
  REQUIRE(wide.code == 0);
  std::size_t widest = 0;
  for (const std::string& l : memory_lines(wide.out)) widest = std::max(widest, columns_of(l));
  CHECK(widest > 200);  // every stage its own column
  CHECK(wide.out.find("stage 7") != std::string::npos);
  const auto folded = run_cli(with(k_pp16, {"--width", "120"}));
  REQUIRE(folded.code == 0);
  for (const std::string& l : memory_lines(folded.out)) CHECK(columns_of(l) <= 120);
  // The first, the last and the worst stage stay; the others are one column of ranges.
  CHECK(folded.out.find("stage 0") != std::string::npos);
  CHECK(folded.out.find("stage 15") != std::string::npos);
  CHECK(folded.out.find("stages 1-14") != std::string::npos);
  CHECK(folded.out.find("range") != std::string::npos);
  CHECK(folded.out.find("stage 7 ") == std::string::npos);
  CHECK(folded.out.find("(stages 1-14 folded: each cell is the range") != std::string::npos);
  // The verdict and its fixes are the same as unfolded.
  const auto verdict = [](const std::string& out) {
    const std::size_t at = out.find("Verdict:");
    return out.substr(at, out.find("Step time") - at);
  };
  CHECK(verdict(folded.out) == verdict(wide.out));
  // An 80-column terminal: labels are cut to the room left, nothing runs over.
  const auto narrow = run_cli(with(k_pp16, {"--width", "80"}));
  for (const std::string& l : memory_lines(narrow.out)) CHECK(columns_of(l) <= 80);
}

TEST_CASE("plan --stage shows the stages asked for", "[first-hour][table]") {
  const auto worst = run_cli(with(k_pp16, {"--stage", "worst"}));
  REQUIRE(worst.code == 0);
  const std::vector<std::string> lines = memory_lines(worst.out);
  REQUIRE(!lines.empty());
  CHECK(lines.front().find("stage 0") != std::string::npos);  // the peak is on the first stage
  CHECK(lines.front().find("stage 15") == std::string::npos);
  CHECK(worst.out.find("worst rank is stage 0") != std::string::npos);
  const auto two = run_cli(with(k_pp16, {"--stage", "3,15", "--width", "80"}));
  REQUIRE(two.code == 0);
  const std::string head = memory_lines(two.out).front();
  CHECK(head.find("stage 3") != std::string::npos);
  CHECK(head.find("stage 15") != std::string::npos);
  CHECK(head.find("stage 0") == std::string::npos);
  // --stage all: every stage, never folded.
  const auto all = run_cli(with(k_pp16, {"--stage", "all", "--width", "80"}));
  CHECK(all.out.find("stage 7") != std::string::npos);
  // Markdown shows the same stages.
  const auto md = run_cli(with(k_pp16, {"--stage", "15", "--format", "markdown"}));
  REQUIRE(md.code == 0);
  CHECK(md.out.find("stage 15") != std::string::npos);
  CHECK(md.out.find("| stage 0 ") == std::string::npos);
  for (const char* bad : {"16", "-1", "x", "1,", "worst,1"}) {
    const auto r = run_cli(with(k_pp16, {"--stage", bad}));
    INFO(bad);
    CHECK(r.code == 2);
    CHECK(r.err.find("--stage") != std::string::npos);
    CHECK(r.err.find("from 0 to 15") != std::string::npos);
  }
}

TEST_CASE("labels are whole where the terminal has room", "[first-hour][table]") {
  const auto narrow = run_cli({"plan", "--width", "0"});
  const auto wide = run_cli({"plan", "--width", "250"});
  REQUIRE(wide.code == 0);
  CHECK(narrow.out.find("hardware FLOPs utilization (with re…") != std::string::npos);
  CHECK(wide.out.find("hardware FLOPs utilization (with recompute)") != std::string::npos);
  CHECK(wide.out.find("…") == std::string::npos);
}

namespace {

// Runs `script` with bash; returns its stdout ("" when bash is not there).
std::string bash_output(const std::string& script) {
  const fs::path file = write_plan("completion-test.sh", script);
  const fs::path out = file.parent_path() / "completion-test.out";
  const std::string command = "bash " + file.string() + " > " + out.string() + " 2>&1";
  if (std::system(command.c_str()) != 0) return "(bash failed)";
  std::ifstream in(out);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("trainledger completion bash completes commands and options", "[first-hour][shell]") {
  const auto r = run_cli({"completion", "bash"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("complete -o default -F _trainledger trainledger") != std::string::npos);
  // Sourced into bash, the function completes as a user's shell would.
  const auto complete = [&](const std::string& words, int cword) {
    return bash_output(r.out + "\nCOMP_WORDS=(" + words + ")\nCOMP_CWORD=" + std::to_string(cword) +
                       "\n_trainledger\necho \"${COMPREPLY[*]}\"\n");
  };
  CHECK(complete("trainledger pl", 1) == "plan\n");
  CHECK(complete("trainledger c", 1) == "check calibrate completion\n");
  CHECK(complete("trainledger plan --sta", 2) == "--stage\n");
  CHECK(complete("trainledger calibrate im", 2) == "import\n");
  CHECK(complete("trainledger calibrate import --ran", 3) == "--ranks\n");
  // After a command with no subcommands, a word is a file (complete -o default).
  CHECK(complete("trainledger plan con", 2) == "\n");
  const auto bad = run_cli({"completion", "tcsh"});
  CHECK(bad.code == 2);
}

TEST_CASE("zsh and fish completions name every command", "[first-hour][shell]") {
  for (const char* shell : {"zsh", "fish"}) {
    const auto r = run_cli({"completion", shell});
    REQUIRE(r.code == 0);
    for (const char* command : {"plan", "check", "search", "sweep", "diff", "explain", "calibrate",
                                "import", "compare", "probe", "completion", "man"})
      CHECK(r.out.find(command) != std::string::npos);
    CHECK(r.out.find(std::string(shell) == "zsh" ? "compdef _trainledger trainledger"
                                                 : "complete -c trainledger") != std::string::npos);
    // The shell's own syntax check, where the shell is installed.
    if (std::system((std::string("command -v ") + shell + " > /dev/null 2>&1").c_str()) == 0) {
      const fs::path file = write_plan(std::string("completion.") + shell, r.out);
      const std::string check = std::string(shell) + " -n " + file.string();
      CHECK(std::system(check.c_str()) == 0);
    }
  }
}

TEST_CASE("trainledger man prints a manual page of every command and option",
          "[first-hour][shell]") {
  const auto r = run_cli({"man"});
  REQUIRE(r.code == 0);
  CHECK(r.out.rfind(".TH TRAINLEDGER 1", 0) == 0);
  CHECK(r.out.find("\n.SH NAME\ntrainledger \\- will this LLM training run fit") !=
        std::string::npos);
  for (const char* section : {".SS trainledger plan\n", ".SS trainledger check\n",
                              ".SS trainledger calibrate import\n", ".SH EXIT STATUS\n"})
    CHECK(r.out.find(section) != std::string::npos);
  CHECK(r.out.find(".B \\-\\-stage TEXT") != std::string::npos);
  // No line starts a request by accident (a description line beginning with a dot).
  std::size_t at = 0;
  while ((at = r.out.find('\n', at)) != std::string::npos) {
    ++at;
    if (at < r.out.size() && r.out[at] == '\'') FAIL("a line starts with a quote");
  }
  // groff, where installed, reads it without a warning.
  if (std::system("command -v groff > /dev/null 2>&1") == 0) {
    const fs::path page = write_plan("trainledger.1", r.out);
    const fs::path warnings = page.parent_path() / "groff.err";
    const std::string command =
        "groff -man -Tutf8 -ww -z " + page.string() + " 2> " + warnings.string();
    CHECK(std::system(command.c_str()) == 0);
    CHECK(fs::file_size(warnings) == 0);
  }
}

TEST_CASE("the version names the commit and colour marks OVER and NEAR when asked",
          "[first-hour][shell]") {
  const auto v = run_cli({"--version"});
  CHECK(v.code == 0);
  CHECK(v.out.rfind("trainledger 0.1.0 (commit ", 0) == 0);
  const auto over =
      run_cli({"check", "default", "--set", "training.micro_batch=4", "--color", "always"});
  CHECK(over.code == 1);
  CHECK(over.out.find("\033[1;31mOVER\033[0m") != std::string::npos);
  const auto plain = run_cli({"check", "default", "--set", "training.micro_batch=4"});
  CHECK(plain.out.find('\033') == std::string::npos);  // not a terminal: no colour
  const auto plan = run_cli({"plan", "--set", "training.micro_batch=4", "--color", "always"});
  CHECK(plan.out.find("\033[1;31mVerdict:\033[0m does NOT fit") != std::string::npos);
  const auto never = run_cli({"plan", "--color", "never"});
  CHECK(never.out.find('\033') == std::string::npos);
}

TEST_CASE("sweep's CSV has plain numbers, diff's terms are in human units",
          "[first-hour][sweep][diff]") {
  const auto csv = run_cli({"sweep", "--vary", "training.micro_batch=1,2", "--vary",
                            "training.recompute=\"full\",\"none\"", "--format", "csv"});
  REQUIRE(csv.code == 0);
  CHECK(csv.out.find("\n1,full,") != std::string::npos);
  CHECK(csv.out.find("e+") == std::string::npos);
  CHECK(csv.out.find('"') == std::string::npos);
  const std::string plan = trainledger::test::source_path("configs/plans/default.toml");
  const auto diff = run_cli({"diff", plan, plan, "--set", "parallel.zero=0"});
  REQUIRE(diff.code == 0);
  CHECK(diff.out.find("state_bytes 25.38 GiB → 38.07 GiB") != std::string::npos);
  CHECK(diff.out.find("dp_s 47.0 ms → 23.2 ms") != std::string::npos);
}

TEST_CASE("review fixes: stages asked for are never folded, search refuses cp by the sequence",
          "[first-hour][table][search]") {
  const auto listed = run_cli(with(k_pp16, {"--stage", "3,4,5,6,7", "--width", "80"}));
  REQUIRE(listed.code == 0);
  const std::string head = memory_lines(listed.out).front();
  for (const char* st : {"stage 3", "stage 4", "stage 5", "stage 6", "stage 7"})
    CHECK(head.find(st) != std::string::npos);
  CHECK(listed.out.find("folded") == std::string::npos);
  // cp must divide the sequence (8192): refused at once, with the rule.
  const auto cp = run_cli({"search", "--fix", "cp=3", "--no-progress"});
  CHECK(cp.code == 2);
  CHECK(cp.err.find("parallel.cp (3) must divide training.seq_len (8192)") != std::string::npos);
  // A world of a million GPUs: the values that can be taken are found among its divisors.
  const auto big = run_cli({"search", "--set", "cluster.nodes=131072", "--set",
                            "training.global_batch=1048576", "--fix", "tp=7", "--no-progress"});
  CHECK(big.code == 2);
  CHECK(big.err.find("(possible: 1, 2, 4, 8, 16, 32, 64)") != std::string::npos);
}

TEST_CASE("review fixes: diff's terms by their own units, fish completes files",
          "[first-hour][diff][shell]") {
  const std::string plan = trainledger::test::source_path("configs/plans/default.toml");
  const auto diff = run_cli({"diff", plan, plan, "--set", "training.seq_len=4096"});
  REQUIRE(diff.code == 0);
  CHECK(diff.out.find("0.00 GiB → 0.00 GiB") == std::string::npos);  // B/param stays in B
  const auto fish = run_cli({"completion", "fish"});
  CHECK(fish.out.find("complete -c trainledger -f") == std::string::npos);
  CHECK(fish.out.find(" -r -F") == std::string::npos);
}
