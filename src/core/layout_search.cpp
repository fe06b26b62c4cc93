// Layout search: enumerate, validate by the plan's rules, prune by memory, time the rest
// (docs/cli.md#search). Threads take contiguous slices of the enumeration; each keeps its own
// numbers-only storage, so the inner loop allocates nothing but a rule's rare message.
#include "trainledger/layout_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "trainledger/numbers.hpp"
#include "trainledger/rules.hpp"
#include "trainledger/units.hpp"

namespace trainledger {

namespace {

bool given(const PlanInput& in, std::string_view key) {
  const Source s = in.provenance.of(key);
  return s != Source::default_value && s != Source::derived;
}

std::vector<int> divisors(int n, int limit) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, limit); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

template <typename T>
std::vector<T> or_all(const std::vector<T>& allowed, std::vector<T> all) {
  if (allowed.empty()) return all;
  std::vector<T> out;
  for (const T& v : all)
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) out.push_back(v);
  // A fixed value the automatic list does not hold is still tried (the rules judge it).
  for (const T& v : allowed)
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  return out;
}

// Stages as even as they can be: the extra layers go to the middle stages first (the first
// and the last also hold the embedding and the LM head), then to the first.
std::vector<int> uneven_stages(int layers, int pp) {
  std::vector<int> s(static_cast<std::size_t>(pp), layers / pp);
  int extra = layers % pp;
  for (int i = 1; i + 1 < pp && extra > 0; ++i, --extra) ++s[static_cast<std::size_t>(i)];
  for (int i = 0; extra > 0; i = (i + pp - 1) % pp, --extra) ++s[static_cast<std::size_t>(i)];
  return s;
}

// The layout's fields written into `work` (a copy of `base`), as with_layout does.
void apply_layout(PlanInput& work, const PlanInput& base, const Layout& l) {
  ParallelSpec& p = work.parallel;
  TrainingSpec& t = work.training;
  p.tp = l.tp;
  p.pp = l.pp;
  p.dp = l.dp;
  p.cp = l.cp;
  p.ep = l.ep;
  p.etp = l.etp;
  p.zero = l.zero;
  p.zero_shard_size = l.shard;
  if (l.placement == 1)
    p.placement = {"tp", "cp", "pp", "dp"};
  else
    p.placement = base.parallel.placement;
  p.sequence_parallel = l.sequence_parallel;
  p.overlap_tp = l.overlap_tp;
  p.offload = l.offload;
  p.schedule = l.schedule;
  p.virtual_stages = l.virtual_stages;
  p.stage_layers = l.stage_layers;
  t.micro_batch = l.micro_batch;
  t.recompute = l.recompute;
  t.global_batch = base.training.global_batch > 0 ? base.training.global_batch
                                                  : base.training.micro_batch * base.parallel.dp;
  const Framework f = base.training.framework;
  if (!given(base, "parallel.grad_sync")) p.grad_sync = default_grad_sync(f, l.zero, l.pp);
  if (!given(base, "parallel.reshard_after_forward"))
    p.reshard_after_forward = default_reshard_after_forward(f, l.zero, l.pp);
  if (base.training.framework == Framework::megatron && !given(base, "parallel.bucket_size")) {
    // Megatron-Core DDP: max(4e7, 1e6 × dp × cp) elements (the loader's derivation).
    const double ranks = static_cast<double>(l.dp) * l.cp;
    p.bucket_size = std::max(4e7, 1e6 * ranks) * dtype_bytes(t.reduce_dtype);
  }
}

double item(const NumItems& items, ItemId id) {
  for (const NumItem& i : items)
    if (i.item == id) return i.value;
  return 0;
}

bool better(const Layout& a, const Layout& b, Objective o, int world) {
  const double x = objective_value(a, o, world), y = objective_value(b, o, world);
  if (x != y) return x < y;
  return a.order < b.order;
}

struct Slice {
  std::vector<Layout> kept;  // fitting layouts with their results
  std::int64_t valid = 0;
};

// Memory does not depend on the rank order: layouts that differ only in it share one memory
// evaluation (the enumeration puts them next to each other).
bool same_memory(const Layout& a, const Layout& b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.ep == b.ep &&
         a.etp == b.etp && a.zero == b.zero && a.shard == b.shard &&
         a.sequence_parallel == b.sequence_parallel && a.recompute == b.recompute &&
         a.schedule == b.schedule && a.micro_batch == b.micro_batch &&
         a.virtual_stages == b.virtual_stages && a.stage_layers == b.stage_layers &&
         a.offload == b.offload;
}

