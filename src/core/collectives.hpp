// Collective communication: bytes per GPU and time (docs/formulas.md#collectives).
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>

#include "formula.hpp"
#include "trainledger/numbers.hpp"
#include "trainledger/plan_input.hpp"

namespace trainledger {

// The link a process group uses, by where its ranks are.
struct Link {
  bool inter_node = false;
  double bandwidth = 0;         // achievable busbw per GPU, bytes/s
  double gather_bandwidth = 0;  // the same for all-gather, reduce-scatter, all-to-all, send/recv
  bool gather_given = false;    // gather_bandwidth has its own key
  std::string_view bandwidth_key() const {
    return inter_node ? "cluster.inter_node_bandwidth" : "cluster.intra_node_bandwidth";
  }
  double bandwidth_of(CollKind k) const {
    return k == CollKind::all_reduce || k == CollKind::tree_all_reduce ? bandwidth
                                                                       : gather_bandwidth;
  }
  std::string_view bandwidth_key(CollKind k) const {
    const bool reduce = k == CollKind::all_reduce || k == CollKind::tree_all_reduce;
    return !reduce && gather_given ? "cluster.intra_node_gather_bandwidth" : bandwidth_key();
  }
  std::string_view name() const { return inter_node ? "inter-node" : "intra-node"; }
};

// A process group of the layout: its size and the link between its ranks.
struct Group {
  std::string_view name;  // "tp", "dp", ...
  int size = 1;
  int stride = 1;          // rank distance between members (product of the inner dimensions)
  int ranks_per_node = 1;  // members that share a node (its NVLink domain: cluster.nvlink_domain)
  int ranks_per_leaf = 1;  // members under one leaf of the fabric (cluster.leaf_nodes)
  Link link;
  int nodes() const { return (size + ranks_per_node - 1) / ranks_per_node; }
};

// The group of a parallel dimension under the plan's placement order; "ep", "etp" and
// "dp_expert" (the expert-data-parallel ranks) follow the expert rank order.
Group group_of(const PlanInput& in, std::string_view dim, int size);
// The same ranks' link for a group of `size` members `stride` ranks apart (a subgroup, such as
// HSDP's replicas or the expert-data-parallel ranks).
Group regroup(const PlanInput& in, const Group& g, int size, int stride);

// Bytes one GPU sends for one call on a message of S bytes (the full tensor):
// all-reduce 2(n−1)/n·S, all-gather and reduce-scatter (n−1)/n·S, all-to-all (n−1)/n·S,
// send/recv S.
template <typename V>
V call_volume(CollKind k, int n, const V& message_bytes) {
  const V nn = V::term("group_size", n, "ranks");
  const V share = (nn - V::constant(1)) / nn;
  switch (k) {
    case CollKind::all_reduce:
    case CollKind::tree_all_reduce:
      return V::constant(2) * share * message_bytes;
    case CollKind::all_gather:
    case CollKind::reduce_scatter:
    case CollKind::all_to_all:
      return share * message_bytes;
    case CollKind::send_recv:
      return message_bytes;
  }
  return message_bytes;
}

// Steps of latency per call: ring all-reduce 2(n−1), tree 2·⌈log2 n⌉, all-gather,
// reduce-scatter and all-to-all n−1, send/recv 1.
double call_steps(CollKind k, int n);
// Latency steps of one call, split by the link each step crosses (NCCL's tuning model,
// src/graph/tuning.cc: a ring over N nodes crosses the network N − 1 times per pass and NVLink
// for the other steps; a tree climbs ranks-per-node − 1 NVLink steps and ⌈log2 N⌉ network
// steps, twice).
struct LatencySteps {
  double intra = 0;
  double inter = 0;
};
LatencySteps latency_steps(CollKind k, const Group& g);
// The bus bandwidth a group's collective achieves. Inside a node: the link's busbw. Across
// nodes NCCL spreads its channels over the NICs of every member in a node, so a group with r
// members per node moves r × the per-GPU NIC rate, up to what the node's own links carry
// (nccl-tests on 8-GPU A100 nodes with 4 × 200 Gb/s: ~86-96 GB/s busbw against 100 GB/s of NICs,
// NVIDIA/nccl-tests#119, NVIDIA/nccl#1048).
template <typename V>
V node_busbw(const PlanInput& in, CollKind k, const Group& g) {
  const V own = input<V>(in, g.link.bandwidth_key(k), "busbw", g.link.bandwidth_of(k), "B/s");
  if (!g.link.inter_node || g.ranks_per_node <= 1) return own;
  if (k == CollKind::all_to_all) {
    // NCCL's all-to-all sends every peer its share directly (src/device/all_to_all: one
    // send/recv pair per peer): the (n − r)/n of each GPU's bytes bound for other nodes leave
    // through its own NIC, all GPUs of the node at once, so the node's NICs are not pooled as
    // a ring's channels pool them. Over n ranks, r per node: busbw = NIC rate × (n − 1)/(n − r)
    // (DeepSeek-V3's EP 64 over 8 nodes: 1.125 × the NIC rate, not 8 ×).
    const double n = g.size, r = g.ranks_per_node;
    return V::term("peer_share", (n - 1) / (n - r),
                   "(n − 1)/(n − r): the bytes leaving the node are (n − r)/n of the call's") *
           own;
  }
  const bool reduce = k == CollKind::all_reduce || k == CollKind::tree_all_reduce;
  const bool gather_given = !reduce && in.cluster.intra_node_gather_bandwidth > 0;
  const double node =
      gather_given ? in.cluster.intra_node_gather_bandwidth : in.cluster.intra_node_bandwidth;
  const double nics = g.ranks_per_node * g.link.bandwidth_of(k);
  if (node > 0 && node < nics)
    return input<V>(
        in, gather_given ? "cluster.intra_node_gather_bandwidth" : "cluster.intra_node_bandwidth",
        "busbw", node, "B/s");
  return V::term("ranks_per_node", g.ranks_per_node, "members per node (their NICs)") * own;
}

// The share of a group's off-node traffic that also leaves its leaf for the spine: NCCL's rings
// and trees and its all-to-all know the nodes, not the switches (src/graph/search.cc orders
// the nodes by rank), so a member's peer in another node lies under another leaf as often as
// the group's members do: (n − members under the leaf)/(n − members in the node).
double spine_share(const Group& g);

// The group's busbw across the fabric: node_busbw, slowed where the leaves' uplinks carry
// less than the traffic that crosses them. Every group of the same kind runs its collective at
// once, so a leaf's GPUs send spine_share of their NIC traffic up through uplinks of
// 1/oversubscription of their NICs' rate: busbw / max(1, oversubscription × spine_share).
template <typename V>
V group_busbw(const PlanInput& in, CollKind k, const Group& g) {
  const V node = node_busbw<V>(in, k, g);
  if (!g.link.inter_node || in.cluster.oversubscription <= 1) return node;
  const double share = spine_share(g);
  if (in.cluster.oversubscription * share <= 1) return node;
  return node / (input<V>(in, "cluster.oversubscription", "oversubscription",
                          in.cluster.oversubscription, "leaf down:up") *
                 V::term("spine_share", share,
                         "of the off-node traffic that leaves the leaf: (n − under a leaf)/(n − "
                         "in a node)"));
}

// The latency of one call: α_intra·intra steps + α_inter·inter steps, with the given keys.
template <typename V>
V call_latency(const PlanInput& in, const LatencySteps& st, const char* intra_key, double intra,
               const char* inter_key, double inter) {
  V latency = V::constant(0);
  bool any = false;
  if (st.intra > 0) {
    latency = input<V>(in, intra_key, "latency", intra, "s") *
              V::term("steps", st.intra, "intra-node steps");
    any = true;
  }
  if (st.inter > 0) {
    const V across = input<V>(in, inter_key, "latency", inter, "s") *
                     V::term("steps", st.inter, "inter-node steps");
    latency = any ? latency + across : across;
  }
  return latency;
}

// NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel): a tree all-reduce reaches 0.92
// of the busbw its graph finds, PAT 0.75; PAT's latency has a part linear in the ranks, 2.8 µs
// each ("still a linear part"), beside its ⌊log₂ N⌋ network steps at 1/3.5 of a step's latency.
inline constexpr double k_tree_efficiency = 0.92;
// NCCL's correction of a tree all-reduce's bandwidth by message size, "trees are not perfectly
// sticking to the model for medium sizes" (tuning.cc, treeCorrectionFactor, the Simple protocol's
// row: 0.5-0.9 from 64 B to 256 MB, 0.7 at 25 MiB; ncclTopoGetAlgoTime).
double tree_correction(double message_bytes);
inline constexpr double k_pat_efficiency = 0.75;
inline constexpr double k_pat_rank_latency = 2.8e-6;

// Time of `calls` calls: calls × (α_intra·intra steps + α_inter·inter steps + volume / B), B
// the group's busbw. Where the plan gives NCCL's Simple protocol a latency of its own
// (cluster.*_simple_latency, fitted by calibrate import), each call takes the faster of two
// protocols, as NCCL's tuner picks per size (src/graph/tuning.cc): LL at the latency keys and
// its share of the busbw (cluster.*_ll_share; NCCL's LL: half), Simple at its own latency and
// the full busbw; mid-size messages pay the ramp between them.
template <typename V>
V calls_time(const PlanInput& in, CollKind k, const Group& g, const V& message_bytes,
             const V& calls) {
  const LatencySteps st = latency_steps(k, g);
  const ClusterSpec& c = in.cluster;
  const V latency = call_latency<V>(in, st, "cluster.intra_node_latency", c.intra_node_latency,
                                    "cluster.inter_node_latency", c.inter_node_latency);
  // NCCL's tree reaches 0.92 of the busbw its graph finds (tuning.cc: Tree busBw × .92), less
  // at medium sizes (treeCorrectionFactor).
  const V busbw =
      k == CollKind::tree_all_reduce
          ? group_busbw<V>(in, k, g) *
                V::term("tree_efficiency",
                        k_tree_efficiency * tree_correction(message_bytes.value()),
                        "of the busbw: NCCL's tree all-reduce at this size (src/graph/tuning.cc: "
                        ".92 × treeCorrectionFactor)")
          : group_busbw<V>(in, k, g);
  const V transfer = call_volume(k, g.size, message_bytes) / busbw;
  const bool simple_intra = st.intra > 0 && c.intra_node_simple_latency > c.intra_node_latency;
  const bool simple_inter = st.inter > 0 && c.inter_node_simple_latency > c.inter_node_latency;
  if (!simple_intra && !simple_inter) return calls * (latency + transfer);
  const V simple = call_latency<V>(
      in, st, simple_intra ? "cluster.intra_node_simple_latency" : "cluster.intra_node_latency",
      simple_intra ? c.intra_node_simple_latency : c.intra_node_latency,
      simple_inter ? "cluster.inter_node_simple_latency" : "cluster.inter_node_latency",
      simple_inter ? c.inter_node_simple_latency : c.inter_node_latency);
  const bool across = g.link.inter_node;
  const V ll =
      latency +
      transfer / input<V>(in,
                          across ? "cluster.inter_node_ll_share" : "cluster.intra_node_ll_share",
                          "ll_share", across ? c.inter_node_ll_share : c.intra_node_ll_share,
                          "of the busbw");
  return calls * V::min(ll, simple + transfer);
}

// PAT (NCCL 2.23 and later; src/device/prims_simple.h, the Bruck-style parallel aggregated trees):
// all-gather (and summing reduce-scatter, not used here: nccl_calls_time) over one rank per node
// (tuning.cc, ncclPatEnable: nNodes == nRanks), Simple protocol only: latency ⌊log₂ N⌋/3.5 network
// steps + 2.8 µs × n, at 0.75 of the busbw.
template <typename V>
V pat_calls_time(const PlanInput& in, CollKind k, const Group& g, const V& message_bytes,
                 const V& calls) {
  const ClusterSpec& c = in.cluster;
  const bool simple = c.inter_node_simple_latency > c.inter_node_latency;
  const V alpha =
      input<V>(in, simple ? "cluster.inter_node_simple_latency" : "cluster.inter_node_latency",
               "latency", simple ? c.inter_node_simple_latency : c.inter_node_latency, "s");
  const double steps = std::floor(std::log2(std::max(2, g.nodes()))) / 3.5;
  const V latency =
      alpha * V::term("steps", steps, "⌊log₂ N⌋/3.5: PAT's network steps") +
      V::term("pat_rank_latency", k_pat_rank_latency, "s per rank: PAT's linear part") *
          V::term("group_size", g.size, "ranks");
  const V transfer = call_volume(k, g.size, message_bytes) /
                     (group_busbw<V>(in, k, g) * V::term("pat_efficiency", k_pat_efficiency,
                                                         "of the busbw: NCCL's PAT (tuning.cc)"));
  return calls * (latency + transfer);
}

// A calibration profile's network latency (calibrate import) is fitted per ring step to what
// NCCL ran at the measured sizes, its own pick of algorithm included: the planner keeps rings
// on it rather than pick a tree or PAT from latencies that already hold one (a 2 × 8 all-reduce
// sweep whose small messages NCCL ran as a tree would otherwise come out at half its time).
bool measured_network_latency(const PlanInput& in);

// A call as NCCL runs it: the collective, the algorithm and the time of `calls` calls.
template <typename V>
struct TimedCall {
  CollKind kind;
  Algo algo;
  V time;
};

// The algorithm NCCL's tuner picks for a call (parallel.allreduce = "auto", NCCL's default): of
// the algorithms its tuning model allows for the collective and the group (tuning.cc), the one
// it times fastest; here the model's own α and busbw stand in for NCCL's constants. An
// all-reduce across nodes runs as a ring or a tree (2(r − 1) NVLink steps and 2⌊log₂ N⌋ network
// steps instead of the ring's 2(n − 1), at 0.92 of the busbw and NCCL's correction by size), an
// all-gather over one rank per node (its stride a whole NVLink domain or more) as a ring or PAT.
// A reduce-scatter stays a ring: NCCL runs PAT only for a summing reduction (enqueue.cc skips it
// for PreMulSum and SumPostDiv, which averaging reductions become, and the stacks differ in which
// they use), so the planner errs long there. Send/recv and all-to-all are point-to-point, outside
// the tuner; every other call, every call inside an NVLink domain, every call on a link without a
// bandwidth, and every call where the network latency is measured (above) is a ring. Not
// modelled: NVLS-tree across nodes and the ring's Simple-protocol "plateau" (latency × 1.4).
// "ring" keeps rings (NCCL_ALGO=ring); "tree" has made the data-parallel all-reduce a
// tree_all_reduce already.
template <typename V>
TimedCall<V> nccl_calls_time(const PlanInput& in, CollKind k, const Group& g,
                             const V& message_bytes, const V& calls) {
  const Algo own = k == CollKind::tree_all_reduce                          ? Algo::tree
                   : k == CollKind::send_recv || k == CollKind::all_to_all ? Algo::p2p
                                                                           : Algo::ring;
  const V first = calls_time(in, k, g, message_bytes, calls);
  if (in.parallel.nccl_algo != NcclAlgo::tuner || !g.link.inter_node || g.nodes() < 2 ||
      g.link.bandwidth_of(k) <= 0 || measured_network_latency(in))
    return {k, own, first};
  if (k == CollKind::all_reduce) {
    const V tree = calls_time(in, CollKind::tree_all_reduce, g, message_bytes, calls);
    if (tree.value() < first.value()) return {CollKind::tree_all_reduce, Algo::tree, tree};
  } else if (k == CollKind::all_gather && g.ranks_per_node == 1 &&
             g.stride >= in.cluster.domain()) {
    const V pat = pat_calls_time(in, k, g, message_bytes, calls);
    if (pat.value() < first.value()) return {k, Algo::pat, pat};
  }
  return {k, own, first};
}

// An nccl-tests measurement read the nccl-tests way: algbw = S / t, busbw = algbw × the
// collective's factor (2(n−1)/n for all-reduce, (n−1)/n for all-gather and reduce-scatter),
// and the bytes each rank sends (nccl-tests doc/PERFORMANCE.md).
struct BusReading {
  double algbw = 0;  // bytes/s
  double busbw = 0;  // bytes/s
  double per_rank_bytes = 0;
};
BusReading nccl_reading(CollKind k, int n, double message_bytes, double seconds);

}  // namespace trainledger
