// Collectives, placement, the step and reliability (docs/formulas.md#communication-§5 beyond
// golden/).
#include <catch2/catch.hpp>

#include "collectives.hpp"
#include "helpers.hpp"

using namespace trainledger;

namespace {

const LineItem& item(const std::vector<LineItem>& items, const char* id) {
  const std::optional<ItemId> known = item_by_name(id);
  REQUIRE(known);
  const LineItem* i = find_item(items, *known);
  REQUIRE(i);
  return *i;
}

const std::string k_70b =
    "[model]\npreset = \"llama-3.1-70b\"\n[training]\nseq_len = 4096\nglobal_batch = 64\n"
    "recompute = \"selective\"\n[parallel]\ntp = 8\npp = 4\nsequence_parallel = true\nzero = 1\n"
    "[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 8\n";

}  // namespace

TEST_CASE("nccl-tests reading: 8 ranks, 2 GB all-reduce in 0.14 s", "[time][collectives]") {
  const BusReading r = nccl_reading(CollKind::all_reduce, 8, 2e9, 0.14);
  CHECK(r.algbw / 1e9 == Approx(14.29).margin(0.005));
  CHECK(r.busbw / 1e9 == Approx(25.0).margin(0.005));
  CHECK(r.per_rank_bytes == Approx(3.5e9));
  CHECK(nccl_reading(CollKind::all_gather, 8, 2e9, 0.14).busbw / 1e9 == Approx(12.5).margin(0.01));
}

TEST_CASE("collective volumes per GPU", "[time][collectives]") {
  const Expr s = Expr::term("S", 1e9, "B");
  CHECK(call_volume(CollKind::all_reduce, 8, s).value() == Approx(1.75e9));
  CHECK(call_volume(CollKind::reduce_scatter, 8, s).value() == Approx(0.875e9));
  CHECK(call_volume(CollKind::all_gather, 8, s).value() == Approx(0.875e9));
  CHECK(call_volume(CollKind::all_to_all, 4, s).value() == Approx(0.75e9));
  CHECK(call_volume(CollKind::send_recv, 2, s).value() == 1e9);
  CHECK(call_steps(CollKind::all_reduce, 8) == 14);
  CHECK(call_steps(CollKind::tree_all_reduce, 8) == 6);
}

TEST_CASE("errata 1: ZeRO-2 moves as much data-parallel traffic as DDP", "[time][errata]") {
  // The source documents' convention: gradients in the weights' dtype (16-bit).
  const std::string plan =
      "[model]\nparams = 7e9\n[training]\nframework = \"generic\"\n[cluster]\n"
      "gpu = \"h100-sxm5-80gb\"\n";
  const PlanResult ddp = test::plan_text(plan, {"parallel.zero=0"});
  const PlanResult z2 = test::plan_text(plan, {"parallel.zero=2"});
  CHECK(item(z2.communication, "comm.dp").value == item(ddp.communication, "comm.dp").value);
  REQUIRE(item(z2.communication, "comm.dp").collectives.size() == 2);
  CHECK(item(z2.communication, "comm.dp").collectives[0].collective == "reduce-scatter");
  CHECK(item(z2.communication, "comm.dp").collectives[1].collective == "all-gather");
}