// What a searching thread keeps: its copy of the plan, the numbers' storage, and which layout's
// memory the storage holds.
struct Worker {
  PlanInput in;
  PlanNumbers nums;
  const Layout* memory_of = nullptr;
};

constexpr PlanScope k_memory_scope{false, false, false};
constexpr PlanScope k_time_scope{true, false, false};

// One layout: the rules, then memory, then (when it fits) time; kept when it fits.
void evaluate_one(Layout& l, Worker& w, const PlanInput& base, double limit, Slice& s) {
  apply_layout(w.in, base, l);
  if (!check_rules(w.in).empty()) return;
  ++s.valid;
  if (w.memory_of == nullptr || !same_memory(*w.memory_of, l)) {
    evaluate(w.in, w.nums, k_memory_scope);
    w.memory_of = &l;
  }
  const PlanNumbers& nums = w.nums;
  l.peak_bytes = nums.verdict.peak_bytes;
  l.worst_stage = nums.worst_stage;
  // Kept only when every GPU and every host fits (cluster.host_memory).
  if (!(l.peak_bytes <= limit) || !nums.verdict.host_fits) return;
  evaluate_time(w.in, w.nums, k_time_scope);
  l.grad_accum = nums.derived.grad_accum;
  l.step_s = item(nums.time, ItemId::time_step);
  l.tokens_per_s_per_gpu = item(nums.time, ItemId::throughput_tokens_per_s_per_gpu);
  l.mfu = item(nums.time, ItemId::mfu);
  l.compute_s = item(nums.time, ItemId::time_compute);
  l.recompute_s = item(nums.time, ItemId::time_recompute);
  l.comm_s = item(nums.time, ItemId::time_comm_exposed);
  l.bubble_s = item(nums.time, ItemId::time_bubble);
  l.optimizer_s = item(nums.time, ItemId::time_optimizer);
  l.offload_s = item(nums.time, ItemId::time_offload);
  l.host_s = item(nums.time, ItemId::time_host);
  if (!(l.step_s > 0) || !std::isfinite(l.step_s)) return;
  s.kept.push_back(l);
}

}  // namespace

double objective_value(const Layout& l, Objective o, int world) {
  switch (o) {
    case Objective::step_time:
      return l.step_s;
    case Objective::tokens_per_s:
      return -l.tokens_per_s_per_gpu;
    case Objective::memory:
      return l.peak_bytes;
    case Objective::cost:
      return l.step_s * world;  // GPU-seconds per step
  }
  return l.step_s;
}

std::vector<std::string> layout_settings(const Layout& l, int nodes, int gpus_per_node) {
  std::vector<std::string> s = {
      fmt::format("parallel.tp={}", l.tp),
      fmt::format("parallel.pp={}", l.pp),
      fmt::format("parallel.dp={}", l.dp),
      fmt::format("parallel.cp={}", l.cp),
      fmt::format("parallel.ep={}", l.ep),
      fmt::format("parallel.etp={}", l.etp),
      fmt::format("parallel.zero={}", l.zero),
      fmt::format("parallel.sequence_parallel={}", l.sequence_parallel ? "true" : "false"),
      fmt::format("training.recompute={}", to_string(l.recompute)),
      fmt::format("training.micro_batch={}", l.micro_batch)};
  if (l.tp > 1) s.push_back(fmt::format("parallel.overlap_tp={}", l.overlap_tp ? "true" : "false"));
  if (l.offload != Offload::none)
    s.push_back(fmt::format("parallel.offload=\"{}\"", to_string(l.offload)));
  if (l.pp > 1) s.push_back(fmt::format("parallel.schedule={}", to_string(l.schedule)));
  if (l.schedule == Schedule::interleaved)
    s.push_back(fmt::format("parallel.virtual_stages={}", l.virtual_stages));
  if (!l.stage_layers.empty())
    s.push_back(fmt::format("parallel.stage_layers=[{}]", fmt::join(l.stage_layers, ",")));
  if (l.shard > 0) s.push_back(fmt::format("parallel.zero_shard_size={}", l.shard));
  if (l.placement == 1) s.push_back("parallel.placement=[\"tp\",\"cp\",\"pp\",\"dp\"]");
  s.push_back(fmt::format("cluster.nodes={}", nodes));
  if (gpus_per_node != 8) s.push_back(fmt::format("cluster.gpus_per_node={}", gpus_per_node));
  return s;
}

