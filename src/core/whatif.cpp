// What-if in the core: typed changes applied to PlanInput, validated by the plan's rules and
// evaluated by the numbers-only path (docs/cli.md#levers, docs/cli.md#check).
#include "trainledger/whatif.hpp"

#include <algorithm>

#include "trainledger/numbers.hpp"
#include "trainledger/rules.hpp"

namespace trainledger {

namespace {

template <typename E>
std::int64_t as_int(E e) {
  return static_cast<std::int64_t>(e);
}

template <typename E>
std::string enum_text(std::int64_t v) {
  return std::string(to_string(static_cast<E>(v)));
}

// The default of parallel.grad_sync (docs/config.md): ZeRO 0-1 reduce once per step, 2-3
// every micro-batch.
GradSync default_grad_sync(int zero) {
  return zero >= 2 ? GradSync::every_micro_batch : GradSync::last_micro_batch;
}

bool given(const PlanInput& in, std::string_view key) {
  const Source s = in.provenance.of(key);
  return s != Source::default_value && s != Source::derived;
}

}  // namespace

std::string_view key_of(Knob k) {
  switch (k) {
    case Knob::global_batch:
      return "training.global_batch";
    case Knob::micro_batch:
      return "training.micro_batch";
    case Knob::recompute:
      return "training.recompute";
    case Knob::attention:
      return "training.attention";
    case Knob::loss:
      return "training.loss";
    case Knob::optimizer:
      return "training.optimizer";
    case Knob::tp:
      return "parallel.tp";
    case Knob::dp:
      return "parallel.dp";
    case Knob::sequence_parallel:
      return "parallel.sequence_parallel";
    case Knob::zero:
      return "parallel.zero";
    case Knob::schedule:
      return "parallel.schedule";
    case Knob::virtual_stages:
      return "parallel.virtual_stages";
    case Knob::offload:
      return "parallel.offload";
    case Knob::gradient_as_bucket_view:
      return "parallel.gradient_as_bucket_view";
    case Knob::grad_sync:
      return "parallel.grad_sync";
    case Knob::nccl_channels:
      return "cluster.nccl_channels";
  }
  return "?";
}

std::string knob_text(Knob k, std::int64_t v) {
  switch (k) {
    case Knob::recompute:
      return enum_text<Recompute>(v);
    case Knob::attention:
      return enum_text<Attention>(v);
    case Knob::loss:
      return enum_text<Loss>(v);
    case Knob::optimizer:
      return enum_text<Optimizer>(v);
    case Knob::schedule:
      return enum_text<Schedule>(v);
    case Knob::offload:
      return enum_text<Offload>(v);
    case Knob::grad_sync:
      return enum_text<GradSync>(v);
    case Knob::sequence_parallel:
    case Knob::gradient_as_bucket_view:
      return v != 0 ? "true" : "false";
    default:
      return std::to_string(v);
  }
}

std::int64_t knob_value(const PlanInput& in, Knob k) {
  const TrainingSpec& t = in.training;
  const ParallelSpec& p = in.parallel;
  switch (k) {
    case Knob::global_batch:
      return t.global_batch > 0 ? t.global_batch : t.micro_batch * p.dp;
    case Knob::micro_batch:
      return t.micro_batch;
    case Knob::recompute:
      return as_int(t.recompute);
    case Knob::attention:
      return as_int(t.attention);
    case Knob::loss:
      return as_int(t.loss);
    case Knob::optimizer:
      return as_int(t.optimizer);
    case Knob::tp:
      return p.tp;
    case Knob::dp:
      return p.dp;
    case Knob::sequence_parallel:
      return p.sequence_parallel ? 1 : 0;
    case Knob::zero:
      return p.zero;
    case Knob::schedule:
      return as_int(p.schedule);
    case Knob::virtual_stages:
      return p.virtual_stages;
    case Knob::offload:
      return as_int(p.offload);
    case Knob::gradient_as_bucket_view:
      return p.gradient_as_bucket_view ? 1 : 0;
    case Knob::grad_sync:
      return as_int(p.grad_sync);
    case Knob::nccl_channels:
      return in.cluster.nccl_channels;
  }
  return 0;
}

Change& Change::set(const PlanInput& base, Knob k, std::int64_t to) {
  if (m_size < static_cast<int>(m_edits.size()))
    m_edits[m_size++] = Edit{k, knob_value(base, k), to};
  return *this;
}

PlanInput apply(const PlanInput& in, const Change& c) {
  PlanInput out = in;
  TrainingSpec& t = out.training;
  ParallelSpec& p = out.parallel;
  // The global batch is held: a plan that never gave one keeps the batch it had.
  if (t.global_batch <= 0) t.global_batch = t.micro_batch * p.dp;
  for (const Edit& e : c) {
    const std::int64_t v = e.to;
    switch (e.knob) {
      case Knob::global_batch:
        t.global_batch = v;
        break;
      case Knob::micro_batch:
        t.micro_batch = v;
        break;
      case Knob::recompute:
        t.recompute = static_cast<Recompute>(v);
        break;
      case Knob::attention:
        t.attention = static_cast<Attention>(v);
        break;
      case Knob::loss:
        t.loss = static_cast<Loss>(v);
        break;
      case Knob::optimizer:
        t.optimizer = static_cast<Optimizer>(v);
        break;
      case Knob::tp:
        p.tp = static_cast<int>(v);
        break;
      case Knob::dp:
        p.dp = static_cast<int>(v);
        break;
      case Knob::sequence_parallel:
        p.sequence_parallel = v != 0;
        break;
      case Knob::zero:
        p.zero = static_cast<int>(v);
        if (!given(in, "parallel.grad_sync")) p.grad_sync = default_grad_sync(p.zero);
        break;
      case Knob::schedule:
        p.schedule = static_cast<Schedule>(v);
        break;
      case Knob::virtual_stages:
        p.virtual_stages = static_cast<int>(v);
        break;
      case Knob::offload:
        p.offload = static_cast<Offload>(v);
        break;
      case Knob::gradient_as_bucket_view:
        p.gradient_as_bucket_view = v != 0;
        break;
      case Knob::grad_sync:
        p.grad_sync = static_cast<GradSync>(v);
        break;
      case Knob::nccl_channels:
        out.cluster.nccl_channels = static_cast<int>(v);
        break;
    }
    out.provenance.set(key_of(e.knob), Source::change);
  }
  return out;
}

std::optional<PlanInput> apply_valid(const PlanInput& in, const Change& c) {
  PlanInput out = apply(in, c);
  if (!check_rules(out).empty()) return std::nullopt;
  return out;
}

}  // namespace trainledger

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
  return c;
}

}  // namespace