TEST_CASE("placement: tp innermost stays in a node, dp and pp cross nodes", "[time][placement]") {
  const PlanResult p = test::plan_text(k_70b);
  CHECK(item(p.communication, "comm.tp").collectives[0].link == "intra-node");
  CHECK(item(p.communication, "comm.pp").collectives[0].link == "inter-node");
  CHECK(item(p.communication, "comm.dp").collectives[0].link == "inter-node");
  // With tp outermost the tp group spans nodes, and the report says so.
  const PlanResult bad =
      test::plan_text(k_70b, {"parallel.placement=[\"pp\", \"dp\", \"cp\", \"tp\"]"});
  CHECK(item(bad.communication, "comm.tp").collectives[0].link == "inter-node");
  bool warned = false;
  for (const std::string& w : bad.warnings)
    warned = warned || w.find("tp group spans nodes") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("an NVL72 domain keeps tp 8 x ep 8 on NVLink, 8-GPU nodes put ep on the network",
          "[time][placement]") {
  // Qwen3-30B-A3B with tp 8 and ep 8 on 64 GPUs: on GB200 NVL72 (4-GPU trays in a 72-GPU
  // NVLink domain: the gb200 preset) both groups stay inside the domain; on 8-GPU B200 nodes
  // the ep group (stride 8) crosses nodes.
  const std::string moe =
      "[model]\npreset = \"qwen3-30b-a3b\"\n[training]\nframework = \"megatron\"\n"
      "seq_len = 4096\nglobal_batch = 64\n[parallel]\ntp = 8\nep = 8\nsequence_parallel = "
      "true\nzero = 1\n[cluster]\n";
  const PlanResult nvl72 = test::plan_text(moe + "gpu = \"gb200-186gb\"\nnodes = 16\n");
  CHECK(nvl72.input.cluster.gpus_per_node == 4);
  CHECK(nvl72.input.cluster.domain() == 64);  // 16 trays: one segment of a rack
  CHECK(item(nvl72.communication, "comm.tp").collectives[0].link == "intra-node");
  CHECK(item(nvl72.communication, "comm.ep").collectives[0].link == "intra-node");
  const PlanResult hgx = test::plan_text(moe + "gpu = \"b200-180gb\"\nnodes = 8\n");
  CHECK(item(hgx.communication, "comm.tp").collectives[0].link == "intra-node");
  CHECK(item(hgx.communication, "comm.ep").collectives[0].link == "inter-node");
  // The same GB200 trays without the domain (each tray its own NVLink island): tp 8 spans two
  // trays and both groups go over the network, slower.
  const PlanResult trays =
      test::plan_text(moe + "gpu = \"gb200-186gb\"\nnodes = 16\n", {"cluster.nvlink_domain=4"});
  CHECK(item(trays.communication, "comm.ep").collectives[0].link == "inter-node");
  CHECK(item(trays.communication, "comm.tp").collectives[0].link == "inter-node");
  CHECK(*item(trays.communication, "comm.ep").time_s >
        2 * *item(nvl72.communication, "comm.ep").time_s);
  CHECK(item(trays.time, "time.step").value > item(nvl72.time, "time.step").value);
}

TEST_CASE(
    "a group that does not divide the NVLink domain crosses its edge once the job spans "
    "domains",
    "[time][placement]") {
  // tp 16 on 36 trays: segments of 18 trays (72 GPUs) hold the group of ranks 64-79 across an
  // edge, 8 GPUs on each side; the collective waits for it. 32 trays run as segments of 16
  // (64 GPUs, Megatron-Bridge's sbatch --segment), and no group crosses; nor in a rack.
  const std::string dense =
      "[model]\npreset = \"llama-3.1-70b\"\n[training]\nframework = \"megatron\"\n"
      "seq_len = 4096\n[parallel]\ntp = 16\nsequence_parallel = true\nzero = 1\n[cluster]\n"
      "gpu = \"gb200-186gb\"\n";
  const PlanResult racks72 = test::plan_text(dense + "nodes = 36\n");
  CHECK(item(racks72.communication, "comm.tp").collectives[0].link == "inter-node");
  const PlanResult one_rack = test::plan_text(dense + "nodes = 16\n");  // 64 GPUs in one rack
  CHECK(item(one_rack.communication, "comm.tp").collectives[0].link == "intra-node");
  const PlanResult segments16 = test::plan_text(dense + "nodes = 32\n");
  CHECK(segments16.input.cluster.domain() == 64);
  CHECK(item(segments16.communication, "comm.tp").collectives[0].link == "intra-node");
  CHECK(racks72.input.cluster.domain() == 72);
  // A job of a prime number of trays gets no segments: each tray is its own island.
  CHECK(test::plan_text(dense + "nodes = 19\n", {"parallel.tp=4"}).input.cluster.domain() == 4);
  // A domain that is not whole nodes is refused, located.
  const auto errors = test::load_errors(dense + "nodes = 36\nnvlink_domain = 70\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("cluster.nvlink_domain = 70 is not a whole number of nodes of "
                       "cluster.gpus_per_node (4)") != std::string::npos);
  CHECK(errors[0].find(":") != std::string::npos);
}

