// Charts (docs/cli.md#charts): the pipeline timeline against the schedules' known makespans,
// and the HTML/SVG report: self-contained, deterministic, every chart present, and the numbers
// on its marks equal to the plan's items.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "trainledger/ledger.hpp"
#include "trainledger/report.hpp"
#include "trainledger/timeline.hpp"

using namespace trainledger;

namespace {

double makespan(const std::vector<PipelineOp>& ops) {
  double end = 0;
  for (const PipelineOp& o : ops) end = std::max(end, o.end_s);
  return end;
}

}  // namespace

TEST_CASE("pipeline timelines: the schedules' makespans and dependencies", "[charts]") {
  const double f = 1, b = 2;
  for (int pp : {1, 2, 4, 8}) {
    for (int m : {1, 4, 8, 16}) {
      INFO("pp " << pp << " m " << m);
      // GPipe and 1F1B: (m + p − 1)(f + b) with equal stages (Narayanan et al. 2021 §2.2).
      const auto one = pipeline_timeline(pp, m, Schedule::one_f_one_b, 1, f, b);
      const auto gp = pipeline_timeline(pp, m, Schedule::gpipe, 1, f, b);
      REQUIRE(one.size() == static_cast<std::size_t>(2 * pp * m));
      CHECK(makespan(one) == Approx((m + pp - 1) * (f + b)));
      CHECK(makespan(gp) == Approx((m + pp - 1) * (f + b)));
      // 1F1B keeps at most pp − s micro-batches in flight on stage s.
      for (int s = 0; s < pp; ++s) {
        int in_flight = 0, most = 0;
        for (const PipelineOp& o : one) {
          if (o.stage != s) continue;
          in_flight += o.kind == OpKind::forward ? 1 : -1;
          most = std::max(most, in_flight);
        }
        CHECK(most <= std::min(pp - s, m));
      }
      // Interleaved with v chunks: the bubble shrinks to (p − 1)(f + b)/v.
      if (pp > 1 && m % pp == 0) {
        const auto il = pipeline_timeline(pp, m, Schedule::interleaved, 2, f, b);
        REQUIRE(il.size() == static_cast<std::size_t>(2 * 2 * pp * m));
        CHECK(makespan(il) == Approx(m * (f + b) + (pp - 1) * (f + b) / 2));
      }
      // ZB-H1: never slower than 1F1B, the weight gradients filling the cooldown.
      const auto zb = pipeline_timeline(pp, m, Schedule::zb_h1, 1, f, b);
      REQUIRE(zb.size() == static_cast<std::size_t>(3 * pp * m));
      CHECK(makespan(zb) <= makespan(one) + 1e-9);
      CHECK(makespan(zb) >= m * (f + b) - 1e-9);
    }
  }
  // A micro-batch never runs on a stage before the stage before it handed it over.
  for (const PipelineOp& o : pipeline_timeline(4, 8, Schedule::one_f_one_b, 1, f, b))
    if (o.kind == OpKind::forward) CHECK(o.start_s >= o.stage * f - 1e-12);
  CHECK(pipeline_timeline(4, 6, Schedule::interleaved, 2, f, b).empty());  // m % p ≠ 0
}

