// The HTML report: one self-contained file (inline SVG and CSS, no script, nothing fetched)
// with the charts and the Markdown report's tables, for design reviews (docs/cli.md#charts).
#include <fmt/format.h>

#include "charts.hpp"
#include "format.hpp"
#include "rows.hpp"

namespace trainledger::report {

std::string render_html(const PlanResult& plan, const PlanSource& loaded, const Options& o) {
  const PlanInput& in = plan.input;
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += fmt::format("<title>trainledger: {}</title>\n", xml_escape(in.model.name));
  s += "<style>\n"
       "body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}\n"
       "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
       "svg.chart{display:block;margin:8px 0;max-width:100%;height:auto}\n"
       "pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}\n"
       ".verdict{font-weight:bold}\n"
       "@media print{body{margin:0}svg.chart{page-break-inside:avoid}}\n"
       "</style>\n</head>\n<body>\n";
  s += fmt::format("<h1>{} · {} × {}</h1>\n", xml_escape(in.model.name), plan.derived.world_size,
                   xml_escape(in.cluster.gpu.name));
  s += fmt::format(
      "<p>trainledger {} · {} · tp {} · pp {} · dp {}{}{} · ZeRO-{}</p>\n", xml_escape(version()),
      xml_escape(loaded.name), in.parallel.tp, in.parallel.pp, in.parallel.dp,
      in.parallel.cp > 1 ? fmt::format(" · cp {}", in.parallel.cp) : "",
      in.parallel.ep > 1 ? fmt::format(" · ep {}", in.parallel.ep) : "", in.parallel.zero);
  const StageMemory& worst = plan.stages[static_cast<std::size_t>(plan.worst_stage)];
  const Verdict& v = plan.verdict;
  const std::string band =
      v.peak_band.cases > 0
          ? fmt::format(" ({:.0f} % band {} to {}, family {})", 100 * v.peak_band.confidence,
                        xml_escape(memory_with_unit(v.peak_band.low, o.units)),
                        xml_escape(memory_with_unit(v.peak_band.high, o.units)),
                        xml_escape(v.peak_band.family))
          : "";
  const bool near = near_by_band(v);
  s += fmt::format(
      "<p class=\"verdict\" data-fits=\"{}\" data-bytes=\"{:.0f}\"{}>{}: worst rank is stage {}, "
      "{} phase, at {}{} of {}{}</p>\n",
      plan_fits(v) ? "true" : "false", v.peak_bytes,
      v.peak_band.cases > 0 ? fmt::format(" data-band-high=\"{:.0f}\"", v.peak_band.high) : "",
      !v.fits        ? "DOES NOT FIT"
      : !v.host_fits ? "DOES NOT FIT (host memory per node)"
      : near         ? "near (fits at the estimate, not at the band's upper end)"
                     : "fits",
      plan.worst_stage, to_string(worst.peak_phase),
      xml_escape(memory_with_unit(v.peak_bytes, o.units)), band,
      xml_escape(memory_with_unit(static_cast<double>(in.cluster.gpu.memory_bytes), o.units)),
      v.host_fits ? ""
                  : fmt::format("; the host memory per node needs {} of {} (cluster.host_memory)",
                                xml_escape(memory_with_unit(plan.host.peak_bytes, o.units)),
                                xml_escape(memory_with_unit(plan.host.capacity_bytes, o.units))));
  const std::vector<std::string> fixes =
      fix_lines(plan, memory_unit_name(o.units), o.units == MemUnits::gib ? k_gib : k_gb);
  if (!fixes.empty()) {
    s += "<p>To make it fit:</p>\n<ul class=\"fixes\">\n";
    for (const std::string& f : fixes) s += "<li>" + xml_escape(f) + "</li>\n";
    s += "</ul>\n";
  }
  s += "<h2>Memory</h2>\n" + chart_memory(plan, o.units) + chart_phases(plan, o.units);
  s += "<h2>The step</h2>\n" + chart_step(plan);
  s += "<h2>Pipeline schedule</h2>\n" + chart_schedule(plan);
  s += "<h2>Communication</h2>\n" + chart_comm(plan, o.units);
  s += "<h2>Checkpoints</h2>\n" + chart_checkpoint(plan);
  s += "<h2>The ledger</h2>\n<pre>" + xml_escape(render_markdown(plan, loaded, o)) + "</pre>\n";
  s += "</body>\n</html>\n";
  return s;
}

}  // namespace trainledger::report
