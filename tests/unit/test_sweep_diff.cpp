// sweep and diff (docs/cli.md#sweep, #diff) agree item by item with separate plan runs.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "trainledger/ledger.hpp"

using namespace trainledger;

namespace {

PlanResult plan_of(const std::string& file, const std::vector<std::string>& sets) {
  config::LoadOptions o;
  o.sets = sets;
  return test::plan_checked(config::load_plan_file(file, o).input);
}

double value_of(const PlanResult& p, ItemId id) {
  for (const auto* list : {&p.time, &p.communication, &p.reliability})
    if (const LineItem* i = find_item(*list, id)) return i->value;
  const LineItem* i = find_item(p.stages[static_cast<std::size_t>(p.worst_stage)].items, id);
  return i ? i->value : 0;
}

}  // namespace

TEST_CASE("sweep: every point is the plan run with its --set, to the bit", "[sweep][cli]") {
  const std::string file = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  const auto r = test::run_cli({"sweep", file, "--vary", "training.seq_len=2048,4096", "--vary",
                                "training.micro_batch=1,2,3", "--show",
                                "peak,fits,time.step,activations,comm.dp", "--format", "json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["points"].size() == 6);
  int invalid = 0;
  for (const auto& p : j["points"]) {
    const std::string seq = p["set"]["training.seq_len"];
    const std::string mb = p["set"]["training.micro_batch"];
    if (p.contains("error")) {
      // micro_batch 3 does not divide global_batch / dp: the loader's own message.
      CHECK(mb == "3");
      CHECK(p["error"].get<std::string>().find("training.") != std::string::npos);
      ++invalid;
      continue;
    }
    const PlanResult plan =
        plan_of(file, {"training.seq_len=" + seq, "training.micro_batch=" + mb});
    CHECK(p["values"]["peak"].get<double>() == plan.verdict.peak_bytes);
    CHECK(p["values"]["fits"].get<double>() == (plan.verdict.fits ? 1.0 : 0.0));
    CHECK(p["values"]["time.step"].get<double>() == value_of(plan, ItemId::time_step));
    CHECK(p["values"]["activations"].get<double>() == value_of(plan, ItemId::activations));
    CHECK(p["values"]["comm.dp"].get<double>() == value_of(plan, ItemId::comm_dp));
  }
  CHECK(invalid == 2);
  // The table: one row per point, the varied keys first.
  const auto t = test::run_cli({"sweep", file, "--vary", "training.seq_len=2048,4096"});
  REQUIRE(t.code == 0);
  CHECK(t.out.rfind("training.seq_len", 0) == 0);
  CHECK(t.out.find("\n2048 ") != std::string::npos);
  // Values with commas inside brackets stay one value.
  const auto csv = test::run_cli({"sweep", "--vary",
                                  "parallel.stage_layers=[20,20,20,20],[21,19,"
                                  "19,21]",
                                  "--format", "csv", "--show", "peak"});
  REQUIRE(csv.code == 0);
  CHECK(csv.out.find("\"[21,19,19,21]\"") != std::string::npos);
  // Unknown quantities and malformed grids are usage errors.
  CHECK(test::run_cli({"sweep", file, "--vary", "training.seq_len=1024", "--show", "speed"}).code ==
        2);
  CHECK(test::run_cli({"sweep", file, "--vary", "training.seq_len"}).code == 2);
}

TEST_CASE("diff: item by item against separate plan runs, with the inputs that differ",
          "[diff][cli]") {
  const std::string file = test::source_path("configs/plans/default.toml");
  const auto r = test::run_cli({"diff", file, "--set", "training.seq_len=4096", "--set",
                                "parallel.zero=2", "--format", "json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const PlanResult a = plan_of(file, {});
  const PlanResult b = plan_of(file, {"training.seq_len=4096", "parallel.zero=2"});
  std::vector<std::string> keys;
  for (const auto& i : j["inputs"]) keys.push_back(i["key"]);
  CHECK(std::find(keys.begin(), keys.end(), "training.seq_len") != keys.end());
  CHECK(std::find(keys.begin(), keys.end(), "parallel.zero") != keys.end());
  CHECK(j["a"]["peak_bytes"].get<double>() == a.verdict.peak_bytes);
  CHECK(j["b"]["peak_bytes"].get<double>() == b.verdict.peak_bytes);
  int checked = 0;
  for (const char* section : {"memory", "time", "communication"}) {
    for (const auto& row : j[section]) {
      const auto id = item_by_name(row["id"].get<std::string>());
      REQUIRE(id);
      CHECK(row["a"].get<double>() == value_of(a, *id));
      CHECK(row["b"].get<double>() == value_of(b, *id));
      CHECK(row["delta"].get<double>() == row["b"].get<double>() - row["a"].get<double>());
      ++checked;
    }
  }
  CHECK(checked > 5);
  // The activations halve with the sequence, and the table says which terms moved.
  const auto t = test::run_cli({"diff", file, "--set", "training.seq_len=4096"});
  REQUIRE(t.code == 0);
  CHECK(t.out.find("training.seq_len                   8192 → 4096") != std::string::npos);
  CHECK(t.out.find("activations") != std::string::npos);
  CHECK(t.out.find("(-50.0 %)") != std::string::npos);
  // Two files; and nothing to compare is a usage error.
  CHECK(test::run_cli({"diff", file, test::source_path("configs/plans/llama-3.1-8b-fsdp.toml")})
            .code == 0);
  CHECK(test::run_cli({"diff", file}).code == 2);
}

TEST_CASE("search, sweep and diff draw their charts as SVG", "[sweep][diff][search][charts]") {
  const std::string file = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  const auto search = test::run_cli({"search", file, "--format", "svg", "--top", "5"});
  REQUIRE(search.code == 0);
  CHECK(search.out.find("<svg id=\"chart-search\"") != std::string::npos);
  CHECK(search.out.find("class=\"front\"") != std::string::npos);
  const auto sweep = test::run_cli({"sweep", file, "--vary", "training.seq_len=2048,4096", "--vary",
                                    "training.micro_batch=1,2", "--format", "svg"});
  REQUIRE(sweep.code == 0);
  CHECK(sweep.out.find("<svg id=\"chart-sweep\"") != std::string::npos);
  // Two lines (one per micro-batch), two points each, the peak in GiB.
  std::size_t points = 0;
  for (std::size_t at = sweep.out.find("class=\"point\""); at != std::string::npos;
       at = sweep.out.find("class=\"point\"", at + 1))
    ++points;
  CHECK(points == 4);
  CHECK(sweep.out.find("training.micro_batch = 2") != std::string::npos);
  CHECK(sweep.out.find("peak (GiB)") != std::string::npos);
  const auto diff =
      test::run_cli({"diff", file, "--set", "training.seq_len=4096", "--format", "svg"});
  REQUIRE(diff.code == 0);
  CHECK(diff.out.find("<svg id=\"chart-diff\"") != std::string::npos);
  CHECK(diff.out.find("data-label=\"activations\" data-which=\"a\"") != std::string::npos);
  CHECK(diff.out.find("data-label=\"peak\" data-which=\"b\"") != std::string::npos);
}

TEST_CASE("sweep's chart has round ticks, whole ones for an integer knob, and a legend that fits",
          "[sweep][charts]") {
  const auto svg =
      test::run_cli({"sweep", "--vary", "training.micro_batch=1,2,3", "--vary",
                     "training.recompute=\"none\",\"selective\",\"full\"", "--format", "svg"});
  REQUIRE(svg.code == 0);
  // Tick labels: "<text class="tick" ...>VALUE</text>"; the x ticks first (text-anchor middle).
  std::vector<std::string> x_ticks, y_ticks;
  const std::string tag = "<text class=\"tick\" ";
  for (std::size_t at = svg.out.find(tag); at != std::string::npos;
       at = svg.out.find(tag, at + 1)) {
    const std::size_t gt = svg.out.find('>', at), end = svg.out.find("</text>", gt);
    const std::string attrs = svg.out.substr(at, gt - at);
    const std::string value = svg.out.substr(gt + 1, end - gt - 1);
    (attrs.find("text-anchor=\"middle\"") != std::string::npos ? x_ticks : y_ticks)
        .push_back(value);
  }
  REQUIRE(x_ticks.size() >= 2);
  for (const std::string& t : x_ticks) {
    INFO(t);
    CHECK(t.find_first_not_of("0123456789") == std::string::npos);  // whole micro-batches
  }
  REQUIRE(y_ticks.size() >= 3);
  for (const std::string& t : y_ticks) {
    INFO(t);
    // 1, 2 or 5 times a power of ten: at most one significant digit after the leading ones.
    const double v = std::stod(t);
    CHECK(t.size() <= 4);
    CHECK(v == std::round(v));
  }
  // Three series, each its own dash; every legend text within the chart's 820 px.
  CHECK(svg.out.find("stroke-dasharray=\"6 3\"") != std::string::npos);
  CHECK(svg.out.find("stroke-dasharray=\"2 2\"") != std::string::npos);
  CHECK(svg.out.find("class=\"legend\"") != std::string::npos);
}

namespace {

// The values of `data-value` on the guides of an SVG, in order.
std::vector<double> guide_values(const std::string& svg) {
  std::vector<double> out;
  const std::string tag = "<line class=\"guide\" data-value=\"";
  for (std::size_t at = svg.find(tag); at != std::string::npos; at = svg.find(tag, at + 1))
    out.push_back(std::stod(svg.substr(at + tag.size())));
  return out;
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The SVG in an HTML page with the text probe, as the browser lays it out: no text outside the
// chart, no point name or guide label over another (skipped without Chromium, with a reason).
void check_in_browser(const std::string& name, const std::string& svg) {
  const std::string page = "<!DOCTYPE html><html><body>" + svg.substr(svg.find("<svg")) +
                           test::text_probe() + "</body></html>";
  const std::optional<std::string> dom = test::browser_dom(name, page);
  if (!dom) {
    WARN("skipped the browser check: chromium is not installed (scripts/dev test installs it)");
    return;
  }
  CHECK(test::attribute(*dom, "data-overflow").value_or("no probe") == "0 ");
  CHECK(test::attribute(*dom, "data-overlap").value_or("no probe") == "0 ");
}

}  // namespace

TEST_CASE("search's chart draws the capacity and the limit and names the front's layouts",
          "[search][charts]") {
  const std::string file = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  const std::vector<std::string> off = {"--top", "12", "--confidence", "off"};
  std::vector<std::string> args = {"search", file, "--format", "svg"};
  args.insert(args.end(), off.begin(), off.end());
  const auto svg = test::run_cli(args);
  REQUIRE(svg.code == 0);
  args[3] = "json";
  const auto json = nlohmann::json::parse(test::run_cli(args).out);
  const PlanResult plan = plan_of(file, {});
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double capacity = static_cast<double>(plan.input.cluster.gpu.memory_bytes) / gib;
  // Without a band: the capacity, then the limit the layouts were held to (capacity less the
  // 10 % headroom).
  const std::vector<double> guides = guide_values(svg.out);
  REQUIRE(guides.size() == 2);
  CHECK(guides[0] == Approx(capacity).epsilon(1e-12));
  CHECK(guides[1] == Approx(json["search"]["limit_bytes"].get<double>() / gib).epsilon(1e-9));
  CHECK(guides[1] == Approx(0.9 * capacity).epsilon(1e-6));
  CHECK(svg.out.find(fmt::format("capacity {:.1f} GiB", capacity)) != std::string::npos);
  CHECK(svg.out.find("(10 % headroom)") != std::string::npos);
  // Every layout of the front is named where names do not cover each other; the first always.
  const std::size_t front = json["pareto"].size(), tags = count_of(svg.out, "class=\"tag\"");
  REQUIRE(front >= 1);
  CHECK(tags >= 1);
  CHECK(tags <= front);
  const auto& first = json["pareto"][0];
  CHECK(svg.out.find(fmt::format(">tp {} ", first["tp"].get<int>())) != std::string::npos);
  CHECK(svg.out.find(fmt::format(" Z{} mb {}", first["zero"].get<int>(),
                                 first["micro_batch"].get<int>())) != std::string::npos);
  // With the band (the default) the estimate is held lower: a third guide.
  const auto banded = test::run_cli({"search", file, "--format", "svg", "--top", "5"});
  REQUIRE(banded.code == 0);
  const std::vector<double> three = guide_values(banded.out);
  REQUIRE(three.size() == 3);
  CHECK(three[2] < three[1]);
  CHECK(banded.out.find("(90 % band)") != std::string::npos);
  check_in_browser("search", svg.out);
}

TEST_CASE("sweep's chart of the peak draws the capacity and the value of every point",
          "[sweep][charts]") {
  const std::string file = test::source_path("configs/plans/llama-3.1-8b-fsdp.toml");
  const auto svg = test::run_cli({"sweep", file, "--vary", "training.micro_batch=1,2,4,8", "--show",
                                  "peak", "--format", "svg"});
  REQUIRE(svg.code == 0);
  const PlanResult plan = plan_of(file, {});
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const std::vector<double> guides = guide_values(svg.out);
  REQUIRE(guides.size() == 1);
  CHECK(guides[0] ==
        Approx(static_cast<double>(plan.input.cluster.gpu.memory_bytes) / gib).epsilon(1e-12));
  // One series of four points: each value drawn, the micro-batch 1 peak as the plan has it.
  CHECK(count_of(svg.out, "class=\"tag\"") == 4);
  CHECK(svg.out.find(fmt::format(">{:.3g}</text>", plan.verdict.peak_bytes / gib)) !=
        std::string::npos);
  // A line that is not peak memory has no capacity to draw.
  const auto step = test::run_cli({"sweep", file, "--vary", "training.micro_batch=1,2", "--show",
                                   "time.step", "--format", "svg"});
  REQUIRE(step.code == 0);
  CHECK(guide_values(step.out).empty());
  // Many series: no values (the tooltips keep them).
  const auto many = test::run_cli({"sweep", file, "--vary", "training.micro_batch=1,2", "--vary",
                                   "training.seq_len=1024,2048,4096", "--format", "svg"});
  REQUIRE(many.code == 0);
  CHECK(count_of(many.out, "class=\"tag\"") == 0);
  check_in_browser("sweep", svg.out);
}
