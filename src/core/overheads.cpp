// Fixed overheads per GPU (docs/formulas.md#overheads). Each is of kind "assumed" until a
// calibration measures it.
#include <string>
#include <vector>

#include "memory.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_context =
    "PyTorch maintainers: ~300 MB of driver context and lazily loaded kernels since CUDA 11.7 "
    "(pytorch/pytorch#107667); per-generation defaults in configs/gpus";
constexpr const char* k_src_nccl =
    "NCCL maintainers: memory grows linearly with channels and with communicators; a ring needs "
    "2 connections, all-to-all one per peer (NVIDIA/nccl#986, #1685: 10 MiB per connection per "
    "channel on H100)";
constexpr const char* k_src_cublas = "cuBLAS workspace allocated by PyTorch on first GEMM";
constexpr const char* k_src_frag =
    "PyTorch caching allocator: reserved exceeds allocated by a share of the dynamic memory "
    "(block rounding and splitting); assumed fraction cluster.fragmentation";

struct Group {
  std::string name;
  int size = 1;
  int connections = 2;
};

std::vector<Group> communicators(const PlanInput& in) {
  const ParallelSpec& p = in.parallel;
  std::vector<Group> g;
  const int world = in.cluster.world_size();
  if (world > 1) g.push_back({"world", world, 2});
  if (p.tp > 1) g.push_back({"tp", p.tp, 2});
  const int dp = p.dp * p.cp;
  if (dp > 1) {
    if (p.zero > 0 && p.zero_shard_size > 0 && p.zero_shard_size < dp) {
      if (p.zero_shard_size > 1) g.push_back({"dp_shard", p.zero_shard_size, 2});
      g.push_back({"dp_replicate", dp / p.zero_shard_size, 2});
    } else {
      g.push_back({"dp", dp, 2});
    }
  }
  if (p.cp > 1) g.push_back({"cp", p.cp, 2});
  if (p.pp > 1) g.push_back({"pp", p.pp, 2});
  if (p.ep > 1) g.push_back({"ep", p.ep, p.ep - 1});
  if (in.model.tied_embeddings && p.pp > 1) g.push_back({"embedding", 2, 2});
  return g;
}

}  // namespace

void fixed_overheads(const PlanInput& in, MemoryModel& model) {
  const ClusterSpec& c = in.cluster;
  model.fixed.push_back(make_item("overhead.cuda_context", "CUDA context and kernels", Unit::bytes,
                                  Expr::term("cuda_context", c.cuda_context, "B"), k_src_context,
                                  Kind::assumed));
  const std::vector<Group> groups = communicators(in);
  if (!groups.empty()) {
    Expr sum = Expr::term("none", 0, "B");
    bool first = true;
    for (const Group& g : groups) {
      const Expr one = (Expr::term("channels", c.nccl_channels, "channels") *
                        Expr::term("connections_" + g.name, g.connections, "connections") *
                        Expr::term("buffer", c.nccl_buffer, "B"))
                           .note(g.name + " communicator, " + std::to_string(g.size) + " ranks");
      sum = first ? one : sum + one;
      first = false;
    }
    model.fixed.push_back(make_item("overhead.nccl",
                                    std::to_string(groups.size()) + " NCCL communicators",
                                    Unit::bytes, sum, k_src_nccl, Kind::assumed));
  }
  model.kernels.push_back(make_item("overhead.cublas_workspace", "cuBLAS workspace", Unit::bytes,
                                    Expr::term("cublas_workspace", c.cublas_workspace, "B"),
                                    k_src_cublas, Kind::assumed));
}

LineItem fragmentation_item(const PlanInput& in, double dynamic_bytes) {
  return make_item(
      "overhead.fragmentation", "allocator fragmentation reserve", Unit::bytes,
      Expr::term("fragmentation", in.cluster.fragmentation, "of") *
          Expr::term("dynamic_bytes", dynamic_bytes, "B (activations, logits, temporaries)"),
      k_src_frag, Kind::assumed);
}

}  // namespace trainledger
