// Inline SVG charts of a plan (charts.cpp); the HTML report and `--format svg` use them.
#pragma once

#include <string>

#include "trainledger/plan.hpp"
#include "trainledger/report.hpp"

namespace trainledger::report {

std::string chart_memory(const PlanResult& plan, MemUnits u);
// The worst stage's ledger at every phase, stacked by role (small multiples).
std::string chart_phases(const PlanResult& plan, MemUnits u);
std::string chart_schedule(const PlanResult& plan);
std::string chart_step(const PlanResult& plan);
std::string chart_comm(const PlanResult& plan, MemUnits u);
std::string chart_checkpoint(const PlanResult& plan);
// RL plans (rl_charts.cpp): one step lane by lane, and memory per GPU at each phase.
std::string chart_rl_timeline(const PlanResult& plan);
std::string chart_rl_memory(const PlanResult& plan, MemUnits u);
// The same step as a Mermaid gantt (a ```mermaid block; empty for a plan without [rl]).
std::string mermaid_rl_timeline(const PlanResult& plan);
// The charts Mermaid can express, as ```mermaid blocks for Markdown on code hosts: the peak of
// each stage against the capacity (xychart), the step's parts (xychart) and the pipeline
// schedule (gantt).
std::string mermaid_charts(const PlanResult& plan, MemUnits u);
// By name: memory, phases, schedule, step, comm, checkpoint, rl-timeline, rl-memory; empty for
// another name.
std::string chart(const std::string& name, const PlanResult& plan, MemUnits u);

}  // namespace trainledger::report