TEST_CASE("placement must name every dimension once", "[time][placement][errors]") {
  CHECK(test::load_errors(k_70b, {"parallel.placement=[\"tp\", \"tp\", \"dp\", \"pp\"]"}) ==
        std::vector<std::string>{
            "trainledger: error: --set parallel.placement=[\"tp\", \"tp\", \"dp\", \"pp\"]: "
            "parallel.placement must name tp, cp, dp and pp once each (\"tp\" appears 2 times)"});
}

TEST_CASE("the step is the sum of its parts, MFU and HFU", "[time][step]") {
  const PlanResult p = test::plan_text(k_70b);
  const double parts = item(p.time, "time.compute").value + item(p.time, "time.recompute").value +
                       item(p.time, "time.comm_exposed").value + item(p.time, "time.bubble").value +
                       item(p.time, "time.optimizer").value;
  CHECK(item(p.time, "time.step").value == Approx(parts));
  CHECK(item(p.time, "throughput.tokens_per_s").value ==
        Approx(64.0 * 4096 / item(p.time, "time.step").value));
  const double mfu = item(p.time, "mfu").value;
  CHECK(mfu > 0.2);
  CHECK(mfu < 0.7);
  CHECK(item(p.time, "hfu").value >= mfu);
  CHECK(item(p.time, "time.compute").kind == Kind::estimated);
  CHECK(item(p.time, "time.comm_exposed").kind == Kind::assumed);
}

TEST_CASE("overlap assumptions are flags that change the exposed time", "[time][step]") {
  const PlanResult hidden = test::plan_text(k_70b);
  const PlanResult exposed = test::plan_text(k_70b, {"parallel.overlap_dp=false"});
  CHECK(item(exposed.time, "time.comm_exposed").value >
        item(hidden.time, "time.comm_exposed").value);
  const PlanResult tp = test::plan_text(k_70b, {"parallel.overlap_tp=true"});
  CHECK(item(tp.time, "time.comm_exposed").value < item(hidden.time, "time.comm_exposed").value);
}

TEST_CASE("more micro-batches shrink the bubble, interleaving and ZB-H1 shrink it further",
          "[time][bubble]") {
  const PlanResult m64 = test::plan_text(k_70b);
  const PlanResult m256 = test::plan_text(k_70b, {"training.global_batch=256"});
  CHECK(item(m256.time, "pipeline.bubble_fraction").value ==
        Approx(3.0 / (128 + 3)));  // dp 2: m = 256 / 2
  CHECK(item(m256.time, "pipeline.bubble_fraction").value <
        item(m64.time, "pipeline.bubble_fraction").value);
  const PlanResult inter =
      test::plan_text(k_70b, {"parallel.schedule=\"interleaved\"", "parallel.virtual_stages=2"});
  CHECK(item(inter.time, "pipeline.bubble_fraction").value == Approx(3.0 / (2 * 32 + 3)));
  const PlanResult zb = test::plan_text(k_70b, {"parallel.schedule=\"zb-h1\""});
  CHECK(item(zb.time, "pipeline.bubble_fraction").value == Approx(3.0 / (3 * 32 + 3)));
}

TEST_CASE("time to train and the failures over the run", "[time][reliability]") {
  const PlanResult p = test::plan_text(k_70b, {"training.tokens=1T"});
  const double step = item(p.time, "time.step").value;
  CHECK(item(p.time, "time.to_train").value == Approx(1e12 / (64.0 * 4096) * step));
  const double waste = item(p.reliability, "checkpoint.waste").value;
  CHECK(item(p.reliability, "reliability.time_lost").value ==
        Approx(item(p.time, "time.to_train").value * waste / (1 - waste)));
  CHECK(item(p.reliability, "reliability.failures").value > 0);
}

TEST_CASE("a gathered checkpoint writes through one rank", "[time][reliability]") {
  const PlanResult sharded = test::plan_text(
      k_70b, {"checkpoint.storage_bandwidth=100 GB/s", "training.framework=\"pytorch\""});
  const PlanResult gathered =
      test::plan_text(k_70b, {"checkpoint.storage_bandwidth=100 GB/s",
                              "checkpoint.format=\"gathered\"", "training.framework=\"pytorch\""});
  CHECK(item(gathered.reliability, "checkpoint.write_time").value >
        item(sharded.reliability, "checkpoint.write_time").value);
  // PyTorch: fp32 weights (the master) and Adam m and v, 12 B per parameter
  // (torchtitan's DCP checkpoints); no gradients.
  CHECK(item(sharded.reliability, "checkpoint.size").value == Approx(70553706496.0 * (4 + 8)));
  // Stacks that keep 16-bit weights beside the master save both: 14 B per parameter.
  const PlanResult megatron = test::plan_text(k_70b, {"training.framework=\"megatron\""});
  CHECK(item(megatron.reliability, "checkpoint.size").value == Approx(70553706496.0 * (2 + 4 + 8)));
}

