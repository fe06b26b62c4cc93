// Host memory per node (docs/formulas.md#host): offloaded state, checkpoint staging,
// data-loader workers and the training processes themselves.
#include "memory.hpp"
#include "state.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_offload =
    "Ren et al. 2021, ZeRO-Offload §4: fp32 master weights, optimizer state and gradients on "
    "the host (pinned)";
constexpr const char* k_src_staging =
    "torch.distributed.checkpoint / torch.save: tensors are copied to host memory before they "
    "are written; a gathered save collects the whole state on one rank";
constexpr const char* k_src_workers = "PyTorch DataLoader: one process per worker";
constexpr const char* k_src_runtime =
    "assumed resident size of one training process (Python, PyTorch, CUDA libraries)";

}  // namespace

HostMemory host_memory(const PlanInput& in, const Derived& d, const StageMemory& worst,
                       const std::vector<LineItem>& offloaded) {
  HostMemory h;
  const int gpus = in.cluster.gpus_per_node;
  const Expr per_node = Expr::term("gpus_per_node", gpus, "GPUs per node");
  if (!offloaded.empty()) {
    const double bytes = sum_values(offloaded);
    h.items.push_back(make_item("host.offload", "offloaded optimizer state (pinned)", Unit::bytes,
                                Expr::term("offloaded_per_gpu", bytes, "B per GPU") * per_node,
                                k_src_offload));
  }
  double shard = 0;
  for (const LineItem& i : worst.items)
    if (i.id == "params" || i.id == "master" || i.id.rfind("optimizer.", 0) == 0) shard += i.value;
  for (const LineItem& i : offloaded)
    if (i.id != "grads") shard += i.value;
  Expr staging = Expr::term("checkpoint_shard", shard, "B per GPU") * per_node;
  if (in.checkpoint.format == CheckpointFormat::gathered)
    staging = staging + Expr::term("full_checkpoint", checkpoint_size(in, d).value(),
                                   "B gathered on the first node");
  h.items.push_back(make_item("host.checkpoint_staging", "checkpoint staging", Unit::bytes, staging,
                              k_src_staging));
  if (in.training.data_workers > 0) {
    h.items.push_back(
        make_item("host.data_workers", "data-loader workers", Unit::bytes,
                  Expr::term("workers", in.training.data_workers, "workers per GPU") *
                      Expr::term("worker_memory", in.training.data_worker_memory, "B") * per_node,
                  k_src_workers, Kind::assumed));
  }
  h.items.push_back(make_item(
      "host.runtime", "training processes", Unit::bytes,
      Expr::term("process_memory", in.cluster.host_process_memory, "B per rank") * per_node,
      k_src_runtime, Kind::assumed));
  h.peak_bytes = sum_values(h.items);
  h.capacity_bytes = in.cluster.host_memory;
  h.fits = h.capacity_bytes <= 0 || h.peak_bytes <= h.capacity_bytes;
  return h;
}

}  // namespace trainledger
