// Work and output bounded for hostile but valid plans: charts of many stages draw a bounded
// part and say what they leave out; the plan's verdict needs only the stages that can hold the
// peak, however many stages there are (the CI gate answers within a second or two).
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <regex>
#include <set>
#include <string>

#include "helpers.hpp"
#include "trainledger/invariants.hpp"
#include "trainledger/numbers.hpp"
#include "trainledger/report.hpp"
#include "trainledger/timeline.hpp"
#include "trainledger/whatif.hpp"

using namespace trainledger;

namespace {

// A small model with a layer per stage: `pp` stages, `global_batch` micro-batches of one.
std::string many_stages(int pp, long long global_batch, const std::string& extra = "") {
  return fmt::format(R"([model]
layers = {}
hidden = 64
heads = 1
ffn = 64
vocab = 64
[training]
seq_len = 64
global_batch = {}
[parallel]
pp = {}
{}
[cluster]
gpu = "h100-sxm5-80gb"
gpus_per_node = 8
nodes = {}
)",
                     pp, global_batch, pp, extra, std::max(1, pp / 8));
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

std::set<std::string> stages_of(const std::string& svg, const std::string& cls) {
  std::set<std::string> out;
  const std::regex mark("class=\"" + cls + "\" data-stage=\"([0-9]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), mark); it != std::sregex_iterator();
       ++it)
    out.insert((*it)[1]);
  return out;
}

std::string svg(const PlanResult& plan, const char* chart) {
  report::Options o;
  o.chart = chart;
  return report::render_svg(plan, o);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("the schedule of many stages: 32 rows, a bounded simulation, what is left out",
          "[hostile][bounded][charts]") {
  // 128 stages and 1,024 micro-batches drew 256 micro-batches on every stage: 65,536 ops, 20 MB.
  const auto loaded = test::load_text(many_stages(128, 1024));
  const PlanResult plan = compute_plan(loaded.input, PlanScope{true, false, false});
  const std::string s = svg(plan, "schedule");
  CHECK(s.size() < 1'000'000);
  CHECK(count(s, "class=\"op\"") <= 8192);
  CHECK(stages_of(s, "op").size() == 32);
  CHECK(s.find("stages 0-15 and 112-127 of 128 drawn; the other 96 are left out") !=
        std::string::npos);
  CHECK(s.find("32 of 1024 micro-batches simulated") != std::string::npos);
  // The rows drawn are those of the whole pipeline's simulation.
  const DrawnSchedule d = drawn_schedule(plan);
  REQUIRE(d.drawn.size() == 32);
  CHECK(d.capped);
  std::vector<PipelineOp> whole =
      pipeline_timeline(128, d.shown, plan.input.parallel.schedule, 1, d.forward_s, d.backward_s);
  std::vector<PipelineOp> kept;
  for (const PipelineOp& o : whole)
    if (o.stage < 16 || o.stage >= 112) kept.push_back(o);
  REQUIRE(kept.size() == d.ops.size());
  for (std::size_t k = 0; k < kept.size(); ++k) {
    CHECK(kept[k].stage == d.ops[k].stage);
    CHECK(kept[k].start_s == d.ops[k].start_s);
    CHECK(kept[k].end_s == d.ops[k].end_s);
  }
}

TEST_CASE("the schedule of the most stages is not simulated, and says so", "[hostile][bounded]") {
  const auto loaded = test::load_text(many_stages(65536, 131072));
  const auto start = std::chrono::steady_clock::now();
  const PlanResult plan = compute_plan(loaded.input, PlanScope{true, false, false});
  const DrawnSchedule d = drawn_schedule(plan);
  CHECK(d.ops.empty());
  CHECK(d.shown == 0);
  CHECK(d.capped);
  CHECK(d.drawn.size() == 32);
  const std::string s = svg(plan, "schedule");
  CHECK(s.size() < 10'000);
  CHECK(s.find("not drawn: one micro-batch on 65536 stages is more than the 8,192 ops") !=
        std::string::npos);
  CHECK(seconds_since(start) < 10);
}

TEST_CASE("the HTML report of 1,024 stages stays small and says what it leaves out",
          "[hostile][bounded][charts]") {
  // 229 bytes of plan wrote over 1 GB: the schedule drew 2,048 micro-batches on 1,024 stages.
  const auto loaded = test::load_text(many_stages(1024, 4096));
  const PlanResult plan = compute_plan(loaded.input);
  REQUIRE(plan.stages.size() == 1024);
  const report::Options o;
  const std::string html = report::render_html(plan, loaded.plan_source(), o);
  CHECK(html.size() < 2'000'000);
  // The memory chart: the first and last 16 stages (stage 0 is the worst), and the caption.
  const std::string left_out =
      "stages 0-15 and 1008-1023 of 1024 drawn; the other 992 are left out";
  CHECK(count(html, left_out) == 2);  // memory and schedule
  CHECK(stages_of(html, "peak").size() == 32);
  CHECK(stages_of(html, "op").size() == 32);
  CHECK(count(html, "class=\"op\"") <= 8192);
  // Markdown's Mermaid charts: 32 bars, 32 gantt sections, each saying what they leave out.
  const std::string md = report::render_markdown(plan, loaded.plan_source(), o);
  CHECK(count(md, "  section stage ") == 32);
  CHECK(md.find("against the capacity (stages 0-15 and 1008-1023 of 1024)") != std::string::npos);
  CHECK(md.find("micro-batches, stages 0-15 and 1008-1023 of 1024 drawn") != std::string::npos);
  // A worst stage between the ends is drawn too.
  std::string layers = "[";
  for (int s = 0; s < 64; ++s) layers += fmt::format("{}{}", s == 0 ? "" : ", ", s == 40 ? 9 : 1);
  const auto uneven =
      test::load_text(many_stages(64, 128, "stage_layers = " + layers + "]"), {"model.layers=72"});
  const PlanResult up = test::plan_checked(uneven.input);
  REQUIRE(up.worst_stage == 40);
  const std::string mem = svg(up, "memory");
  CHECK(stages_of(mem, "peak").size() == 33);
  CHECK(mem.find("stages 0-15, 40 and 48-63 of 64 drawn; the other 31 are left out") !=
        std::string::npos);
}

TEST_CASE("a few stages of 64 already draw them all, as before", "[hostile][bounded][charts]") {
  const auto loaded = test::load_text(many_stages(32, 256));
  const PlanResult plan = test::plan_checked(loaded.input);
  const report::Options o;
  const std::string html = report::render_html(plan, loaded.plan_source(), o);
  CHECK(html.find("left out") == std::string::npos);
  CHECK(stages_of(html, "peak").size() == 32);
  CHECK(stages_of(html, "op").size() == 32);
}

TEST_CASE("only the stages that can hold the peak: the same verdict, ledger and fixes",
          "[hostile][bounded]") {
  // 160 stages of 70 different layer counts (more than the 64 classes the search once kept).
  std::string uneven = "stage_layers = [";
  int total = 0;
  for (int s = 0; s < 160; ++s) {
    uneven += fmt::format("{}{}", s == 0 ? "" : ", ", s % 70 + 1);
    total += s % 70 + 1;
  }
  uneven += "]";
  struct Case {
    const char* name;
    std::string toml;
    std::vector<std::string> sets;
    std::size_t most;  // stages that can hold the peak
  };
  const std::vector<Case> cases = {
      {"1f1b", many_stages(64, 512), {}, 3},
      {"gpipe", many_stages(64, 100, "schedule = \"gpipe\""), {}, 3},
      {"interleaved",
       many_stages(64, 128, "schedule = \"interleaved\"\nvirtual_stages = 2"),
       {"model.layers=128"},
       3},
      {"zb-h1", many_stages(64, 512, "schedule = \"zb-h1\""), {}, 3},
      {"uneven", many_stages(160, 512, uneven), {fmt::format("model.layers={}", total)}, 72},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const auto errors = test::load_errors(c.toml, c.sets);
    if (!errors.empty()) FAIL(errors.front());
    const PlanInput in = test::load_text(c.toml, c.sets).input;
    const PlanResult full = test::plan_checked(in);
    const PlanResult some = compute_plan(in, PlanScope{true, true, false});
    CHECK(check_invariants(some).empty());
    CHECK(some.stages.size() < full.stages.size());
    CHECK(some.stages.size() <= c.most);
    for (std::size_t k = 1; k < some.stages.size(); ++k)
      CHECK(some.stages[k - 1].stage < some.stages[k].stage);
    CHECK(some.worst_stage == full.worst_stage);
    CHECK(some.verdict.worst_stage == full.verdict.worst_stage);
    CHECK(some.verdict.peak_bytes == full.verdict.peak_bytes);
    CHECK(some.verdict.phase == full.verdict.phase);
    CHECK(some.verdict.fits == full.verdict.fits);
    for (const StageMemory& st : some.stages) {
      const StageMemory& f = full.stages[static_cast<std::size_t>(st.stage)];
      CHECK(st.peak_bytes == f.peak_bytes);
      CHECK(st.role == f.role);
      REQUIRE(st.items.size() == f.items.size());
      for (std::size_t i = 0; i < st.items.size(); ++i) {
        CHECK(st.items[i].value == f.items[i].value);
        CHECK(st.items[i].formula == f.items[i].formula);
      }
    }
    REQUIRE(some.time.size() == full.time.size());
    for (std::size_t i = 0; i < some.time.size(); ++i)
      CHECK(some.time[i].value == full.time[i].value);
    REQUIRE(some.host.items.size() == full.host.items.size());
    CHECK(some.host.peak_bytes == full.host.peak_bytes);
    // check's hints: the same changes freeing the same bytes.
    const std::vector<Fix> a = find_fixes(full, full.verdict.peak_bytes / 2);
    const std::vector<Fix> b = find_fixes(some, full.verdict.peak_bytes / 2);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].item == b[i].item);
      CHECK(a[i].freed_bytes == b[i].freed_bytes);
      CHECK(a[i].then_fits == b[i].then_fits);
      CHECK(a[i].change.has_value() == b[i].change.has_value());
    }
    // The numbers-only evaluation keeps the same few stages.
    PlanNumbers n;
    evaluate(in, n, PlanScope{false, false, false});
    CHECK(n.stages.size() == some.stages.size());
    CHECK(n.verdict.peak_bytes == full.verdict.peak_bytes);
  }
}

