// Renderers: table, JSON and Markdown views of one PlanResult. They print; they never compute.
#pragma once

#include <string>
#include <vector>

#include "trainledger/plan.hpp"

namespace trainledger::report {

enum class Format { table, json, markdown, html, svg };
enum class MemUnits { gib, gb };

struct Options {
  MemUnits units = MemUnits::gib;
  std::string phase;             // plan --phase: the stage columns show this phase's ledger
  std::string chart = "memory";  // --format svg: memory, schedule, step, comm or checkpoint
  // The table's bar per stage: Unicode eighth blocks, or ASCII ('#'); coloured by the verdict
  // (ANSI) only when asked (a terminal without NO_COLOR).
  bool ascii = false;
  bool color = false;
  // plan --stage: the memory table shows these stages only (empty: every stage).
  std::vector<int> stages;
  // The table's width, a terminal's (0: no limit): a wider pipeline folds to its first, last and
  // worst stages and the range of the others, and labels take the room there is.
  std::size_t width = 0;
};

inline constexpr const char* k_schema = "trainledger.plan/2";

std::string render(Format f, const PlanResult& plan, const PlanSource& loaded,
                   const Options& options);
std::string render_table(const PlanResult& plan, const PlanSource& loaded, const Options& options);
std::string render_markdown(const PlanResult& plan, const PlanSource& loaded,
                            const Options& options);
std::string render_json(const PlanResult& plan, const PlanSource& loaded);
// One self-contained HTML file: inline SVG charts (memory per stage by role, the step as a
// waterfall, the pipeline schedule, communication, the checkpoint trade-off) and the ledger.
std::string render_html(const PlanResult& plan, const PlanSource& loaded, const Options& options);
// One chart as an SVG document (options.chart).
std::string render_svg(const PlanResult& plan, const Options& options);

// Charts of several plans (search, sweep, diff), as SVG documents.
struct ChartPoint {
  double x = 0, y = 0;
  std::string label;       // the tooltip
  bool highlight = false;  // drawn larger, joined into a front
  std::string tag;         // a short label drawn beside the point (none when empty)
};
// A reference line across the plot at `value` (the capacity, the limit the estimate is held to),
// named on the chart; `dashed` for a limit derived from it.
struct Guide {
  double value = 0;
  std::string label;
  bool dashed = false;
};
// Points on linear axes; the highlighted ones are joined in x order (a Pareto front). Guides are
// vertical lines at x values (search: the capacity and the limit of peak memory); tags are
// placed where they do not cover another tag.
std::string scatter_svg(const std::string& id, const std::string& title, const std::string& x_label,
                        const std::string& y_label, const std::vector<ChartPoint>& points,
                        const std::vector<Guide>& x_guides = {});
struct Series {
  std::string name;
  std::vector<double> x, y;  // y NaN: a gap (an invalid point)
};
// Lines over a shared x axis (sweep): one per series. Guides are horizontal lines at y values
// (the capacity when the line is peak memory); with at most two series every point carries its
// value.
std::string lines_svg(const std::string& id, const std::string& title, const std::string& x_label,
                      const std::string& y_label, const std::vector<Series>& series,
                      const std::vector<Guide>& y_guides = {});
struct PairedBar {
  std::string label;
  double a = 0, b = 0;
};
// Two bars per row (diff: A and B).
std::string paired_bars_svg(const std::string& id, const std::string& title,
                            const std::string& unit, const std::vector<PairedBar>& rows);

// `trainledger explain ID`: one item's value, formula, terms, source and kind.
std::string render_explain(const LineItem& item, const std::string& where, const Options& options);

// A change as the plan file would write it: "recompute = full", "global_batch 256 → 1024",
// "tp 8 → 4, dp 2 → 4".
std::string change_text(const Change& c);
// What to change when the plan does not fit (or fits by less than its headroom, or not at its
// band's upper end), one line each, plain text: the worst stage's largest items with the
// change that frees the most (plan.fixes, as check prints them); when only the host is over,
// the host's items with what shrinks each; and, when no single change fits, where to look next
// (`trainledger search`). Empty for a plan that fits.
std::vector<std::string> fix_lines(const PlanResult& plan, const std::string& unit_name,
                                   double unit_bytes);
// What shrinks one item of the host memory per node.
std::string host_remedy(const PlanResult& plan, ItemId id);

// `plan --emit megatron|deepspeed|torchtitan`: the settings that realise the plan in that stack
// (a Megatron-LM argument list, a DeepSpeed JSON, a torchtitan TOML); what the stack cannot
// express is named in comments. `title` names the plan.
std::string emit_config(const PlanInput& in, const std::string& stack, const std::string& title);

// `calibrate replica`: a self-contained PyTorch script that runs the plan's model at full width
// and `layers` depths on one GPU (docs/calibration.md#replica), and the default depths.
std::vector<int> replica_layers(const PlanInput& in);
std::string replica_script(const PlanInput& in, const std::vector<int>& layers);

// Text for XML and HTML (SVG, JUnit): & < > " ' escaped.
std::string xml_escape(const std::string& text);

// The version string printed by reports and --version.
std::string version();

}  // namespace trainledger::report
