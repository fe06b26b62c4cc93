// Host memory per node (docs/formulas.md#dispatch): offloaded state, checkpoint staging,
// data-loader workers and the training processes themselves.
#include "memory.hpp"
#include "state.hpp"

namespace trainledger {

namespace {

constexpr const char* k_src_offload =
    "Ren et al. 2021, ZeRO-Offload §4: fp32 master weights, optimizer state and gradients on "
    "the host (pinned)";
constexpr const char* k_src_activation_offload =
    "Megatron-Core --cpu-offloading-num-layers with Transformer Engine's cpu_offload.py: the "
    "saved tensors of the first k layers in pinned host buffers until their backward";
constexpr const char* k_src_staging =
    "torch.distributed.checkpoint / torch.save: tensors are copied to host memory before they "
    "are written, each replicated tensor by one rank (DCP's dedup_save_plans); a gathered save "
    "collects the whole state on one rank";
constexpr const char* k_src_workers = "PyTorch DataLoader: one process per worker";
constexpr const char* k_src_runtime =
    "assumed resident size of one training process (Python, PyTorch, CUDA libraries)";

}  // namespace

template <typename V>
HostOf<V> host_memory(const PlanInput& in, const Derived& d, const Items<V>& worst_items,
                      const Items<V>& offloaded) {
  HostOf<V> h;
  const int gpus = in.cluster.gpus_per_node;
  const V per_node = V::term("gpus_per_node", gpus, "GPUs per node");
  if (!offloaded.empty()) {
    const double bytes = sum_values(offloaded);
    h.items.push_back(make(ItemId::host_offload, "offloaded optimizer state (pinned)", Unit::bytes,
                           V::term("offloaded_per_gpu", bytes, "B per GPU") * per_node,
                           k_src_offload));
  }
  // Megatron-Core's activation offloading: the first k layers' saved tensors of the micro-batch
  // in flight, in pinned buffers (Transformer Engine cpu_offload.py allocates them per layer and
  // frees them after the backward): k/(N − k) of what the GPU keeps.
  const int k = in.training.activation_offload_layers;
  const int n = offload_stage_layers(in);
  if (k > 0 && k < n) {
    const double resident = value_of(worst_items, ItemId::activations);
    h.items.push_back(make(
        ItemId::host_activations, "offloaded activations (pinned, one micro-batch)", Unit::bytes,
        V::term("resident_activations", resident, "B of activations on the GPU") *
            V::term("offloaded_per_resident", static_cast<double>(k) / (n - k),
                    "k/(N − k): the offloaded layers per resident one") *
            per_node,
        k_src_activation_offload));
  }
  // Every checkpointed item a GPU holds, on the GPU or offloaded, is staged before the write.
  double shard = 0;
  for (const auto& i : worst_items)
    if (info(i.item).in_checkpoint) shard += i.value;
  for (const auto& i : offloaded)
    if (info(i.item).in_checkpoint) shard += i.value;
  // A sharded save (torch.distributed.checkpoint) writes each replicated tensor once: its
  // planner (dedup_save_plans) gives each to one of the ranks holding it, balancing the ranks'
  // loads. A node stages at most what its GPUs hold, and about its share of the checkpoint.
  const V ckpt = checkpoint_size<V>(in, d);
  const V nodes = V::term("nodes", in.cluster.nodes, "nodes");
  V staging = V::min(V::term("checkpoint_shard", shard, "B per GPU") * per_node, ckpt / nodes);
  if (in.checkpoint.format == CheckpointFormat::gathered)
    staging = staging + V::term("full_checkpoint", ckpt.value(), "B gathered on the first node");
  h.items.push_back(make(ItemId::host_checkpoint_staging, "checkpoint staging", Unit::bytes,
                         staging, k_src_staging));
  if (in.training.data_workers > 0) {
    h.items.push_back(make(ItemId::host_data_workers, "data-loader workers", Unit::bytes,
                           input<V>(in, "training.data_workers", "workers",
                                    in.training.data_workers, "workers per GPU") *
                               input<V>(in, "training.data_worker_memory", "worker_memory",
                                        in.training.data_worker_memory, "B") *
                               per_node,
                           k_src_workers, Kind::assumed));
  }
  h.items.push_back(make(ItemId::host_runtime, "training processes", Unit::bytes,
                         input<V>(in, "cluster.host_process_memory", "process_memory",
                                  in.cluster.host_process_memory, "B per rank") *
                             per_node,
                         k_src_runtime, Kind::assumed));
  h.peak_bytes = sum_values(h.items);
  return h;
}

template HostOf<Expr> host_memory<Expr>(const PlanInput&, const Derived&, const Items<Expr>&,
                                        const Items<Expr>&);
template HostOf<Num> host_memory<Num>(const PlanInput&, const Derived&, const Items<Num>&,
                                      const Items<Num>&);

}  // namespace trainledger