TEST_CASE("the verdict of 65,536 stages: a few stages evaluated, in bounded time",
          "[hostile][bounded]") {
  const auto loaded = test::load_text(many_stages(65536, 131072));
  const auto start = std::chrono::steady_clock::now();
  const PlanResult plan = compute_plan(loaded.input, PlanScope{true, true, false});
  CHECK(plan.stages.size() <= 3);
  CHECK(plan.worst_stage == 0);
  CHECK(check_invariants(plan).empty());
  const std::vector<Fix> fixes = find_fixes(plan, plan.verdict.peak_bytes / 2);
  CHECK_FALSE(fixes.empty());
  // The ASan build takes well under a second; the bound leaves room for a loaded machine.
  CHECK(seconds_since(start) < 10);
}

TEST_CASE("an NVLink domain of half a million GPUs over a prime number of nodes plans at once",
          "[hostile][bounded]") {
  // A domain of half a million one-GPU nodes and 999,983 of them: the job's segment is the
  // largest divisor of the nodes that fits a domain (here 1: a prime), found over the divisor
  // pairs, never by counting down a million candidates per group.
  const PlanResult p = test::plan_text(
      "[model]\nlayers = 2\nhidden = 64\nheads = 1\nffn = 64\nvocab = 64\n[training]\n"
      "seq_len = 64\nglobal_batch = 999983\n[parallel]\nzero = 1\n[cluster]\n"
      "gpu = \"h100-sxm5-80gb\"\ngpus_per_node = 1\nnodes = 999983\nnvlink_domain = 500000\n");
  CHECK(p.input.cluster.domain() == 1);
  CHECK(test::load_text("[model]\npreset = \"llama-3.1-8b\"\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n"
                        "gpus_per_node = 1\nnodes = 1000000\nnvlink_domain = 999999\n")
            .input.cluster.domain() == 500000);  // 1,000,000 / 2: the largest divisor under it
}