std::vector<Lever> find_levers(const PlanResult& plan, int count) {
  std::vector<Lever> out;
  const double before = value_of(plan.time, ItemId::throughput_tokens_per_s_per_gpu);
  if (before <= 0) return out;
  const PlanInput& in = plan.input;
  PlanNumbers r;
  for (const Change& c : lever_candidates(in, plan.derived)) {
    const std::optional<PlanInput> changed = apply_valid(in, c);
    if (!changed) continue;  // breaks a rule (a divisibility rule): not a lever
    evaluate(*changed, r, PlanScope{true, false});
    const double after = value_of(r.time, ItemId::throughput_tokens_per_s_per_gpu);
    if (after <= before * 1.005 || !r.verdict.fits) continue;
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
    l.fits = r.verdict.fits;
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
  return k;
}

}  // namespace

std::vector<Fix> find_fixes(const PlanResult& plan, double limit_bytes, int count) {
  const StageMemory& st = plan.stages[plan.worst_stage];
  std::vector<LineItem> items = st.items;
  std::stable_sort(items.begin(), items.end(),
                   [](const LineItem& a, const LineItem& b) { return a.value > b.value; });
  const bool last = st.stage == static_cast<int>(plan.stages.size()) - 1;
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
      evaluate(*changed, r, PlanScope{false, false});
      const double after = r.stages[st.stage].peak_bytes;
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
