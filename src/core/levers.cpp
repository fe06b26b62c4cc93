// Levers and fix-it hints: candidate changes chosen by what the plan and its items are,
// applied and validated by whatif.cpp, evaluated by the numbers-only path.
#include <algorithm>

#include "memory.hpp"
#include "trainledger/numbers.hpp"
#include "trainledger/whatif.hpp"

namespace trainledger {

namespace {

std::vector<Change> lever_candidates(const PlanInput& in, const Derived& d) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  std::vector<Change> c;
  if (p.pp > 1) {
    // More micro-batches per step shrink the bubble's share (a larger global batch).
    c.push_back(Change().set(in, Knob::global_batch, d.global_batch * 4));
    const int per_stage = in.model.layers / p.pp;
    if (p.schedule != Schedule::interleaved && per_stage % 2 == 0 && p.stage_layers.empty())
      c.push_back(Change()
                      .set(in, Knob::schedule, static_cast<std::int64_t>(Schedule::interleaved))
                      .set(in, Knob::virtual_stages, 2));
  }
  const auto recompute = [&](Recompute r) {
    return Change().set(in, Knob::recompute, static_cast<std::int64_t>(r));
  };
  if (t.recompute == Recompute::full) {
    c.push_back(recompute(Recompute::selective));
    c.push_back(recompute(Recompute::op));
  }
  if (t.recompute != Recompute::none) c.push_back(recompute(Recompute::none));
  if (p.tp > 1 && !p.sequence_parallel) c.push_back(Change().set(in, Knob::sequence_parallel, 1));
  if (d.grad_accum % 2 == 0) c.push_back(Change().set(in, Knob::micro_batch, t.micro_batch * 2));
  if (p.zero >= 2) c.push_back(Change().set(in, Knob::zero, 1));
  if (p.tp > 1 && p.tp % 2 == 0)
    c.push_back(Change().set(in, Knob::tp, p.tp / 2).set(in, Knob::dp, p.dp * 2));
  // Every overlap the stacks offer: TP communication behind the GEMMs (Transformer Engine's
  // userbuffers, torchtitan's AsyncTP), DP/ZeRO traffic behind the backward, ZeRO-1/2's
  // parameter all-gather behind the next forward (Megatron --overlap-param-gather).
  if (p.tp > 1 && !p.overlap_tp) c.push_back(Change().set(in, Knob::overlap_tp, 1));
  // Experts whole on each rank (docs/formulas.md#etp): ep spreads over tp, no expert-TP
  // exchange of the routed tokens, tp times the expert weights per GPU.
  if (is_moe(in.model) && p.tp > 1 && expert_tp(p) != 1)
    c.push_back(Change().set(in, Knob::etp, 1));
  if (p.dp > 1 && !p.overlap_dp) c.push_back(Change().set(in, Knob::overlap_dp, 1));
  if ((p.zero == 1 || p.zero == 2) && p.dp > 1 && !p.overlap_param_gather)
    c.push_back(Change().set(in, Knob::overlap_param_gather, 1));
  // A step that waits for the host (docs/formulas.md#dispatch): CUDA graphs replay the layers
  // with one launch each, a fused optimizer steps every tensor in one multi-tensor kernel.
  if (!t.cuda_graphs) c.push_back(Change().set(in, Knob::cuda_graphs, 1));
  if (t.optimizer_impl != OptimizerImpl::fused)
    c.push_back(
        Change().set(in, Knob::optimizer_impl, static_cast<std::int64_t>(OptimizerImpl::fused)));
  // A lower GEMM precision the GPU has (docs/formulas.md#recipes): bf16 → fp8, fp8 → fp4 on
  // block-scaled tensor cores. It changes the numerics: the lever says what it gains.
  const PeakFlops& peaks = in.cluster.gpu.peak_flops;
  if (t.finetune == Finetune::full && t.precision == DType::bf16 && peaks.fp8 > 0)
    c.push_back(Change().set(in, Knob::precision, 1));
  // NVFP4 as a speed-up: Transformer Engine's recipe (Megatron-LM --fp4-recipe nvfp4); torchao
  // has NVFP4 training for nn.Linear but rates its performance unoptimized (torchao
  // prototype/mx_formats/README.md, "Overall status": nvfp4 training, performance 🔴), so the
  // lever is not offered to the pytorch stack, which a plan can still ask for.
  if (t.finetune == Finetune::full && t.precision == DType::fp8 && t.recipe != Recipe::nvfp4 &&
      peaks.fp4 > 0 && t.framework == Framework::megatron)
    c.push_back(Change().set(in, Knob::precision, 2));
  return c;
}

}  // namespace

std::vector<Lever> find_levers(const PlanResult& plan, int count) {
  std::vector<Lever> out;
  const double before = value_of(plan.time, ItemId::throughput_tokens_per_s_per_gpu);
  if (before <= 0) return out;
  const PlanInput& in = plan.input;
  PlanNumbers r;
  const double limit = static_cast<double>(in.cluster.gpu.memory_bytes) *
                       (1 - std::max(0.0, plan.verdict.required_headroom));
  for (const Change& c : lever_candidates(in, plan.derived)) {
    const std::optional<PlanInput> changed = apply_valid(in, c);
    if (!changed) continue;  // breaks a rule (a divisibility rule): not a lever
    evaluate(*changed, r, PlanScope{true, false, false});  // the verdict and the time only
    const double after = value_of(r.time, ItemId::throughput_tokens_per_s_per_gpu);
    if (after <= before * 1.005 || !plan_fits(r.verdict) || r.verdict.peak_bytes > limit) continue;
    Lever l;
    l.change = c;
    l.throughput_before = before;
    l.throughput_after = after;
    l.bubble_before = value_of(plan.time, ItemId::pipeline_bubble_fraction);
    l.bubble_after = value_of(r.time, ItemId::pipeline_bubble_fraction);
    l.peak_bytes = r.verdict.peak_bytes;
    l.global_batch_before = plan.derived.global_batch;
    l.global_batch_after = r.derived.global_batch;
    l.grad_accum_before = plan.derived.grad_accum;
    l.grad_accum_after = r.derived.grad_accum;
    l.fits = plan_fits(r.verdict);
    out.push_back(l);
  }
  std::stable_sort(out.begin(), out.end(), [](const Lever& a, const Lever& b) {
    return a.throughput_after > b.throughput_after;
  });
  if (static_cast<int>(out.size()) > count) out.resize(count);
  return out;
}

