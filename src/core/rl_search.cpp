// Search over an RL plan (docs/rl.md#search). Pools first (colocated on every GPU; split with
// whole nodes, or quarters of one node, generating), then per pool the layout search's fastest
// training layouts and its Pareto front, then per training layout every engine layout and
// memory fraction: compute_rl on the layout's memory and its plan at the mean lengths, which are
// worked out once per layout.
#include "trainledger/rl_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "trainledger/rules.hpp"

namespace trainledger {

namespace {

struct Pool {
  RlPlacement placement = RlPlacement::colocated;
  int rollout_gpus = 0;
  int train_gpus = 0;
  int nodes = 0, gpus_per_node = 0;
};

template <typename T>
bool allowed(const std::vector<T>& list, const T& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

// The pools on `total` GPUs of `gpn` per node: colocated, and split with whole nodes
// generating (at most 7 shares, evenly spread) or, on one node, a quarter, half or three
// quarters of it; the training pool is whole nodes or part of one node.
std::vector<Pool> pools_of(const PlanInput& base, const RlSearchSpace& space, int total) {
  const int gpn = base.cluster.gpus_per_node;
  std::vector<Pool> out;
  auto add = [&](RlPlacement p, int rollout) {
    Pool pool{p, rollout, total - rollout, 0, 0};
    if (pool.train_gpus < 1) return;
    if (pool.train_gpus >= gpn && pool.train_gpus % gpn == 0) {
      pool.nodes = pool.train_gpus / gpn;
      pool.gpus_per_node = gpn;
    } else if (pool.train_gpus < gpn) {
      pool.nodes = 1;
      pool.gpus_per_node = pool.train_gpus;
    } else {
      return;  // a training pool of part of a node beside whole nodes: not a [cluster]
    }
    for (const Pool& o : out)
      if (o.placement == p && o.rollout_gpus == rollout) return;
    out.push_back(pool);
  };
  if (allowed(space.placement, RlPlacement::colocated)) add(RlPlacement::colocated, 0);
  if (!allowed(space.placement, RlPlacement::split)) return out;
  std::vector<int> shares = space.rollout_gpus;
  if (shares.empty()) {
    if (total >= 2 * gpn) {
      const int nodes = total / gpn;
      const int steps = std::min(nodes - 1, 7);
      for (int i = 1; i <= steps; ++i) {
        const int n = std::max(
            1, static_cast<int>(std::lround(static_cast<double>(i) * nodes / (steps + 1))));
        if (n < nodes) shares.push_back(n * gpn);
      }
    } else {
      for (int q = 1; q <= 3; ++q)
        if ((total * q) % 4 == 0) shares.push_back(total * q / 4);
    }
  }
  for (int r : shares)
    if (r > 0 && r < total) add(RlPlacement::split, r);
  return out;
}

// The engine's tensor-parallel sizes: powers of two that divide a node, or its NVLink domain
// (cluster.nvlink_domain), and split the attention heads.
std::vector<int> rollout_tps(const PlanInput& base, const RlSearchSpace& space) {
  if (!space.rollout_tp.empty()) return space.rollout_tp;
  std::vector<int> out;
  const int gpn = std::max(1, base.cluster.gpus_per_node);
  const int domain = std::max(gpn, base.cluster.domain());
  for (int tp = 1; tp <= domain; tp *= 2)
    if ((gpn % tp == 0 || domain % tp == 0) && base.model.heads % tp == 0) out.push_back(tp);
  return out;
}

std::vector<double> fractions(const PlanInput& base, const RlSearchSpace& space) {
  if (!space.memory_fraction.empty()) return space.memory_fraction;
  std::vector<double> out = {0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9};
  const double own = base.rl.memory_fraction;
  if (std::none_of(out.begin(), out.end(), [&](double f) { return std::abs(f - own) < 1e-9; }))
    out.push_back(own);
  std::sort(out.begin(), out.end());
  return out;
}

PlanInput pool_input(const PlanInput& base, const Pool& p) {
  PlanInput in = base;
  in.cluster.nodes = p.nodes;
  in.cluster.gpus_per_node = p.gpus_per_node;
  in.rl.placement = p.placement;
  in.rl.rollout_gpus = p.placement == RlPlacement::split ? p.rollout_gpus : 0;
  in.rl.off_policy = p.placement == RlPlacement::split && base.rl.off_policy;
  return in;
}

double item(const std::vector<LineItem>& items, ItemId id) {
  const LineItem* i = find_item(items, id);
  return i ? i->value : 0.0;
}

// One training layout of one pool, to be judged as RL steps.
struct Work {
  std::size_t pool = 0;
  Layout layout;
};

struct Judged {
  std::vector<RlCandidate> kept;  // fitting: the best fraction per engine layout
  std::int64_t evaluated = 0, fitting = 0;
  double closest_left = -std::numeric_limits<double>::infinity();
  std::string closest_problem;
};

}  // namespace

double rl_objective_value(const RlCandidate& c, Objective o, int total_gpus) {
  switch (o) {
    case Objective::step_time:
      return c.step_s;
    case Objective::tokens_per_s:
      return -c.tokens_per_s_per_gpu;
    case Objective::memory:
      return c.peak_bytes;
    case Objective::cost:
      return c.step_s * total_gpus;
  }
  return c.step_s;
}

std::vector<std::string> rl_settings(const RlCandidate& c) {
  std::vector<std::string> s = layout_settings(c.layout, c.nodes, c.gpus_per_node);
  s.push_back(fmt::format("rl.placement={}", to_string(c.placement)));
  if (c.placement == RlPlacement::split) {
    s.push_back(fmt::format("rl.rollout_gpus={}", c.rollout_gpus));
    s.push_back(fmt::format("rl.off_policy={}", c.off_policy ? "true" : "false"));
  }
  s.push_back(fmt::format("rl.rollout_tp={}", c.rollout_tp));
  s.push_back(fmt::format("rl.memory_fraction={:g}", c.memory_fraction));
  return s;
}

RlSearchResult search_rl(const PlanInput& base, const RlSearchOptions& o) {
  RlSearchResult r;
  const bool split = base.rl.placement == RlPlacement::split && base.rl.rollout();
  r.total_gpus = base.cluster.world_size() + (split ? base.rl.rollout_gpus : 0);
  if (!base.rl.enabled || base.model.count_only) return r;
  RlSearchSpace space = o.space;
  if (!base.rl.rollout()) space.placement = {RlPlacement::colocated};  // DPO: no engine
  const std::vector<Pool> pools = pools_of(base, space, r.total_gpus);
  r.pools = static_cast<std::int64_t>(pools.size());
  const std::vector<int> tps = base.rl.rollout() ? rollout_tps(base, space) : std::vector<int>{1};
  const std::vector<double> fracs =
      base.rl.rollout() ? fractions(base, space) : std::vector<double>{base.rl.memory_fraction};

  // Per pool: the training layouts to carry on (the fastest and the Pareto front).
  std::vector<Work> work;
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const PlanInput in = pool_input(base, pools[i]);
    SearchOptions so = o.layout;
    so.top = o.layouts_per_pool;
    so.progress = nullptr;
    SearchResult sr = search_layouts(in, so);
    r.enumerated += sr.enumerated;
    std::vector<Layout> chosen = sr.top;
    for (const Layout& l : sr.pareto)
      if (std::none_of(chosen.begin(), chosen.end(),
                       [&](const Layout& c) { return c.order == l.order; }))
        chosen.push_back(l);
    for (Layout& l : chosen) work.push_back({i, std::move(l)});
  }
  r.layouts = static_cast<std::int64_t>(work.size());

