// Pipeline timelines: each device's op order per schedule (GPipe: Huang et al. 2019; 1F1B:
// Narayanan et al. 2021 PipeDream-Flush; interleaved 1F1B: Narayanan et al. 2021 §2.2 and
// Megatron-LM's schedules.py; ZB-H1: Qi et al. 2023), then list scheduling against the
// dependencies between stages.
#include "trainledger/timeline.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>

#include "timing.hpp"

namespace trainledger {

namespace {

struct Key {
  int kind, mb, chunk, stage;
};

int kind_index(OpKind k) { return k == OpKind::forward ? 0 : k == OpKind::backward ? 1 : 2; }

// The ops each device runs, in order.
std::vector<std::vector<PipelineOp>> orders(int pp, int m, Schedule schedule, int vs) {
  std::vector<std::vector<PipelineOp>> out(static_cast<std::size_t>(pp));
  auto op = [](int s, int mb, int c, OpKind k) { return PipelineOp{s, mb, c, k, 0, 0}; };
  for (int s = 0; s < pp; ++s) {
    auto& o = out[static_cast<std::size_t>(s)];
    if (schedule == Schedule::gpipe) {
      for (int i = 0; i < m; ++i) o.push_back(op(s, i, 0, OpKind::forward));
      for (int i = 0; i < m; ++i) o.push_back(op(s, i, 0, OpKind::backward));
    } else if (schedule == Schedule::interleaved && vs > 1) {
      // Megatron-LM: forwards in groups of pp micro-batches per chunk, backwards the same with
      // the chunks reversed; warmup (pp − s − 1)·2 + (vs − 1)·pp forwards.
      const int total = m * vs;
      auto fwd = [&](int k) {
        return op(s, (k / (pp * vs)) * pp + k % pp, (k / pp) % vs, OpKind::forward);
      };
      auto bwd = [&](int k) {
        return op(s, (k / (pp * vs)) * pp + k % pp, vs - 1 - (k / pp) % vs, OpKind::backward);
      };
      const int warm = std::min((pp - s - 1) * 2 + (vs - 1) * pp, total);
      int f = 0, b = 0;
      for (; f < warm; ++f) o.push_back(fwd(f));
      while (f < total) {
        o.push_back(fwd(f++));
        o.push_back(bwd(b++));
      }
      while (b < total) o.push_back(bwd(b++));
    } else {
      // 1F1B (and zb-h1's order of forwards and input gradients).
      const int warm = std::min(pp - s - 1, m);
      const bool zb = schedule == Schedule::zb_h1;
      const int deferred = zb ? std::min(pp - s - 1, m) : 0;  // W's moved into the cooldown
      int f = 0, b = 0;
      std::vector<int> later;
      auto backward = [&](int i) {
        o.push_back(op(s, i, 0, OpKind::backward));
        if (!zb) return;
        if (static_cast<int>(later.size()) < deferred)
          later.push_back(i);
        else
          o.push_back(op(s, i, 0, OpKind::weight));
      };
      for (; f < warm; ++f) o.push_back(op(s, f, 0, OpKind::forward));
      while (f < m) {
        o.push_back(op(s, f++, 0, OpKind::forward));
        backward(b++);
      }
      while (b < m) backward(b++);
      for (int i : later) o.push_back(op(s, i, 0, OpKind::weight));
    }
  }
  return out;
}

// What an op waits for besides the previous op on its device (at most two ops).
struct Deps {
  std::array<Key, 2> keys{};
  int n = 0;
  void add(Key k) { keys[static_cast<std::size_t>(n++)] = k; }
};

Deps deps(const PipelineOp& o, int pp, int vs) {
  Deps d;
  const int F = 0, B = 1;
  const int last_chunk = vs - 1;
  if (o.kind == OpKind::forward) {
    if (o.stage > 0)
      d.add({F, o.micro_batch, o.chunk, o.stage - 1});
    else if (o.chunk > 0)
      d.add({F, o.micro_batch, o.chunk - 1, pp - 1});
  } else if (o.kind == OpKind::backward) {
    d.add({F, o.micro_batch, o.chunk, o.stage});
    if (o.stage < pp - 1)
      d.add({B, o.micro_batch, o.chunk, o.stage + 1});
    else if (o.chunk < last_chunk)
      d.add({B, o.micro_batch, o.chunk + 1, 0});
  } else {
    d.add({B, o.micro_batch, o.chunk, o.stage});
  }
  return d;
}

// The most ops a chart simulates, and the most stages it draws (the first and last half of it
// when there are more): a drawing stays a few hundred kilobytes for any pp and micro-batches.
constexpr std::int64_t k_simulated_ops = 8192;
constexpr int k_drawn_stages = 32;

}  // namespace

std::vector<PipelineOp> pipeline_timeline(int pp, int m, Schedule schedule, int vs,
                                          double forward_s, double backward_s) {
  std::vector<PipelineOp> out;
  if (pp < 1 || m < 1 || pp > 4096 || m > 100000) return out;
  // DualPipeV's overlapped forward-backward pairs are not drawn; its bubble is the formula's.
  if (schedule == Schedule::dualpipev) return out;
  if (schedule != Schedule::interleaved) vs = 1;
  if (schedule == Schedule::interleaved && (vs < 2 || m % pp != 0)) return out;
  // Every op's end time, by (kind, micro-batch, chunk, stage): at most 2^24 of them.
  const std::int64_t slots = std::int64_t{3} * m * vs * pp;
  if (vs > 100000 || slots > (std::int64_t{1} << 24)) return out;
  const bool zb = schedule == Schedule::zb_h1;
  const double f = forward_s / vs;
  const double b = (zb ? 0.5 : 1.0) * backward_s / vs;
  const double w = zb ? 0.5 * backward_s : 0.0;
  auto ops = orders(pp, m, schedule, vs);
  std::vector<double> done(static_cast<std::size_t>(slots), -1.0);  // end times; −1: not yet
  auto slot = [&](const Key& k) {
    return static_cast<std::size_t>(((std::int64_t{k.kind} * m + k.mb) * vs + k.chunk) * pp +
                                    k.stage);
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> free(static_cast<std::size_t>(pp), 0.0);
  std::size_t remaining = 0;
  for (const auto& o : ops) remaining += o.size();
  out.reserve(remaining);
  // Runs the ops of device `s` until one waits for an op not yet run.
  auto advance = [&](int s) {
    bool progressed = false;
    auto& list = ops[static_cast<std::size_t>(s)];
    std::size_t& i = next[static_cast<std::size_t>(s)];
    while (i < list.size()) {
      PipelineOp o = list[i];
      double start = free[static_cast<std::size_t>(s)];
      bool ready = true;
      const Deps d = deps(o, pp, vs);
      for (int k = 0; k < d.n; ++k) {
        const double end = done[slot(d.keys[static_cast<std::size_t>(k)])];
        if (end < 0) {
          ready = false;
          break;
        }
        start = std::max(start, end);
      }
      if (!ready) break;
      const double len = o.kind == OpKind::forward ? f : o.kind == OpKind::backward ? b : w;
      o.start_s = start;
      o.end_s = start + len;
      free[static_cast<std::size_t>(s)] = o.end_s;
      done[slot({kind_index(o.kind), o.micro_batch, o.chunk, o.stage})] = o.end_s;
      out.push_back(o);
      ++i;
      --remaining;
      progressed = true;
    }
    return progressed;
  };
  // Each op starts when its device is free and the ops it waits for have ended, whatever order
  // the devices are visited in: sweeps up (forwards flow) and down (backwards flow) the stages.
  while (remaining > 0) {
    bool progressed = false;
    for (int s = 0; s < pp; ++s) progressed = advance(s) || progressed;
    for (int s = pp - 1; s >= 0; --s) progressed = advance(s) || progressed;
    if (!progressed) return {};  // a schedule that deadlocks: nothing to draw
  }
  std::sort(out.begin(), out.end(), [](const PipelineOp& x, const PipelineOp& y) {
    return std::tie(x.stage, x.start_s) < std::tie(y.stage, y.start_s);
  });
  return out;
}

DrawnSchedule drawn_schedule(const PlanResult& plan) {
  DrawnSchedule d;
  const ParallelSpec& p = plan.input.parallel;
  d.stages = std::max(1, p.pp);
  d.micro_batches = static_cast<int>(plan.derived.grad_accum);
  for (int s = 0; s < d.stages; ++s) {
    if (d.stages > k_drawn_stages && s == k_drawn_stages / 2) s = d.stages - k_drawn_stages / 2;
    d.drawn.push_back(s);
  }
  const MicroBatchSplit split = micro_batch_split(plan.input, stage_layer_counts(plan.input));
  d.slow_stage = split.stage;
  d.forward_s = split.forward_s;
  d.backward_s = split.backward_s;
  if (!(d.forward_s + d.backward_s > 0) || d.micro_batches < 1) return d;
  const bool interleaved = p.schedule == Schedule::interleaved;
  int m = std::min(d.micro_batches, std::max(2 * p.pp, 8));
  if (interleaved) m -= m % std::max(1, p.pp);
  // Ops per micro-batch and stage: a forward and a backward per chunk, zb-h1's weight gradient.
  const std::int64_t per_mb =
      (interleaved ? std::max(1, p.virtual_stages) : 1) * (p.schedule == Schedule::zb_h1 ? 3 : 2);
  const std::int64_t fit = k_simulated_ops / (std::int64_t{d.stages} * per_mb);
  if (m > fit) {
    m = static_cast<int>(fit);
    if (interleaved) m -= m % std::max(1, p.pp);
    d.capped = true;
    if (m < 1) return d;  // too many stages (or chunks) to simulate one micro-batch
  }
  d.shown = std::max(1, m);
  std::vector<PipelineOp> ops =
      pipeline_timeline(p.pp, d.shown, p.schedule, p.virtual_stages, d.forward_s, d.backward_s);
  for (const PipelineOp& o : ops) d.end_s = std::max(d.end_s, o.end_s);
  if (static_cast<int>(d.drawn.size()) < d.stages)
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [&](const PipelineOp& o) {
                               return !std::binary_search(d.drawn.begin(), d.drawn.end(), o.stage);
                             }),
              ops.end());
  d.ops = std::move(ops);
  return d;
}

}  // namespace trainledger
