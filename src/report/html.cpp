// The HTML report: one self-contained file (inline SVG and CSS, no script, nothing fetched)
// with the charts and the Markdown report's tables as HTML tables, for design reviews
// (docs/cli.md#charts).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "charts.hpp"
#include "format.hpp"
#include "rows.hpp"

namespace trainledger::report {

namespace {

// The Markdown report as HTML: the subset render_markdown writes (headings, pipe tables, lists,
// paragraphs, `code`, **bold**, backslash escapes and the entities &lt; &gt; &amp;). Its text is
// a pull request's (names, paths): every character is escaped again for HTML, so no tag of the
// input survives. Mermaid blocks are left out: the page draws the same charts as SVG.
std::string html_char(char c) {
  switch (c) {
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '&':
      return "&amp;";
    case '"':
      return "&quot;";
    default:
      return std::string(1, c);
  }
}

std::string inline_html(std::string_view s) {
  std::string out;
  bool strong = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size() && std::ispunct(static_cast<unsigned char>(s[i + 1]))) {
      out += html_char(s[++i]);
    } else if (c == '&') {
      bool entity = false;
      for (const char* e : {"&lt;", "&gt;", "&amp;"})
        if (s.substr(i, std::char_traits<char>::length(e)) == e) {
          out += e;
          i += std::char_traits<char>::length(e) - 1;
          entity = true;
          break;
        }
      if (!entity) out += "&amp;";
    } else if (c == '`') {
      std::size_t run = 0;
      while (i + run < s.size() && s[i + run] == '`') ++run;
      const std::string fence(run, '`');
      std::size_t end = s.find(fence, i + run);
      while (end != std::string_view::npos && end + run < s.size() && s[end + run] == '`')
        end = s.find(fence, end + run + 1);
      if (end == std::string_view::npos) {
        out += fence;
        i += run - 1;
        continue;
      }
      std::string_view code = s.substr(i + run, end - i - run);
      if (code.size() >= 2 && code.front() == ' ' && code.back() == ' ')
        code = code.substr(1, code.size() - 2);
      out += "<code>";
      for (char k : code) out += html_char(k);
      out += "</code>";
      i = end + run - 1;
    } else if (c == '*' && i + 1 < s.size() && s[i + 1] == '*') {
      out += strong ? "</strong>" : "<strong>";
      strong = !strong;
      ++i;
    } else {
      out += html_char(c);
    }
  }
  if (strong) out += "</strong>";
  return out;
}

// A table row's cells: split at each | outside a code span that no backslash escapes.
std::vector<std::string> cells_of(std::string_view row) {
  if (!row.empty() && row.front() == '|') row.remove_prefix(1);
  std::vector<std::string> out;
  std::string cell;
  bool code = false;
  for (std::size_t i = 0; i < row.size(); ++i) {
    const char c = row[i];
    if (c == '\\' && i + 1 < row.size() && !code) {
      cell += c;
      cell += row[++i];
    } else if (c == '`') {
      code = !code;
      cell += c;
    } else if (c == '|' && !code) {
      out.push_back(cell);
      cell.clear();
    } else {
      cell += c;
    }
  }
  if (cell.find_first_not_of(' ') != std::string::npos) out.push_back(cell);
  for (std::string& x : out) {
    const std::size_t a = x.find_first_not_of(' '), b = x.find_last_not_of(' ');
    x = a == std::string::npos ? "" : x.substr(a, b - a + 1);
  }
  return out;
}