PlanInput with_layout(const PlanInput& base, const Layout& l) {
  PlanInput out = base;
  apply_layout(out, base, l);
  return out;
}

std::vector<Layout> enumerate_layouts(const PlanInput& base, const SearchSpace& space) {
  std::vector<Layout> out;
  const ModelSpec& m = base.model;
  const int gpn = base.cluster.gpus_per_node;
  const int world = base.cluster.nodes * gpn;
  if (m.count_only || m.layers < 1 || world < 1) return out;
  const std::int64_t batch = base.training.global_batch > 0
                                 ? base.training.global_batch
                                 : base.training.micro_batch * base.parallel.dp;
  const std::int64_t seq = base.training.seq_len;
  // Tensor parallelism stays within a node, or within an NVLink domain of several nodes in
  // whole nodes that divide it (NVL72's 18 trays of 4: 8, 12, 24, 36, 72), and splits the heads.
  std::vector<int> tps;
  const int domain = base.cluster.domain();
  for (int tp : divisors(domain, std::min(domain, world)))
    if (m.heads % tp == 0 && (tp <= gpn ? gpn % tp == 0 : tp % gpn == 0)) tps.push_back(tp);
  tps = or_all(space.tp, tps);
  std::vector<int> cps;
  for (int cp = 1; cp <= 16; cp *= 2)
    if (cp == 1 || (seq >= 8192 && seq % (2 * cp) == 0)) cps.push_back(cp);
  cps = or_all(space.cp, cps);
  const std::vector<int> zeros = or_all(space.zero, {0, 1, 2, 3});
  const std::vector<int> one = {1};
  const std::vector<Recompute> recomputes =
      or_all(space.recompute, {Recompute::none, Recompute::selective, Recompute::full});
  for (int tp : tps) {
    if (world % tp != 0) continue;
    std::vector<int> pps = or_all(space.pp, divisors(world / tp, m.layers));
    for (int pp : pps) {
      if ((world / tp) % pp != 0 || pp > m.layers) continue;
      const bool even = m.layers % pp == 0;
      if (!even && !space.uneven) continue;
      const std::vector<int> stages = even ? std::vector<int>{} : uneven_stages(m.layers, pp);
      // One stage has no schedule: it is 1F1B's degenerate case, never labelled interleaved
      // or zb-h1 (a search limited to those has no one-stage layouts).
      std::vector<Schedule> schedules = {Schedule::one_f_one_b};
      if (pp > 1) {
        // DualPipeV where its stack has it (PyTorch's pipelining, stages not compiled).
        const Framework fw = base.training.framework;
        const bool dualpipev =
            (fw == Framework::pytorch || fw == Framework::generic) && !base.training.compile;
        schedules =
            or_all(space.schedule,
                   dualpipev ? std::vector<Schedule>{Schedule::one_f_one_b, Schedule::interleaved,
                                                     Schedule::zb_h1, Schedule::dualpipev}
                             : std::vector<Schedule>{Schedule::one_f_one_b, Schedule::interleaved,
                                                     Schedule::zb_h1});
      } else if (!space.schedule.empty() &&
                 std::find(space.schedule.begin(), space.schedule.end(), Schedule::one_f_one_b) ==
                     space.schedule.end()) {
        continue;
      }
      // Virtual stages of the interleaved schedule: every count that splits each stage's layers
      // evenly, the first and last stage counting the embedding or the loss as a layer when
      // that makes them split (Megatron-Core's account_for_embedding_in_pipeline_split; the
      // rules' check): Llama 3's 126 layers over 16 stages of [7, 8 × 14, 7] take 2, 4 or 8.
      std::vector<int> interleavings;
      if (pp > 1) {
        const int most = even ? m.layers / pp : *std::max_element(stages.begin(), stages.end());
        for (int v = 2; v <= most + 1; ++v) {
          bool splits = true;
          for (int s = 0; s < pp && splits; ++s) {
            const int layers = even ? m.layers / pp : stages[static_cast<std::size_t>(s)];
            const bool edge = s == 0 || s == pp - 1;
            splits = layers % v == 0 || (edge && (layers + 1) % v == 0 && !even);
          }
          if (splits) interleavings.push_back(v);
        }
      }
      interleavings = or_all(space.virtual_stages, interleavings);
      for (int cp : cps) {
        if ((world / tp / pp) % cp != 0) continue;
        const int dp = world / tp / pp / cp;
        if (batch % dp != 0) continue;
        std::vector<int> eps = {1};
        if (m.experts > 0)
          for (int ep : divisors(tp * dp * cp, m.experts))
            if (ep > 1 && m.experts % ep == 0) eps.push_back(ep);
        eps = or_all(space.ep, eps);
        // The expert tensor-parallel sizes (docs/formulas.md#etp): tp (ep within dp × cp) and,
        // with tp > 1, experts whole on each rank (ep within tp × dp × cp).
        std::vector<std::pair<int, int>> expert_layouts;
        for (int ep : eps) {
          if ((dp * cp) % ep == 0) expert_layouts.push_back({ep, 0});
          if (m.experts > 0 && tp > 1 && (tp * dp * cp) % ep == 0 && m.expert_ffn > 0)
            expert_layouts.push_back({ep, 1});
        }
        std::vector<int> mbs;
        for (std::int64_t mb = 1; mb <= std::min<std::int64_t>(batch / dp, 64); ++mb)
          if ((batch / dp) % mb == 0) mbs.push_back(static_cast<int>(mb));
        mbs = or_all(space.micro_batch, mbs);
        const std::vector<int> sps =
            or_all(space.sequence_parallel, tp > 1 ? std::vector<int>{0, 1} : std::vector<int>{0});
        // HSDP shard groups spanning 1, 2, 4 or 8 nodes of this layout's ranks.
        std::vector<int> shards = {0};
        for (int nodes = 1; nodes <= 8; nodes *= 2) {
          const int s = nodes * gpn / tp;
          if (s >= 2 && s < dp * cp && (dp * cp) % s == 0 &&
              std::find(shards.begin(), shards.end(), s) == shards.end())
            shards.push_back(s);
        }
        shards = or_all(space.shard, shards);
        // TP communication behind the GEMMs (Transformer Engine's userbuffers, torchtitan's
        // AsyncTP) or not: the stack may lack it, so both are tried (memory is the same).
        const std::vector<int> overlaps =
            or_all(space.overlap_tp, tp > 1 ? std::vector<int>{0, 1} : std::vector<int>{0});
        // The optimizer's state on the host (ZeRO >= 1: ZeRO-Offload, Megatron-Core's optimizer
        // offload, FSDP's CPUOffload) and the parameters too (ZeRO-3): the rules' pairs only.
        // By default the plan's own (search_layouts tries the others when nothing fits).
        const std::vector<Offload> offloads =
            space.offload.empty() ? std::vector<Offload>{base.parallel.offload} : space.offload;
        std::vector<int> placements = {0};
        if (pp > 1 && dp > 1) placements.push_back(1);
        placements = or_all(space.placement, placements);
        for (const auto& [ep, etp] : expert_layouts)
          for (int zero : zeros) {
            if (dp * cp == 1 && zero > 0) continue;
            for (int shard : shards) {
              if (shard > 0 && zero == 0) continue;
              for (int sp : sps)
                for (Recompute rc : recomputes)
                  for (int mb : mbs)
                    for (Schedule sch : schedules)
                      for (int vs : sch == Schedule::interleaved ? interleavings : one)
                        for (int place : placements)
                          for (Offload off : offloads) {
                            if ((off == Offload::optimizer && zero == 0) ||
                                (off == Offload::optimizer_params && zero != 3))
                              continue;
                            for (int ovl : overlaps) {
                              Layout l;
                              l.tp = tp;
                              l.pp = pp;
                              l.dp = dp;
                              l.cp = cp;
                              l.ep = ep;
                              l.etp = etp;
                              l.zero = zero;
                              l.shard = shard;
                              l.placement = place;
                              l.sequence_parallel = sp != 0;
                              l.overlap_tp = ovl != 0;
                              l.offload = off;
                              l.recompute = rc;
                              l.micro_batch = mb;
                              l.schedule = sch;
                              l.virtual_stages = vs;
                              l.stage_layers = stages;
                              l.order = static_cast<std::int64_t>(out.size());
                              out.push_back(std::move(l));
                            }
                          }
            }
          }
      }
    }
  }
  return out;
}