namespace {

// Changes that shrink an item, in the order they are tried.
std::vector<Change> fix_candidates(ItemId id, const PlanInput& in, bool last_stage) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  std::vector<Change> k;
  auto add = [&](Knob knob, std::int64_t v) { k.push_back(Change().set(in, knob, v)); };
  auto add_enum = [&](Knob knob, auto v) { add(knob, static_cast<std::int64_t>(v)); };
  const ItemInfo& item = info(id);
  if (id == ItemId::logits) {
    add_enum(Knob::loss, Loss::chunked);
  } else if (item.role == Role::activation) {
    if (t.recompute != Recompute::full) add_enum(Knob::recompute, Recompute::full);
    if (t.recompute == Recompute::none) add_enum(Knob::recompute, Recompute::selective);
    if (t.attention == Attention::eager) add_enum(Knob::attention, Attention::flash);
    if (p.tp > 1 && !p.sequence_parallel) add(Knob::sequence_parallel, 1);
    if (t.micro_batch > 1 && t.micro_batch % 2 == 0) add(Knob::micro_batch, t.micro_batch / 2);
  } else if (item.role == Role::state && item.zero_stage > 0 && p.zero < item.zero_stage) {
    // ZeRO shards the item from its stage on.
    add(Knob::zero, item.zero_stage);
  }
  if (item.role == Role::state && item.zero_stage == 1) {
    if (t.optimizer == Optimizer::adamw && id != ItemId::master)
      add_enum(Knob::optimizer, Optimizer::adamw_8bit);
    if (p.zero >= 1 && p.offload == Offload::none && offloaded_under(id, Offload::optimizer))
      add_enum(Knob::offload, Offload::optimizer);
  }
  if (id == ItemId::temporaries) {
    if (last_stage) add_enum(Knob::loss, Loss::chunked);
    if (p.zero == 0 && !p.gradient_as_bucket_view) add(Knob::gradient_as_bucket_view, 1);
    if (p.grad_sync == GradSync::last_micro_batch)
      add_enum(Knob::grad_sync, GradSync::every_micro_batch);
  }
  if (id == ItemId::overhead_nccl && in.cluster.nccl_channels > 8) add(Knob::nccl_channels, 8);
  // PYTORCH_ALLOC_CONF=expandable_segments:True: the reserve falls to its expandable share
  // unless the plan gives cluster.fragmentation itself.
  const Source frag = in.provenance.of("cluster.fragmentation");
  if (id == ItemId::overhead_fragmentation && !t.expandable_segments &&
      (frag == Source::default_value || frag == Source::derived))
    add(Knob::expandable_segments, 1);
  return k;
}

}  // namespace

namespace {

// The peak of one stage of a changed plan that `evaluate(changed, r)` evaluated with only the
// stages that can hold its peak: theirs, or that stage's own ledger (the same evaluation).
double stage_peak(const PlanInput& changed, const PlanNumbers& r, int stage) {
  for (const StageNumbers& s : r.stages)
    if (s.stage == stage) return s.peak_bytes;
  const int pp = static_cast<int>(r.stage_layers.size());
  if (stage < 0 || stage >= pp) return 0;
  const StagePlace place{stage, r.stage_layers[stage], stage == 0, stage == pp - 1};
  return stage_memory<Num>(changed, r.derived, memory_model<Num>(changed), place).peak_bytes;
}

}  // namespace

std::vector<Fix> find_fixes(const PlanResult& plan, double limit_bytes, int count) {
  // The worst stage (a plan may hold only the stages that can hold its peak: PlanScope).
  const auto worst =
      std::find_if(plan.stages.begin(), plan.stages.end(),
                   [&](const StageMemory& s) { return s.stage == plan.worst_stage; });
  if (worst == plan.stages.end()) return {};
  const StageMemory& st = *worst;
  std::vector<LineItem> items = st.items;
  std::stable_sort(items.begin(), items.end(),
                   [](const LineItem& a, const LineItem& b) { return a.value > b.value; });
  const bool last = st.stage == static_cast<int>(stage_layer_counts(plan.input).size()) - 1;
  std::vector<Fix> out;
  PlanNumbers r;
  for (const LineItem& item : items) {
    if (static_cast<int>(out.size()) == count) break;
    Fix f;
    f.item = item.item;
    f.bytes = item.value;
    for (const Change& c : fix_candidates(item.item, plan.input, last)) {
      const std::optional<PlanInput> changed = apply_valid(plan.input, c);
      if (!changed) continue;  // not valid for this plan (e.g. a divisibility rule)
      evaluate(*changed, r, PlanScope{false, false, false});
      const double after = stage_peak(*changed, r, st.stage);
      if (st.peak_bytes - after > f.freed_bytes) {
        f.freed_bytes = st.peak_bytes - after;
        f.change = c;
        f.then_fits = r.verdict.peak_bytes <= limit_bytes;
      }
    }
    out.push_back(f);
  }
  return out;
}

}  // namespace trainledger