TEST_CASE("HTML report: self-contained, deterministic, its marks are the plan's numbers",
          "[charts][report]") {
  const auto loaded = test::load_text(R"([model]
preset = "llama-3.1-8b"
[training]
seq_len = 8192
global_batch = 64
recompute = "full"
[parallel]
tp = 2
pp = 4
[cluster]
gpu = "h100-sxm5-80gb"
nodes = 1
gpus_per_node = 8
[checkpoint]
gpu_failure_rate = "3e-6 /h"
)");
  PlanResult plan = test::plan_checked(loaded.input);
  const report::Options o;
  const std::string html = report::render_html(plan, loaded.plan_source(), o);
  CHECK(html == report::render_html(plan, loaded.plan_source(), o));  // byte for byte
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  // Nothing to fetch, nothing to run.
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("href=") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  for (const char* id : {"chart-memory", "chart-phases", "chart-step", "chart-schedule",
                         "chart-comm", "chart-checkpoint"})
    CHECK(html.find(std::string("id=\"") + id + "\"") != std::string::npos);
  // Memory: every item of every stage, with its exact bytes, and the stage's bars sum to its
  // peak.
  const auto mem = test::svg_marks(html, "mem");
  std::size_t expected = 0;
  for (const StageMemory& s : plan.stages)
    for (const LineItem& i : s.items) expected += i.value > 0 ? 1 : 0;
  CHECK(mem.size() == expected);
  std::map<int, double> sum;
  for (const auto& m : mem) {
    const int stage = std::stoi(m.at("data-stage"));
    const LineItem* i = find_item(plan.stages[static_cast<std::size_t>(stage)].items,
                                  *item_by_name(m.at("data-item")));
    REQUIRE(i);
    CHECK(std::stod(m.at("data-bytes")) == Approx(i->value).margin(0.5));
    sum[stage] += std::stod(m.at("data-bytes"));
  }
  for (const StageMemory& s : plan.stages)
    CHECK(sum[s.stage] == Approx(s.peak_bytes).margin(0.5 * s.items.size()));
  // The worst stage at each phase: every item of each phase's ledger, and each phase's bars sum
  // to its total.
  const StageMemory& worst = plan.stages[static_cast<std::size_t>(plan.worst_stage)];
  const auto phase_marks = test::svg_marks(html, "phase-mem");
  std::map<std::string, double> by_phase;
  std::size_t phase_items = 0;
  for (const PhaseTotal& pt : worst.phases) {
    for (const LineItem& i : phase_ledger(plan.input, plan.worst_stage, pt.phase))
      phase_items += i.value > 0 ? 1 : 0;
  }
  CHECK(phase_marks.size() == phase_items);
  for (const auto& m : phase_marks) by_phase[m.at("data-phase")] += std::stod(m.at("data-bytes"));
  const auto totals = test::svg_marks(html, "phase-total");
  REQUIRE(totals.size() == worst.phases.size());
  for (std::size_t k = 0; k < worst.phases.size(); ++k) {
    const PhaseTotal& pt = worst.phases[k];
    INFO(to_string(pt.phase));
    CHECK(totals[k].at("data-phase") == to_string(pt.phase));
    CHECK(std::stod(totals[k].at("data-bytes")) == Approx(pt.bytes).margin(0.5));
    CHECK(by_phase[std::string(to_string(pt.phase))] == Approx(pt.bytes).margin(16));
  }
  // The activations are drawn in forward and backward only.
  for (const auto& m : phase_marks)
    if (m.at("data-item") == "activations")
      CHECK((m.at("data-phase") == "forward" || m.at("data-phase") == "backward"));
  // The waterfall: each part's seconds as the time items hold them, to the last digit.
  const auto steps = test::svg_marks(html, "step");
  REQUIRE(steps.size() >= 3);
  for (const auto& m : steps) {
    const LineItem* i = find_item(plan.time, *item_by_name(m.at("data-item")));
    REQUIRE(i);
    CHECK(std::stod(m.at("data-seconds")) == i->value);
  }
  // The schedule: every op of the micro-batches shown, forward and backward on every stage.
  const auto ops = test::svg_marks(html, "op");
  CHECK(ops.size() == 2u * 4u * 8u);
  // Communication and the checkpoint curve.
  const auto comm = test::svg_marks(html, "comm");
  CHECK(comm.size() == plan.communication.size());
  for (const auto& m : comm)
    CHECK(
        std::stod(m.at("data-bytes")) ==
        Approx(find_item(plan.communication, *item_by_name(m.at("data-item")))->value).margin(0.5));
  const auto waste = test::svg_marks(html, "waste-point");
  REQUIRE(waste.size() == 1);
  CHECK(std::stod(waste[0].at("data-fraction")) ==
        find_item(plan.reliability, ItemId::checkpoint_waste)->value);
  CHECK(test::svg_marks(html, "interval").size() == 2);  // Young and Daly
  // One chart as SVG.
  report::Options svg;
  svg.chart = "schedule";
  const std::string s = report::render_svg(plan, svg);
  CHECK(s.rfind("<?xml", 0) == 0);
  CHECK(s.find("<svg id=\"chart-schedule\"") != std::string::npos);
  CHECK(s.substr(s.size() - 7) == "</svg>\n");
}

