// Fixed overheads per GPU (docs/formulas.md#overheads). Each is of kind "assumed" until a
// calibration measures it.
#include <algorithm>
#include <array>
#include <string>

#include "collectives.hpp"
#include "memory.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_context =
    "the driver context (~300 MB with lazy loading since CUDA 11.7, pytorch/pytorch#107667) and "
    "the kernels a training process loads (cuBLAS/cuBLASLt, cuDNN, flash attention, NCCL, "
    "Triton): about 1-1.5 GiB on A100/H100 under PyTorch (nvidia-smi minus the caching "
    "allocator's reserved memory); per-GPU defaults in configs/gpus";
constexpr const char* k_src_nccl =
    "NCCL maintainers: memory grows linearly with channels and with communicators; a ring needs "
    "2 connections, all-to-all one per peer (NVIDIA/nccl#986, #1685: 10 MiB per connection per "
    "channel on H100); all-to-all runs point-to-point with p2pnChannelsPerPeer channels per "
    "peer, 2 for a peer on the network (NCCL src/graph/paths.cc ncclTopoGetNchannels: "
    "NCCL_NCHANNELS_PER_NET_PEER = 2), the communicator's channels for an NVLink peer";
constexpr const char* k_src_cublas = "cuBLAS workspace allocated by PyTorch on first GEMM";
constexpr const char* k_src_frag =
    "PyTorch caching allocator (c10/cuda/CUDACachingAllocator.cpp): reserved exceeds allocated "
    "by a share of the dynamic memory: requests above 10 MiB get segments of their own size "
    "(rounded to 2 MiB), and a freed block serves only requests that fit in it, so a new size "
    "allocates a new segment; with expandable_segments:True one segment per stream grows in "
    "place. Fraction cluster.fragmentation: 0.3 without expandable segments (fit on the dev "
    "sources that ran without them: llama-recipes' allocated/reserved pairs, BLOOM's layouts, "
    "BERT-large, PEFT's 70B guides), 0.1 with them (torchtitan's runs)";

struct Communicator {
  std::string_view name;
  int size = 1;
  int connections = 2;      // with the communicator's channels each
  int net_connections = 0;  // all-to-all peers across the network: 2 channels each
};

struct Communicators {
  std::array<Communicator, 8> list{};
  int count = 0;
  void add(std::string_view name, int size, int connections, int net_connections = 0) {
    list[count++] = Communicator{name, size, connections, net_connections};
  }
};

constexpr int k_channels_per_net_peer = 2;  // NCCL_NCHANNELS_PER_NET_PEER

Communicators communicators(const PlanInput& in) {
  const ParallelSpec& p = in.parallel;
  Communicators g;
  const int world = in.cluster.world_size();
  if (world > 1) g.add("world", world, 2);
  if (p.tp > 1) g.add("tp", p.tp, 2);
  const int dp = p.dp * p.cp;
  if (dp > 1) {
    if (p.zero > 0 && p.zero_shard_size > 0 && p.zero_shard_size < dp) {
      if (p.zero_shard_size > 1) g.add("dp_shard", p.zero_shard_size, 2);
      g.add("dp_replicate", dp / p.zero_shard_size, 2);
    } else {
      g.add("dp", dp, 2);
    }
  }
  if (p.cp > 1) g.add("cp", p.cp, 2);
  if (p.pp > 1) g.add("pp", p.pp, 2);
  if (p.ep > 1) {
    // One connection per peer: those on the rank's node over NVLink, the rest over the network.
    const Group ep = group_of(in, "ep", p.ep);
    const int local = std::max(1, std::min(ep.ranks_per_node, p.ep));
    g.add("ep", p.ep, local - 1, p.ep - local);
  }
  // Experts split over other ranks than the dense layers' tp group have their own group.
  if (is_moe(in.model) && expert_tp(p) > 1 && expert_tp(p) != p.tp) g.add("etp", expert_tp(p), 2);
  if (in.model.tied_embeddings && p.pp > 1) g.add("embedding", 2, 2);
  return g;
}

}  // namespace

template <typename V>
void fixed_overheads(const PlanInput& in, MemoryModel<V>& model) {
  const ClusterSpec& c = in.cluster;
  model.fixed.push_back(
      make(ItemId::overhead_cuda_context, "CUDA context and kernels", Unit::bytes,
           input<V>(in, "cluster.cuda_context", "cuda_context", c.cuda_context, "B"), k_src_context,
           Kind::assumed));
  const Communicators groups = communicators(in);
  if (groups.count > 0) {
    V sum = V::term("none", 0, "B");
    for (int i = 0; i < groups.count; ++i) {
      const Communicator& g = groups.list[i];
      const V buffer = input<V>(in, "cluster.nccl_buffer", "buffer", c.nccl_buffer, "B");
      V one = input<V>(in, "cluster.nccl_channels", "channels", c.nccl_channels, "channels") *
              V::term(Text("connections_", g.name), g.connections,
                      g.net_connections > 0 ? "peers on the node" : "connections") *
              buffer;
      if (g.net_connections > 0)
        one = one + V::term("net_channels", k_channels_per_net_peer, "channels per network peer") *
                        V::term(Text("net_peers_", g.name), g.net_connections,
                                "peers across the network") *
                        buffer;
      one = one.note_with([&] {
        return std::string(g.name) + " communicator, " + std::to_string(g.size) + " ranks";
      });
      sum = i == 0 ? one : sum + one;
    }
    model.fixed.push_back(make(
        ItemId::overhead_nccl, [&] { return std::to_string(groups.count) + " NCCL communicators"; },
        Unit::bytes, sum, k_src_nccl, Kind::assumed));
  }
  model.kernels.push_back(
      make(ItemId::overhead_cublas_workspace, "cuBLAS workspace", Unit::bytes,
           input<V>(in, "cluster.cublas_workspace", "cublas_workspace", c.cublas_workspace, "B"),
           k_src_cublas, Kind::assumed));
}

template <typename V>
ItemOf<V> fragmentation_item(const PlanInput& in, double dynamic_bytes, double rest_bytes) {
  V reserve =
      input<V>(in, "cluster.fragmentation", "fragmentation", in.cluster.fragmentation, "of") *
      V::term("dynamic_bytes", dynamic_bytes, "B (activations, logits, temporaries)");
  const double capacity = static_cast<double>(in.cluster.gpu.memory_bytes);
  if (capacity > 0 && reserve.value() + rest_bytes > capacity) {
    // DeviceCachingAllocator::malloc releases the cached blocks and retries cudaMalloc before
    // it reports OOM (c10/cuda/CUDACachingAllocator.cpp): cache never pushes a run over the
    // GPU's memory, it is what the GPU has left.
    reserve = V::min(reserve, V::term("room", std::max(0.0, capacity - rest_bytes),
                                      "B the GPU's memory leaves beside the rest of the phase"));
  }
  return make(ItemId::overhead_fragmentation, "allocator fragmentation reserve", Unit::bytes,
              reserve, k_src_frag, Kind::assumed);
}

template void fixed_overheads<Expr>(const PlanInput&, MemoryModel<Expr>&);
template void fixed_overheads<Num>(const PlanInput&, MemoryModel<Num>&);
template ItemOf<Expr> fragmentation_item<Expr>(const PlanInput&, double, double);
template ItemOf<Num> fragmentation_item<Num>(const PlanInput&, double, double);

}  // namespace trainledger