TEST_CASE("without a GPU's peak FLOP/s the step is not computed, and the report says so",
          "[time]") {
  const PlanResult p = test::plan_text(
      "[model]\npreset = \"llama-2-7b\"\n[cluster]\ngpu_memory = \"80 GiB\"\ngpus_per_node = 1\n");
  CHECK(p.time.empty());
  bool warned = false;
  for (const std::string& w : p.warnings)
    warned = warned || w.find("no peak FLOP/s") != std::string::npos;
  CHECK(warned);
}

namespace {
bool reads_key(const LineItem& item, std::string_view key) {
  for (const Collective& c : item.collectives)
    for (const Term& t : c.inputs)
      if (t.input == key) return true;
  return false;
}
}  // namespace

TEST_CASE("an oversubscribed spine slows the groups that leave their leaf, not those inside it",
          "[time][placement]") {
  // Llama 3.1 70B, tp 8 × pp 4 × dp 8 on 32 H100 nodes, ranks tp, dp, pp from inside: each dp
  // group is 8 consecutive nodes, each pp group 4 nodes 8 apart.
  const std::string plan =
      "[model]\npreset = \"llama-3.1-70b\"\n[training]\nframework = \"megatron\"\n"
      "seq_len = 4096\nglobal_batch = 256\n[parallel]\ntp = 8\npp = 4\nsequence_parallel = "
      "true\nzero = 1\n[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 32\n";
  const PlanResult flat = test::plan_text(plan);
  const double dp = *item(flat.communication, "comm.dp").time_s;
  const double pp = *item(flat.communication, "comm.pp").time_s;
  // Leaves of 8 nodes at 2:1: every dp group lies under one leaf (unchanged); a pp group has
  // one member under each of 4 leaves, so all its traffic takes the uplinks at half the rate.
  const PlanResult leaves8 =
      test::plan_text(plan, {"cluster.leaf_nodes=8", "cluster.oversubscription=2"});
  CHECK(*item(leaves8.communication, "comm.dp").time_s == Approx(dp));
  CHECK_FALSE(reads_key(item(leaves8.communication, "comm.dp"), "cluster.oversubscription"));
  CHECK(*item(leaves8.communication, "comm.pp").time_s > 1.5 * pp);
  CHECK(reads_key(item(leaves8.communication, "comm.pp"), "cluster.oversubscription"));
  CHECK(*item(leaves8.communication, "comm.tp").time_s ==
        Approx(*item(flat.communication, "comm.tp").time_s));
  CHECK(item(leaves8.time, "time.step").value >= item(flat.time, "time.step").value);
  // Leaves of 2 nodes: a dp group spans 4 leaves, 6 of its 7 other nodes beyond its leaf:
  // the uplinks carry 2 × 6/7 of the NICs' rate, and the dp collectives slow by up to that.
  const PlanResult leaves2 =
      test::plan_text(plan, {"cluster.leaf_nodes=2", "cluster.oversubscription=2"});
  const double dp2 = *item(leaves2.communication, "comm.dp").time_s;
  CHECK(dp2 > 1.3 * dp);
  CHECK(dp2 < 2.0 * 6 / 7 * dp);
  // A non-blocking spine (1:1) changes nothing.
  const PlanResult full = test::plan_text(plan, {"cluster.leaf_nodes=2"});
  CHECK(*item(full.communication, "comm.dp").time_s == Approx(dp));
  // Oversubscription without leaves would be silently ignored: refused, located.
  const auto errors = test::load_errors(plan + "oversubscription = 2\n");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("cluster.oversubscription = 2 is the leaves' down:up ratio: give "
                       "cluster.leaf_nodes") != std::string::npos);
}