TEST_CASE("plan --format html and --format svg on the command line", "[charts][cli]") {
  const auto html = test::run_cli({"plan", "--format", "html"});
  REQUIRE(html.code == 0);
  CHECK(html.out.find("<svg id=\"chart-memory\"") != std::string::npos);
  for (const char* c : {"memory", "phases", "schedule", "step", "comm", "checkpoint"}) {
    const auto svg = test::run_cli({"plan", "--format", "svg", "--chart", c});
    REQUIRE(svg.code == 0);
    CHECK(svg.out.find(std::string("id=\"chart-") + c + "\"") != std::string::npos);
  }
  CHECK(test::run_cli({"plan", "--format", "svg", "--chart", "pie"}).code == 2);
}

TEST_CASE("the HTML and SVG reports in headless Chromium", "[charts][chromium]") {
  if (std::system("command -v chromium > /dev/null 2>&1") != 0) {
    WARN("skipped: chromium is not installed (scripts/dev test installs it)");
    return;
  }
  const auto dir = std::filesystem::temp_directory_path() / "trainledger-charts";
  std::filesystem::create_directories(dir);
  // A file as a browser shows it (no network: file URLs only): Chromium's DOM, the console
  // messages it logged, and a PNG of the first 1100 × 900 pixels.
  struct Page {
    std::string dom;
    std::vector<std::string> console;
    std::string png;
  };
  auto browse = [&](const std::string& name, const std::string& text) {
    const auto file = dir / name;
    std::ofstream(file) << text;
    const auto out = dir / (name + ".dom"), log = dir / (name + ".log"),
               png = dir / (name + ".png");
    std::filesystem::remove(png);
    const std::string cmd =
        "timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run "
        "--disable-extensions --hide-scrollbars --enable-logging=stderr --v=0 "
        "--window-size=1100,900 --screenshot='" +
        png.string() + "' --dump-dom 'file://" + file.string() + "' > '" + out.string() + "' 2> '" +
        log.string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    Page p;
    p.dom = test::read_file(out.string());
    std::istringstream lines(test::read_file(log.string()));
    for (std::string line; std::getline(lines, line);)
      if (line.find(":CONSOLE") != std::string::npos) p.console.push_back(line);
    if (std::filesystem::exists(png)) p.png = test::read_file(png.string());
    return p;
  };
  auto dom = [&](const std::string& name, const std::string& text) {
    const Page p = browse(name, text);
    CHECK(p.console.empty());    // no error, no warning, nothing logged
    CHECK(p.png.size() > 1000);  // drawn
    return p.dom;
  };
  // The console check sees what a page logs (it would catch a report that errs).
  const Page noisy =
      browse("noisy.html", "<!DOCTYPE html><p>x</p><script>console.error('boom')</script>");
  REQUIRE(noisy.console.size() == 1);
  CHECK(noisy.console[0].find("boom") != std::string::npos);
  // A PNG of the page as drawn: the signature, the window's size, and more than a blank page.
  auto png_size = [](const std::string& png) {
    REQUIRE(png.size() > 24);
    CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
    auto be32 = [&](std::size_t at) {
      return (static_cast<unsigned>(static_cast<unsigned char>(png[at])) << 24) |
             (static_cast<unsigned>(static_cast<unsigned char>(png[at + 1])) << 16) |
             (static_cast<unsigned>(static_cast<unsigned char>(png[at + 2])) << 8) |
             static_cast<unsigned>(static_cast<unsigned char>(png[at + 3]));
    };
    return std::pair<unsigned, unsigned>{be32(16), be32(20)};  // IHDR width, height
  };
  const std::size_t blank_png = noisy.png.size();
  CHECK(png_size(noisy.png) == std::pair<unsigned, unsigned>{1100, 900});
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{}, std::vector<std::string>{"training.recompute=\"full\""},
        std::vector<std::string>{"parallel.schedule=\"interleaved\"",
                                 "parallel.virtual_stages=2"}}) {
    std::vector<std::string> args = {"plan", "--format", "html"};
    for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
    const auto html = test::run_cli(args);
    REQUIRE(html.code == 0);
    const Page page = browse("report.html", html.out);
    CHECK(page.console.empty());
    CHECK(png_size(page.png) == std::pair<unsigned, unsigned>{1100, 900});
    CHECK(page.png.size() > 4 * blank_png);  // charts and text drawn, not a blank page
    const std::string& d = page.dom;
    for (const char* id : {"chart-memory", "chart-phases", "chart-step", "chart-schedule",
                           "chart-comm", "chart-checkpoint"})
      CHECK(d.find(std::string("id=\"") + id + "\"") != std::string::npos);
    // The browser's DOM holds the same marks with the same numbers as the file.
    CHECK(test::svg_marks(d, "mem").size() == test::svg_marks(html.out, "mem").size());
    CHECK(test::svg_marks(d, "op").size() == test::svg_marks(html.out, "op").size());
    const auto json = test::run_cli([&] {
      std::vector<std::string> a = {"plan", "--format", "json"};
      for (const std::string& s : sets) a.insert(a.end(), {"--set", s});
      return a;
    }());
    const auto j = nlohmann::json::parse(json.out);
    const auto steps = test::svg_marks(d, "step");
    REQUIRE(!steps.empty());
    for (const auto& m : steps)
      for (const auto& item : j["time"]["items"])
        if (item["id"] == m.at("data-item"))
          CHECK(std::stod(m.at("data-seconds")) == item["value"].get<double>());
  }
  // A standalone SVG parses as XML (an error page otherwise).
  for (const char* c : {"memory", "phases", "schedule", "step", "comm", "checkpoint"}) {
    const auto svg = test::run_cli({"plan", "--format", "svg", "--chart", c});
    const std::string d = dom(std::string(c) + ".svg", svg.out);
    CHECK(d.find("error on line") == std::string::npos);
    CHECK(d.find(std::string("chart-") + c) != std::string::npos);
  }
}

