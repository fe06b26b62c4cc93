// Ring collectives (Patarasuk & Yuan 2009; NCCL): per-GPU volume in the nccl-tests busbw
// convention, so that a measured busbw plugs in directly (nccl-tests doc/PERFORMANCE.md:
// busbw = algbw × 2(n−1)/n for all-reduce, × (n−1)/n for all-gather and reduce-scatter).
#include "collectives.hpp"

#include "formula.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trainledger {

std::string_view to_string(Dim d) {
  switch (d) {
    case Dim::dp:
      return "dp";
    case Dim::tp:
      return "tp";
    case Dim::pp:
      return "pp";
    case Dim::cp:
      return "cp";
    case Dim::ep:
      return "ep";
  }
  return "?";
}

std::string_view to_string(CollKind k) {
  switch (k) {
    case CollKind::all_reduce:
      return "all-reduce";
    case CollKind::tree_all_reduce:
      return "all-reduce (tree)";
    case CollKind::all_gather:
      return "all-gather";
    case CollKind::reduce_scatter:
      return "reduce-scatter";
    case CollKind::all_to_all:
      return "all-to-all";
    case CollKind::send_recv:
      return "send/recv";
  }
  return "?";
}

std::string_view to_string(Algo a) {
  switch (a) {
    case Algo::ring:
      return "ring";
    case Algo::tree:
      return "tree";
    case Algo::pat:
      return "pat";
    case Algo::p2p:
      return "p2p";
  }
  return "?";
}

std::string call_name(CollKind k, Algo a) {
  std::string name(to_string(k));
  if (a == Algo::pat) name += " (PAT)";
  return name;
}

namespace {

// The rank distance between neighbours of a dimension: the product of the dimensions placed
// inside it (parallel.placement, innermost first).
long long stride_inside(const ParallelSpec& p, std::string_view target) {
  long long stride = 1;
  for (const std::string& d : p.placement) {
    if (d == target) break;
    if (d == "tp") stride *= p.tp;
    if (d == "cp") stride *= p.cp;
    if (d == "dp") stride *= p.dp;
    if (d == "pp") stride *= p.pp;
  }
  return stride;
}

}  // namespace

long long expert_stride(const ParallelSpec& p, std::string_view target) {
  // Megatron-Core's expert rank generator (core/parallel_state.py initialize_model_parallel:
  // RankGenerator(tp=expert_tensor_parallel_size, ep, dp=expert_data_parallel_size, pp, cp=1)
  // over the order 'tp-cp-ep-dp-pp'): the dense order with tp -> etp, cp folded away and ep just
  // inside dp. torchtitan's mesh folds ep over cp (and tp when etp = 1) the same way
  // (distributed/parallel_dims.py _build_mesh_with_ep).
  long long stride = 1;
  for (const std::string& d : p.placement) {
    if (d == "dp") {
      if (target == "ep") return stride;
      stride *= std::max(1, p.ep);
      if (target == "dp_expert") return stride;
      stride *= expert_dp(p);
    } else if (d == "tp") {
      if (target == "etp") return stride;
      stride *= expert_tp(p);
    } else if (d == "pp") {
      stride *= p.pp;
    }
  }
  return stride;
}

Group group_of(const PlanInput& in, std::string_view dim, int size) {
  Group g;
  g.name = dim;
  const bool expert = dim == "ep" || dim == "etp" || dim == "dp_expert";
  const long long stride =
      expert ? expert_stride(in.parallel, dim) : stride_inside(in.parallel, dim);
  return regroup(in, g, size, static_cast<int>(stride));
}

int stage_of_rank(const PlanInput& in, long long rank) {
  const long long stride = std::max(1LL, stride_inside(in.parallel, "pp"));
  return static_cast<int>((std::max(0LL, rank) / stride) % std::max(1, in.parallel.pp));
}

