// The arrangement that the table and Markdown renderers share: which stage columns to show
// and which rows, so both list exactly the same items.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trainledger/plan.hpp"

namespace trainledger::report {

// Stages whose ledgers are identical are shown as one column ("stages 1-2").
struct StageColumn {
  std::vector<int> stages;
  std::string title;  // "stage 0", "stages 1-2"
  std::string role;   // "first", "middle", "last", "only"
  int representative = 0;
};

struct MemoryRow {
  ItemId item;
  std::string id;
  std::string label;
  std::vector<std::optional<double>> values;  // per column; empty where the stage lacks it
};

struct MemoryView {
  std::vector<StageColumn> columns;
  std::vector<MemoryRow> rows;
};

// The stages' columns (identical neighbours share one); `only` non-empty: those stages alone,
// each in its own column (plan --stage).
// The measured keys as the reports list them, each with the profile that set it when keys came
// from several profiles (else ""): the table writes "key (from b.toml)", Markdown codes both.
std::vector<std::pair<std::string, std::string>> measured_keys(const PlanSource& loaded);

MemoryView memory_view(const PlanResult& plan, const std::vector<int>& only = {});

// What a user measures, predicted from a stage's ledger (docs/formulas.md#overheads): the
// device figure nvidia-smi shows (every item), the caching allocator's peak reserved memory
// (less the CUDA context and NCCL's buffers, which live outside it) and its peak allocated
// memory (less the fragmentation reserve); and the persistent training state (weights,
// gradients, optimizer state, master weights) that planning notes quote.
struct Comparable {
  double state = 0;
  double allocated = 0;  // torch.cuda.max_memory_allocated()
  double reserved = 0;   // torch.cuda.max_memory_reserved()
  double device = 0;     // nvidia-smi
};
Comparable comparable(const StageMemory& stage);

// "Llama-3.1-70B · 64 × H100 (8 nodes × 8) · tp 8 · pp 4 · dp 2 · ZeRO-1"
std::string plan_title(const PlanResult& plan);
// Facts of the derived section as label/value pairs, in display order.
std::vector<std::pair<std::string, std::string>> derived_facts(const PlanResult& plan);
// Time: the step's parts (id, label, seconds, share of the step) and one summary line.
struct TimeRow {
  ItemId item;
  std::string id, label;
  double seconds = 0;
  double share = 0;
};
std::vector<TimeRow> time_rows(const PlanResult& plan);
std::string throughput_line(const PlanResult& plan);
// "90 % band: step 46.1 s (41.2 s-53.0 s) · 711 tokens/s per GPU (…)", or "" without a band.
std::string time_band_line(const PlanResult& plan);
// The RL step's band and its throughput's, with the family they come from ("" when none).
std::string rl_band_line(const PlanResult& plan);
std::string reliability_line(const PlanResult& plan, double unit_bytes, const std::string& unit);

// The verdict as one sentence.
std::string verdict_sentence(const PlanResult& plan, const std::string& unit_name,
                             double unit_bytes);

}  // namespace trainledger::report