TEST_CASE("HTML reports pinned byte for byte", "[charts][golden]") {
  // golden/html/<case>.toml → <case>.html; rewritten only with TRAINLEDGER_UPDATE_GOLDEN=1
  // (scripts/update-docs).
  const char* update = std::getenv("TRAINLEDGER_UPDATE_GOLDEN");
  for (const char* name : {"llama-3.1-8b-tp", "llama-3.1-8b-full-recompute"}) {
    INFO(name);
    const std::string plan = std::string("golden/html/") + name + ".toml";
    const auto r = test::run_cli({"plan", test::source_path(plan), "--format", "html"});
    REQUIRE(r.code == 0);
    // The report names its plan file: pin it by its path within the repository.
    std::string got = r.out;
    const std::string full = test::source_path(plan);
    for (std::size_t at = got.find(full); at != std::string::npos; at = got.find(full))
      got.replace(at, full.size(), plan);
    const std::string golden = test::source_path(std::string("golden/html/") + name + ".html");
    if (update && std::string(update) == "1") {
      std::ofstream(golden) << got;
      continue;
    }
    REQUIRE(std::filesystem::exists(golden));
    CHECK(got == test::read_file(golden));
  }
}

TEST_CASE("the table's bar per stage: Unicode, ASCII, over the capacity", "[charts][cli]") {
  const auto unicode = test::run_cli({"plan"});
  REQUIRE(unicode.code == 0);
  const auto row = unicode.out.find("  peak / capacity");
  REQUIRE(row != std::string::npos);
  CHECK(unicode.out.find("█", row) != std::string::npos);
  CHECK(unicode.out.find("\033[") == std::string::npos);  // no colour when not a terminal
  const auto ascii = test::run_cli({"plan", "--ascii"});
  const auto at = ascii.out.find("  peak / capacity");
  REQUIRE(at != std::string::npos);
  const std::string line = ascii.out.substr(at, ascii.out.find('\n', at) - at);
  CHECK(line.find('#') != std::string::npos);
  CHECK(line.find("█") == std::string::npos);
  // Stage 0 of the default plan holds 51.06 of 79.65 GiB: 64 % of its 8 cells → 5 '#'.
  CHECK(line.find("  #####...") != std::string::npos);
  const auto over = test::run_cli({"plan", "--ascii", "--set", "training.micro_batch=8", "--set",
                                   "training.recompute=\"none\""});
  CHECK(over.out.find("#######!") != std::string::npos);
}