Group regroup(const PlanInput& in, const Group& base, int size, int stride) {
  Group g = base;
  g.size = size;
  g.stride = stride;
  // The NVLink domain is the tier's edge: a node, or NVL72's 18 trays (cluster.nvlink_domain).
  const int per_node = in.cluster.domain();
  g.ranks_per_node = stride >= per_node ? 1 : std::max(1, std::min(size, per_node / stride));
  // A group narrower than the domain that does not divide it (16 or 32 GPUs in a 72-GPU rack,
  // once the job spans racks) has a member group across the edge: the collective waits for
  // that one, counted with the members the two sides share at worst.
  const long long span = static_cast<long long>(size) * stride;
  if (size > 1 && stride < per_node && span < per_node && per_node % span != 0 &&
      in.cluster.world_size() > per_node)
    g.ranks_per_node = std::max(1, std::gcd(per_node, static_cast<int>(span)) / stride);
  // The leaf: the nodes whose NICs share leaf switches (cluster.leaf_nodes; none: all of them).
  const long long leaf = static_cast<long long>(in.cluster.leaf_nodes) * in.cluster.gpus_per_node;
  if (leaf <= 0 || in.cluster.world_size() <= leaf)
    g.ranks_per_leaf = size;
  else
    g.ranks_per_leaf =
        stride >= leaf ? 1 : static_cast<int>(std::min<long long>(size, leaf / stride));
  g.ranks_per_leaf = std::max(g.ranks_per_leaf, g.ranks_per_node);
  g.link = Link{};
  g.link.inter_node = g.nodes() > 1;
  g.link.bandwidth =
      g.link.inter_node ? in.cluster.inter_node_bandwidth : in.cluster.intra_node_bandwidth;
  g.link.gather_bandwidth = g.link.bandwidth;
  if (!g.link.inter_node && in.cluster.intra_node_gather_bandwidth > 0) {
    g.link.gather_bandwidth = in.cluster.intra_node_gather_bandwidth;
    g.link.gather_given = true;
  }
  return g;
}

double spine_share(const Group& g) {
  const double n = g.size, r = g.ranks_per_node, m = g.ranks_per_leaf;
  if (n <= r || m >= n) return 0;
  return (n - m) / (n - r);
}

bool measured_network_latency(const PlanInput& in) {
  return in.provenance.of("cluster.inter_node_latency") == Source::calibration ||
         in.provenance.of("cluster.inter_node_simple_latency") == Source::calibration;
}

double tree_correction(double message_bytes) {
  // tuning.cc treeCorrectionFactor, the Simple protocol's row: powers of two from 64 B to 256 MB,
  // indexed by log2i(bytes / 64); 1 outside it.
  static constexpr double k_simple[24] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                                          .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
  const double units = std::floor(message_bytes / 64);
  if (!(units >= 1)) return 1;
  const int index = static_cast<int>(std::floor(std::log2(units)));
  return index >= 0 && index < 23 ? k_simple[index] : 1;
}

double bus_factor(CollKind k, int n) { return call_volume(k, n, Num::constant(1)).value(); }

double call_steps(CollKind k, int n) {
  switch (k) {
    case CollKind::all_reduce:
      return 2.0 * (n - 1);
    case CollKind::tree_all_reduce:
      return 2.0 * std::ceil(std::log2(std::max(2, n)));
    case CollKind::all_gather:
    case CollKind::reduce_scatter:
    case CollKind::all_to_all:
      return n - 1.0;
    case CollKind::send_recv:
      return 1;
  }
  return 1;
}

LatencySteps latency_steps(CollKind k, const Group& g) {
  LatencySteps st;
  const int nodes = g.nodes();
  const double total = call_steps(k, g.size);
  if (nodes <= 1) {
    st.intra = total;
    return st;
  }
  switch (k) {
    case CollKind::tree_all_reduce:
      st.intra = 2.0 * (g.ranks_per_node - 1);
      // NCCL's log2i: the floor (tuning.cc: 2 × log2i(nNodes) × interLat).
      st.inter = 2.0 * std::floor(std::log2(nodes));
      return st;
    case CollKind::all_reduce:
      st.inter = std::min(total, 2.0 * (nodes - 1));
      break;
    case CollKind::send_recv:
      st.inter = total;
      break;
    default:
      st.inter = std::min(total, nodes - 1.0);
      break;
  }
  st.intra = total - st.inter;
  return st;
}

BusReading nccl_reading(CollKind k, int n, double message_bytes, double seconds) {
  BusReading r;
  if (seconds <= 0 || n < 1) return r;
  r.per_rank_bytes = call_volume(k, n, Num::constant(message_bytes)).value();
  r.algbw = message_bytes / seconds;
  r.busbw = r.per_rank_bytes / seconds;
  return r;
}

}  // namespace trainledger