  // Each training layout: its memory and its plan at the mean lengths once, then every engine
  // layout and fraction.
  const int jobs = std::max(1, std::min<int>(o.layout.jobs, static_cast<int>(work.size())));
  std::vector<Judged> judged(static_cast<std::size_t>(jobs));
  std::atomic<std::size_t> next{0};
  auto run = [&](int j) {
    Judged& out = judged[static_cast<std::size_t>(j)];
    for (std::size_t k = next.fetch_add(1); k < work.size(); k = next.fetch_add(1)) {
      const Work& w = work[k];
      const Pool& pool = pools[w.pool];
      PlanInput in = with_layout(pool_input(base, pool), w.layout);
      const PlanResult memory = compute_plan(in, PlanScope{false, false, false});
      const PlanResult mean = compute_plan(rl_mean_input(in), PlanScope{true, false});
      const int rollout_pool =
          pool.placement == RlPlacement::split ? pool.rollout_gpus : pool.train_gpus;
      for (int tp : tps) {
        if (tp < 1 || rollout_pool % tp != 0 || base.model.heads % tp != 0) continue;
        in.rl.rollout_tp = tp;
        RlCandidate best;
        bool have = false;
        for (double f : fracs) {
          in.rl.memory_fraction = f;
          const RlResult rl = compute_rl(in, memory, mean);
          ++out.evaluated;
          double peak = 0, left = std::numeric_limits<double>::infinity();
          std::string worst;
          for (const RlPhase& ph : rl.phases) {
            if (ph.peak_bytes > peak) peak = ph.peak_bytes;
            if (ph.capacity_bytes - ph.peak_bytes < left) {
              left = ph.capacity_bytes - ph.peak_bytes;
              worst = ph.name;
            }
          }
          if (!rl.problem.empty()) {
            if (left > out.closest_left) {
              out.closest_left = left;
              out.closest_problem = rl.problem;
            }
            continue;
          }
          ++out.fitting;
          RlCandidate c;
          c.layout = w.layout;
          c.placement = pool.placement;
          c.rollout_gpus = pool.placement == RlPlacement::split ? pool.rollout_gpus : 0;
          c.train_gpus = pool.train_gpus;
          c.nodes = pool.nodes;
          c.gpus_per_node = pool.gpus_per_node;
          c.off_policy = in.rl.off_policy;
          c.rollout_tp = tp;
          c.memory_fraction = f;
          c.step_s = item(rl.time, ItemId::rl_time_step);
          c.tokens_per_s_per_gpu = item(rl.time, ItemId::rl_tokens_per_s_per_gpu);
          c.rollout_s =
              item(rl.time, ItemId::rl_time_prefill) + item(rl.time, ItemId::rl_time_decode);
          c.train_side_s =
              item(rl.time, ItemId::rl_time_log_probs) + item(rl.time, ItemId::rl_time_reference) +
              item(rl.time, ItemId::rl_time_reward) + item(rl.time, ItemId::rl_time_values) +
              item(rl.time, ItemId::rl_time_training) +
              item(rl.time, ItemId::rl_time_critic_training);
          c.sync_s = item(rl.time, ItemId::rl_time_weight_sync) +
                     item(rl.time, ItemId::rl_time_sleep_wake);
          c.training_mfu = item(rl.time, ItemId::rl_training_mfu);
          c.rollout_idle = item(rl.time, ItemId::rl_rollout_idle);
          c.training_idle = item(rl.time, ItemId::rl_training_idle);
          c.peak_bytes = peak;
          c.worst_phase = worst;
          c.concurrency = rl.concurrency;
          c.order = static_cast<std::int64_t>(k) * 1000 + tp;
          if (!(c.step_s > 0) || !std::isfinite(c.step_s)) continue;
          // The fraction the objective likes best; ties keep the smaller (the first).
          if (!have || rl_objective_value(c, o.layout.objective, r.total_gpus) <
                           rl_objective_value(best, o.layout.objective, r.total_gpus)) {
            best = c;
            have = true;
          }
        }
        if (have) out.kept.push_back(std::move(best));
      }
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < jobs; ++j) threads.emplace_back(run, j);
  for (std::thread& t : threads) t.join();

  std::vector<RlCandidate> kept;
  double closest = -std::numeric_limits<double>::infinity();
  for (Judged& j : judged) {
    r.evaluated += j.evaluated;
    r.fitting += j.fitting;
    for (RlCandidate& c : j.kept) kept.push_back(std::move(c));
    if (!j.closest_problem.empty() && j.closest_left > closest) {
      closest = j.closest_left;
      r.closest_problem = j.closest_problem;
    }
  }
  auto better = [&](const RlCandidate& a, const RlCandidate& b) {
    const double x = rl_objective_value(a, o.layout.objective, r.total_gpus);
    const double y = rl_objective_value(b, o.layout.objective, r.total_gpus);
    if (x != y) return x < y;
    return a.order < b.order;
  };
  std::sort(kept.begin(), kept.end(), better);
  r.pareto = pareto_front(kept);
  const std::size_t want = static_cast<std::size_t>(std::max(0, o.layout.top));
  for (RlCandidate& c : kept) {
    if (r.top.size() >= want) break;
    r.top.push_back(std::move(c));
  }
  return r;
}

}  // namespace trainledger