namespace {

SearchResult search_space(const PlanInput& base, const SearchOptions& o) {
  SearchResult r;
  std::vector<Layout> all = enumerate_layouts(base, o.space);
  r.enumerated = static_cast<std::int64_t>(all.size());
  r.limit_bytes = static_cast<double>(base.cluster.gpu.memory_bytes) * (1.0 - o.headroom);
  // The family of the plan is the layouts' too (its stack, model and GPU count stay).
  r.band = memory_band(base, 1.0, 0.0, o.confidence);
  r.estimate_limit_bytes = band_limit(r.band, r.limit_bytes);
  const int world = base.cluster.nodes * base.cluster.gpus_per_node;
  const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(all.size() / 64 + 1)));
  std::vector<Slice> slices(static_cast<std::size_t>(jobs));
  std::atomic<std::int64_t> done{0};
  // Threads take chunks of the enumeration in turn: layouts with many stages cost more, and
  // they lie together in the enumeration's order.
  constexpr std::size_t k_chunk = 64;
  std::atomic<std::size_t> next{0};
  auto work = [&](int j) {
    Slice& s = slices[static_cast<std::size_t>(j)];
    Worker w{base, PlanNumbers{}, nullptr};
    const std::size_t n = all.size();
    for (std::size_t from = next.fetch_add(k_chunk); from < n; from = next.fetch_add(k_chunk)) {
      const std::size_t to = std::min(n, from + k_chunk);
      done.fetch_add(static_cast<std::int64_t>(to - from), std::memory_order_relaxed);
      for (std::size_t i = from; i < to; ++i)
        evaluate_one(all[i], w, base, r.estimate_limit_bytes, s);
    }
  };
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j)
    threads.emplace_back([&, j] {
      work(j);
      finished.fetch_add(1);
    });
  // The caller's progress line, from this thread only.
  while (o.progress && finished.load() < jobs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    o.progress(std::min(done.load(), r.enumerated), r.enumerated);
  }
  for (std::thread& t : threads) t.join();
  if (o.progress) o.progress(r.enumerated, r.enumerated);
  std::vector<Layout> kept;
  for (Slice& s : slices) {
    r.valid += s.valid;
    for (Layout& l : s.kept) kept.push_back(std::move(l));
  }
  r.fitting = static_cast<std::int64_t>(kept.size());
  std::sort(kept.begin(), kept.end(),
            [&](const Layout& a, const Layout& b) { return better(a, b, o.objective, world); });
  r.pareto = pareto_front(kept);
  // The top list skips a layout whose numbers equal a listed one's to the bit while only a knob
  // that changes nothing differs (selective recompute under flash attention, a sequence
  // parallel flag that tp = 1 ignores, a rank order that puts the same links under each
  // dimension): the first in the enumeration stands for them.
  auto same = [](const Layout& a, const Layout& b) {
    return a.peak_bytes == b.peak_bytes && a.step_s == b.step_s && a.tp == b.tp && a.pp == b.pp &&
           a.dp == b.dp && a.cp == b.cp && a.ep == b.ep && a.etp == b.etp && a.zero == b.zero &&
           a.micro_batch == b.micro_batch && a.schedule == b.schedule &&
           a.virtual_stages == b.virtual_stages && a.shard == b.shard && a.offload == b.offload;
  };
  const std::size_t want = static_cast<std::size_t>(std::max(0, o.top));
  for (Layout& l : kept) {
    if (r.top.size() >= want) break;
    bool dup = false;
    for (const Layout& t : r.top) dup = dup || same(l, t);
    if (!dup) r.top.push_back(std::move(l));
  }
  return r;
}

}  // namespace

SearchResult search_layouts(const PlanInput& base, const SearchOptions& o) {
  SearchResult r = search_space(base, o);
  // Offload only slows a step: when the space leaves it open and nothing fits with the plan's
  // own choice (no offload, as a rule), every choice is searched: the optimizer's state on the
  // host from ZeRO-1 on, the parameters too at ZeRO-3, and none.
  if (r.fitting == 0 && o.space.offload.empty()) {
    SearchOptions with = o;
    with.space.offload = {Offload::none, Offload::optimizer, Offload::optimizer_params};
    r = search_space(base, with);
    r.offload_tried = true;
  }
  return r;
}

}  // namespace trainledger