TEST_CASE("Markdown carries the charts Mermaid can draw", "[charts][report]") {
  const auto r = test::run_cli({"plan", "--format", "markdown"});
  REQUIRE(r.code == 0);
  const auto json = nlohmann::json::parse(test::run_cli({"plan", "--format", "json"}).out);
  // The peaks per stage, in GiB to two decimals, against the capacity.
  const auto at = r.out.find("```mermaid\nxychart-beta\n  title \"Peak memory per stage (GiB)");
  REQUIRE(at != std::string::npos);
  std::string bars = "  bar [";
  bool first = true;
  for (const auto& st : json["memory"]["stages"]) {
    bars += fmt::format("{}{:.2f}", first ? "" : ", ",
                        st["peak_bytes"].get<double>() / (1024.0 * 1024.0 * 1024.0));
    first = false;
  }
  CHECK(r.out.find(bars + "]", at) != std::string::npos);
  CHECK(r.out.find("```mermaid\nxychart-beta\n  title \"The step:") != std::string::npos);
  // The default plan has 4 stages: a gantt with a section per stage.
  const auto g = r.out.find("```mermaid\ngantt\n");
  REQUIRE(g != std::string::npos);
  for (int s = 0; s < 4; ++s)
    CHECK(r.out.find("  section stage " + std::to_string(s) + "\n", g) != std::string::npos);
}

TEST_CASE("the HTML report's ledger is HTML tables, not Markdown source", "[charts][report]") {
  const auto r = test::run_cli({"plan", "--format", "html"});
  REQUIRE(r.code == 0);
  const std::string& h = r.out;
  CHECK(h.find("<pre") == std::string::npos);
  CHECK(h.find("|---") == std::string::npos);
  CHECK(h.find("**") == std::string::npos);
  CHECK(h.find("```") == std::string::npos);
  // Every Markdown table is a table: memory, host, step time, communication, time, checkpoints,
  // basis.
  std::size_t tables = 0;
  for (std::size_t at = 0; (at = h.find("<table>", at)) != std::string::npos; ++at) ++tables;
  CHECK(tables >= 6);
  CHECK(h.find("<th>stage 0 (first)</th>") != std::string::npos);
  CHECK(h.find("<tr><td><strong>total</strong></td>") != std::string::npos);
  CHECK(h.find("<td><code>params</code></td>") != std::string::npos);
  CHECK(h.find("<td class=\"n\">55.26</td>") != std::string::npos);  // numbers right-aligned
  // A name from the plan is text: the Markdown escapes become characters, never markup.
  const auto hostile =
      test::run_cli({"plan", "--format", "html", "--set", "model.name=\"<b>x</b> | **y** `z`\""});
  REQUIRE(hostile.code == 0);
  CHECK(hostile.out.find("<b>x</b>") == std::string::npos);
  CHECK(hostile.out.find("&lt;b&gt;x&lt;/b&gt; | **y** `z`") != std::string::npos);
}

TEST_CASE("no chart text overflows its SVG in headless Chromium for pp 1, 2, 4 and 16",
          "[charts][chromium]") {
  const std::string probe = test::text_probe();
  const std::vector<std::vector<std::string>> layouts = {
      {"parallel.pp=1", "parallel.dp=8"},
      {"parallel.pp=2", "parallel.dp=4"},
      {},
      {"parallel.pp=16", "parallel.dp=1", "parallel.tp=4"}};
  for (const auto& sets : layouts) {
    std::vector<std::string> args = {"plan", "--format", "html"};
    for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
    const auto html = test::run_cli(args);
    REQUIRE(html.code == 0);
    std::string page = html.out;
    page.insert(page.find("</body>"), probe);
    const std::optional<std::string> dom = test::browser_dom("overflow", page);
    if (!dom) {
      WARN("skipped: chromium is not installed (scripts/dev test installs it)");
      return;
    }
    const std::optional<std::string> found = test::attribute(*dom, "data-overflow");
    REQUIRE(found);  // the probe ran
    INFO((args.size() > 3 ? args[4] : std::string("default: pp 4")));
    CHECK(*found == "0 ");
  }
}