std::string markdown_html(const std::string& md) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < md.size();) {
    const std::size_t nl = std::min(md.find('\n', at), md.size());
    lines.push_back(std::string_view(md).substr(at, nl - at));
    at = nl + 1;
  }
  // A heading waits for its content: one over Mermaid blocks only ("Charts") is left out.
  std::string out, paragraph, heading;
  const auto emit = [&](const std::string& html) {
    out += heading + html;
    heading.clear();
  };
  const auto flush = [&] {
    if (!paragraph.empty()) emit("<p>" + inline_html(paragraph) + "</p>\n");
    paragraph.clear();
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    if (l.rfind("```", 0) == 0) {  // a fenced block (Mermaid): skipped to its end, its heading too
      flush();
      heading.clear();
      while (++i < lines.size() && lines[i].rfind("```", 0) != 0) {
      }
      continue;
    }
    if (l.rfind("### ", 0) == 0 || l.rfind("## ", 0) == 0) {
      flush();
      const bool sub = l[2] == '#';
      heading = fmt::format("<h{0}>{1}</h{0}>\n", sub ? 4 : 3, inline_html(l.substr(sub ? 4 : 3)));
    } else if (!l.empty() && l.front() == '|') {
      flush();
      const std::vector<std::string> head = cells_of(l);
      std::vector<bool> right(head.size(), false);
      if (i + 1 < lines.size() && lines[i + 1].rfind("|-", 0) == 0) {
        const std::vector<std::string> rule = cells_of(lines[++i]);
        for (std::size_t k = 0; k < rule.size() && k < right.size(); ++k)
          right[k] = !rule[k].empty() && rule[k].back() == ':';
      }
      std::string table = "<div class=\"table\"><table>\n<thead><tr>";
      for (const std::string& h : head) table += "<th>" + inline_html(h) + "</th>";
      table += "</tr></thead>\n<tbody>\n";
      while (i + 1 < lines.size() && !lines[i + 1].empty() && lines[i + 1].front() == '|') {
        const std::vector<std::string> row = cells_of(lines[++i]);
        table += "<tr>";
        for (std::size_t k = 0; k < row.size(); ++k)
          table += std::string(k < right.size() && right[k] ? "<td class=\"n\">" : "<td>") +
                   inline_html(row[k]) + "</td>";
        table += "</tr>\n";
      }
      emit(table + "</tbody></table></div>\n");
    } else if (l.rfind("- ", 0) == 0) {
      flush();
      std::string list = "<ul>\n";
      for (--i; i + 1 < lines.size() && lines[i + 1].rfind("- ", 0) == 0;)
        list += "<li>" + inline_html(lines[++i].substr(2)) + "</li>\n";
      emit(list + "</ul>\n");
    } else if (l.find_first_not_of(' ') == std::string_view::npos) {
      flush();
    } else {
      paragraph += (paragraph.empty() ? "" : " ") + std::string(l);
    }
  }
  flush();
  return out;
}

// Charts in a row that wraps: each in a figure as wide as the chart was drawn (its SVG's width
// attribute), growing to at most 1.6 times that.
std::string figures(const std::vector<std::string>& charts) {
  std::string out = "<div class=\"figures\">\n";
  for (const std::string& svg : charts) {
    if (svg.empty()) continue;
    const std::size_t open = svg.find("<svg"), at = svg.find(" width=\"", open);
    const int w = open == std::string::npos || at == std::string::npos
                      ? 600
                      : std::max(1, std::atoi(svg.c_str() + at + 8));
    out += fmt::format("<figure style=\"flex-basis:{}px;max-width:{}px\">\n{}</figure>\n", w,
                       w * 8 / 5, svg);
  }
  return out + "</div>\n";
}

}  // namespace

std::string render_html(const PlanResult& plan, const PlanSource& loaded, const Options& o) {
  const PlanInput& in = plan.input;
  std::string s =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += fmt::format("<title>trainledger: {}</title>\n", xml_escape(in.model.name));
  s += "<style>\n"
       "body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}\n"
       "h1{font-size:20px}h2{font-size:16px;margin-top:28px}\n"
       "div.figures{display:flex;flex-wrap:wrap;gap:8px 24px;align-items:flex-start}\n"
       "figure{margin:0;flex:1 1 auto;min-width:0}\n"
       "figure svg.chart{display:block;margin:8px 0;width:100%;height:auto}\n"
       "div.table{overflow-x:auto;margin:8px 0}\n"
       "table{border-collapse:collapse;font-size:13px}\n"
       "th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}\n"
       "th{background:#f3f3f3}td.n{text-align:right;white-space:nowrap}\n"
       "code{font-size:12px;background:#f6f6f6;padding:0 2px}\n"
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
  // The charts fill the page: side by side where they fit, each grown to at most 1.6 times the
  // size it was drawn at (its text stays readable, never huge).
  s += "<h2>Memory</h2>\n" + figures({chart_memory(plan, o.units), chart_phases(plan, o.units)});
  if (plan.rl.present)
    s += "<h2>The RL step</h2>\n" +
         figures({chart_rl_timeline(plan), chart_rl_memory(plan, o.units)});
  s += "<h2>The step</h2>\n" + figures({chart_step(plan)});
  s += "<h2>Pipeline schedule</h2>\n" + figures({chart_schedule(plan)});
  s += "<h2>Communication</h2>\n" + figures({chart_comm(plan, o.units)});
  s += "<h2>Checkpoints</h2>\n" + figures({chart_checkpoint(plan)});
  s += "<h2>The ledger</h2>\n" + markdown_html(render_markdown(plan, loaded, o));
  s += "</body>\n</html>\n";
  return s;
}

}  // namespace trainledger::report