TEST_CASE("DualPipeV: ZB-H1's bubble, half a stage more activations, twice the p2p traffic",
          "[time][bubble]") {
  // k_70b under PyTorch's conventions (torchtitan's pipelining); dp 2, 32 micro-batches, pp 4.
  const std::string torch = "training.framework=\"pytorch\"";
  const PlanResult one = test::plan_text(k_70b, {torch});
  const PlanResult v = test::plan_text(k_70b, {torch, "parallel.schedule=\"dualpipev\""});
  // (PP/2 − 1)(F&B + B − 3W) over 2p chunks: (p − 1)/3 of a micro-batch, as ZB-H1.
  CHECK(item(v.time, "pipeline.bubble_fraction").value == Approx(3.0 / (3 * 32 + 3)));
  // The first stage keeps (2p + 1)/2 = 4.5 micro-batches of its layers, against 1F1B's 4.
  CHECK(test::item_value(v, "activations") ==
        Approx(test::item_value(one, "activations") * 4.5 / 4).epsilon(1e-9));
  // Each micro-batch crosses 2(p − 1) device boundaries (the V turns inside the last device):
  // twice 1F1B's sends.
  CHECK(item(v.communication, "comm.pp").value ==
        Approx(2 * item(one.communication, "comm.pp").value));
  // What PyTorch's ScheduleDualPipeV refuses: fewer micro-batches than chunks, compiled stages,
  // and stacks without it.
  const auto error = [&](std::vector<std::string> sets) {
    sets.push_back("parallel.schedule=\"dualpipev\"");
    const auto errors = test::load_errors(k_70b, sets);
    REQUIRE(errors.size() == 1);
    return errors[0];
  };
  CHECK_THAT(error({torch, "training.global_batch=8"}),
             Catch::Contains("needs at least 2 × pp (8) micro-batches per step"));
  CHECK_THAT(error({torch, "training.compile=true"}), Catch::Contains("torch.compile"));
  CHECK_THAT(error({"training.framework=\"megatron\""}),
             Catch::Contains("megatron has no such schedule"));
}