TEST_CASE("charts mark an OVER stage by how much, carry the unit, and draw traffic by time",
          "[charts][report]") {
  const auto over = test::run_cli({"plan", "--format", "svg", "--set", "training.micro_batch=4"});
  REQUIRE(over.code == 0);
  const auto j = nlohmann::json::parse(
      test::run_cli({"plan", "--format", "json", "--set", "training.micro_batch=4"}).out);
  const double capacity = j["verdict"]["capacity_bytes"].get<double>();
  int outlined = 0;
  for (const auto& st : j["memory"]["stages"]) {
    const double peak = st["peak_bytes"].get<double>();
    const std::string tag = "class=\"over\" data-stage=\"" + std::to_string(st["stage"].get<int>());
    const bool marked = over.out.find(tag + "\"") != std::string::npos;
    CHECK(marked == (peak > capacity));
    outlined += marked ? 1 : 0;
    if (peak > capacity)
      CHECK(over.out.find(fmt::format(
                "+{:.2f} over", (peak - capacity) / (1024.0 * 1024 * 1024))) != std::string::npos);
  }
  CHECK(outlined >= 1);
  CHECK(over.out.find("class=\"unit\"") != std::string::npos);
  // The communication bars: width in proportion to each item's time.
  const auto comm = test::run_cli({"plan", "--format", "svg", "--chart", "comm"});
  const auto bars = test::svg_marks(comm.out, "comm");
  REQUIRE(bars.size() >= 2);
  double most = 0;
  for (const auto& b : bars) most = std::max(most, std::stod(b.at("data-seconds")));
  for (const auto& b : bars)
    CHECK(std::stod(b.at("width")) ==
          Approx(420 * std::stod(b.at("data-seconds")) / most).margin(0.01));
}

TEST_CASE("the HTML report's charts fill the page's width, side by side where they fit",
          "[charts][chromium]") {
  // Per row of figures (the ones sharing a top edge): the share of the body's width they span;
  // the least of them, and whether the memory chart and the phases chart share a row.
  const std::string probe =
      "<script>const w = document.body.clientWidth; let least = 1, rows = 0;"
      "for (const div of document.querySelectorAll('div.figures')) {"
      "  const byTop = new Map();"
      "  for (const f of div.querySelectorAll('figure')) {"
      "    const b = f.getBoundingClientRect(), k = Math.round(b.top);"
      "    const r = byTop.get(k) || [1e9, -1e9];"
      "    byTop.set(k, [Math.min(r[0], b.left), Math.max(r[1], b.right)]);"
      "  }"
      "  for (const [, r] of byTop) { ++rows; least = Math.min(least, (r[1] - r[0]) / w); }"
      "}"
      "const m = document.getElementById('chart-memory').getBoundingClientRect();"
      "const p = document.getElementById('chart-phases').getBoundingClientRect();"
      "document.body.setAttribute('data-least', least.toFixed(3));"
      "document.body.setAttribute('data-rows', rows);"
      "document.body.setAttribute('data-paired', Math.abs(m.top - p.top) < 2 ? 'yes' : 'no');"
      "</script>";
  const auto html = test::run_cli({"plan", "--format", "html"});
  REQUIRE(html.code == 0);
  std::string page = html.out;
  page.insert(page.find("</body>"), probe + test::text_probe());
  for (const int width : {1100, 1500}) {
    const std::optional<std::string> dom = test::browser_dom("width", page, width);
    if (!dom) {
      WARN("skipped: chromium is not installed (scripts/dev test installs it)");
      return;
    }
    INFO("window " << width << " px");
    const std::optional<std::string> least = test::attribute(*dom, "data-least");
    REQUIRE(least);
    CHECK(std::stod(*least) >= 0.75);  // no row of charts leaves a quarter of the page empty
    CHECK(test::attribute(*dom, "data-overflow").value_or("") == "0 ");
    // Wide enough for both (the body is at most 1400 px): memory and phases side by side.
    CHECK(test::attribute(*dom, "data-paired").value_or("") == (width >= 1500 ? "yes" : "no"));
  }
}
