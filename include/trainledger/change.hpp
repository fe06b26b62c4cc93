// A typed change to a plan's inputs: knobs and their values (what-if questions, levers,
// fix-it hints). Evaluated by the core (trainledger/whatif.hpp), rendered by the reports.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "trainledger/items.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

// The knobs a change can turn: each is one plan-file key.
enum class Knob : std::uint8_t {
  global_batch,
  micro_batch,
  recompute,
  attention,
  loss,
  optimizer,
  tp,
  dp,
  sequence_parallel,
  zero,
  schedule,
  virtual_stages,
  offload,
  gradient_as_bucket_view,
  grad_sync,
  nccl_channels,
  overlap_tp,
  overlap_dp,
  overlap_param_gather,
  expandable_segments,
  cuda_graphs,
  optimizer_impl,
  // The GEMMs' precision as a plan writes it, with its default recipe: 0 bf16, 1 fp8
  // (tensorwise), 2 fp4 (nvfp4).
  precision,
  etp,  // parallel.etp: the expert tensor-parallel size (0 = tp)
};
// The plan-file key of a knob ("training.recompute").
std::string_view key_of(Knob k);
// A knob's value as the plan file writes it: enums by name, booleans as true/false.
std::string knob_text(Knob k, std::int64_t value);
// Whether a knob is a count (batch sizes, parallel sizes, ZeRO stage, channels), whose change
// reads "from → to", rather than a choice.
bool knob_is_count(Knob k);

// One knob set to a value (enums by their underlying value, booleans as 0 or 1).
struct Edit {
  Knob knob = Knob::micro_batch;
  std::int64_t from = 0;
  std::int64_t to = 0;
};

// Knobs turned together (tp halved and dp doubled); at most four.
class Change {
 public:
  Change() = default;
  // Adds knob = to, remembering its value in `base`.
  Change& set(const PlanInput& base, Knob k, std::int64_t to);
  const Edit* begin() const { return m_edits.data(); }
  const Edit* end() const { return m_edits.data() + m_size; }
  int size() const { return m_size; }
  bool empty() const { return m_size == 0; }

 private:
  std::array<Edit, 4> m_edits{};
  int m_size = 0;
};

// A change that speeds the step up, found by evaluating it.
struct Lever {
  Change change;
  double throughput_before = 0;  // tokens/s per GPU
  double throughput_after = 0;
  double bubble_before = 0;  // share of the pipeline
  double bubble_after = 0;
  double peak_bytes = 0;  // the worst stage's peak after the change
  std::int64_t global_batch_before = 0;
  std::int64_t global_batch_after = 0;
  std::int64_t grad_accum_before = 0;
  std::int64_t grad_accum_after = 0;
  bool fits = true;
};

// For one of the largest items of the worst stage: the change that frees the most memory on
// that stage, if any does.
struct Fix {
  ItemId item = ItemId::params;
  double bytes = 0;              // the item's size before
  std::optional<Change> change;  // none: no single knob shrinks it
  double freed_bytes = 0;        // on the worst stage
  bool then_fits = false;        // the changed plan's worst peak is within `limit_bytes`
};

}  // namespace trainledger