TEST_CASE("NCCL's tuner: trees for all-reduces across many nodes, PAT for one rank per node",
          "[time][collectives]") {
  // DDP of Llama 3.1 8B over 64 H100 nodes: a ring of 512 ranks pays 2 × 511 steps of latency
  // per 25 MiB bucket (126 × 20 µs across nodes, 896 × 8 µs inside), a tree 12 × 20 + 14 × 8 µs.
  const std::string ddp =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nframework = \"pytorch\"\nseq_len = 4096\n"
      "global_batch = 512\n[parallel]\nzero = 0\n[cluster]\ngpu = \"h100-sxm5-80gb\"\n"
      "nodes = 64\n";
  const PlanResult tuned = test::plan_text(ddp);
  const PlanResult ring = test::plan_text(ddp, {"parallel.allreduce=\"ring\""});
  const LineItem& dp = item(tuned.communication, "comm.dp");
  REQUIRE(dp.collectives.size() == 1);
  CHECK(dp.collectives[0].collective == "all-reduce (tree)");
  CHECK(dp.collectives[0].algorithm == "tree");
  CHECK(reads_key(dp, "cluster.inter_node_latency"));
  const LineItem& dp_ring = item(ring.communication, "comm.dp");
  CHECK(dp_ring.collectives[0].algorithm == "ring");
  // Per bucket: ring 9.69 ms of latency + 0.131 ms of transfer at 400 GB/s (8 NICs of 50 GB/s);
  // tree 0.352 ms + 0.131 ms / (0.92 × 0.7): NCCL's tree efficiency and its correction at 25 MiB.
  const double buckets = dp.collectives[0].calls_per_step;
  CHECK(*dp_ring.time_s / buckets == Approx(9.688e-3 + 0.1309e-3).epsilon(0.01));
  CHECK(*dp.time_s / buckets == Approx(0.352e-3 + 0.1309e-3 / (0.92 * 0.7)).epsilon(0.01));
  CHECK(tree_correction(26.2e6) == 0.7);
  CHECK(tree_correction(1e12) == 1);
  CHECK(tree_correction(8) == 1);
  // A tree over 48 nodes climbs 2⌊log₂ 48⌋ = 10 network steps (NCCL's log2i), not 12.
  Group g48 = group_of(tuned.input, "dp", 8);
  g48.size = 48 * 8;
  g48.ranks_per_node = 8;
  CHECK(latency_steps(CollKind::tree_all_reduce, g48).inter == 10);
  CHECK(latency_steps(CollKind::tree_all_reduce, g48).intra == 14);
  // The same bytes either way (the busbw convention), and the step is shorter.
  CHECK(dp.value == dp_ring.value);
  CHECK(item(tuned.time, "time.step").value < item(ring.time, "time.step").value);
  // Inside one node NCCL's tree is a chain: rings stay, the plan is unchanged.
  const PlanResult node = test::plan_text(ddp, {"cluster.nodes=1", "training.global_batch=8"});
  CHECK(item(node.communication, "comm.dp").collectives[0].algorithm == "ring");

  // FSDP of Llama 3.1 8B behind tp 8 on 64 nodes: each dp group has one rank per node, and a
  // layer's all-gather (60.8 MB over 64 shards, 59.9 MB sent) is cheaper as PAT (⌊log₂ 64⌋/3.5
  // network steps of 20 µs + 64 × 2.8 µs, at 0.75 of the NIC's 50 GB/s: 0.213 + 1.597 ms) than as
  // a ring of 63 network steps (1.26 + 1.198 ms). Its gradients' reduce-scatter stays a ring
  // (1.26 + 2.396 ms): NCCL runs PAT only for a summing reduction.
  const std::string fsdp =
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nframework = \"pytorch\"\n"
      "seq_len = 4096\nglobal_batch = 64\nrecompute = \"full\"\n[parallel]\ntp = 8\n"
      "zero = 3\n[cluster]\ngpu = \"h100-sxm5-80gb\"\nnodes = 64\n";
  const PlanResult pat = test::plan_text(fsdp);
  const PlanResult rings = test::plan_text(fsdp, {"parallel.allreduce=\"ring\""});
  const LineItem& gathers = item(pat.communication, "comm.dp");
  bool any_pat = false;
  for (const Collective& c : gathers.collectives) {
    CHECK(c.group_size == 64);
    if (c.algorithm == "pat") {
      any_pat = true;
      CHECK(c.collective == "all-gather (PAT)");
    } else {
      CHECK(c.collective == "reduce-scatter");
      CHECK(c.algorithm == "ring");
    }
  }
  CHECK(any_pat);
  // 33 units, each gathered twice and reduced once: 33 × (2 × 1.811 + 3.656) ms.
  CHECK(*gathers.time_s == Approx(33 * (2 * 1.8108e-3 + 3.6563e-3)).epsilon(0.01));
  // tp's all-reduces inside the node stay rings; pp's sends are point-to-point.
  for (const Collective& c : item(pat.communication, "comm.tp").collectives)
    CHECK(c.algorithm == "ring");
  CHECK(*gathers.time_s < *item(rings.communication, "comm.dp").time_s);
  for (const Collective& c : item(rings.communication, "comm.dp").collectives)
    CHECK(c.algorithm == "ring");
  // The tuner never picks a slower algorithm: no dimension's traffic takes longer than rings'.
  for (const LineItem& i : pat.communication)
    if (i.time_s) CHECK(*i.time_s <= *item(rings.communication, i.id.c_str()).time_s * (1 + 1e-12));
  // Pipeline sends are point-to-point, outside the tuner.
  const PlanResult piped = test::plan_text(k_70b);
  for (const Collective& c : item(piped.communication, "comm.pp").collectives)
    CHECK(c.algorithm == "p2p");
  // Without a network bandwidth the time is unknown: no algorithm is picked on latency alone.
  const PlanResult no_bw = test::plan_text(
      "[model]\npreset = \"llama-3.1-8b\"\n[training]\nframework = \"pytorch\"\n"
      "seq_len = 4096\nglobal_batch = 512\n[parallel]\nzero = 0\n[cluster]\n"
      "gpu_memory = \"80 GiB\"\npeak_flops = { bf16 = \"989 TFLOP/s\" }\n"
      "memory_bandwidth = \"3 TB/s\"\nintra_node_bandwidth = \"400 GB/s\"\nnodes = 64\n");
  CHECK_FALSE(item(no_bw.communication, "comm.dp").time_s);
  CHECK(item(no_bw.communication, "comm.dp").collectives[0].algorithm == "ring");
  // The mode is echoed.
  CHECK(pat.input.parallel.nccl_algo == NcclAlgo::tuner);
}
