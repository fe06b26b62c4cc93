// Calibration: measured collective timings (nccl-tests logs) fitted into a profile whose values
// replace assumed ones in a plan (`plan --calibration PROFILE`; docs/calibration.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trainledger/numbers.hpp"

namespace trainledger::calibrate {

// One message size of a sweep: the out-of-place time, and busbw recomputed from size and time
// with nccl-tests' factor for the collective and group size (doc/PERFORMANCE.md).
struct Point {
  double bytes = 0;
  double seconds = 0;
  double busbw = 0;  // bytes/s
};

// One nccl-tests run: the collective, the group, the GPUs and the sizes.
struct Sweep {
  std::string source;  // the log's name
  CollKind kind = CollKind::all_reduce;
  int ranks = 0;
  int nodes = 0;
  std::string gpu_name;            // from the "Using devices" list, when the log has one
  std::vector<std::string> hosts;  // distinct, in rank order
  std::vector<Point> points;       // increasing size
  int ranks_per_node() const { return nodes > 0 ? (ranks + nodes - 1) / nodes : ranks; }
};

// What the log may not say: the collective (named in the command or the file name otherwise),
// the ranks (derived from the printed busbw/algbw ratio otherwise) and the nodes (from the
// device list's host names otherwise).
struct ImportHints {
  std::string collective;  // all_reduce, all_gather, reduce_scatter, alltoall, sendrecv
  int ranks = 0;
  int nodes = 0;
  std::string gpu_name;
};

// Parses nccl-tests text output: the tables of current and older versions (with and without
// the root column; #wrong or error), launcher prefixes ("[1,0]<stdout>:" of mpirun
// --tag-output, "0: " of srun -l). Throws config::ConfigError naming the file and line.
Sweep parse_nccl_tests(const std::string& text, const std::string& name, const ImportHints& hints);

// A collective's latency α and bus bandwidth B: α from the small messages (at most 64 KiB:
// their median time; without any, the line through the two smallest sizes at zero bytes when
// the smallest is at most 4 MiB; otherwise not measured), B
// the median busbw of the largest messages (at least a quarter of the largest size).
struct Fit {
  std::string source;
  CollKind kind = CollKind::all_reduce;
  int ranks = 0, nodes = 0, points = 0;
  double alpha_s = 0;
  bool alpha_extrapolated = false;  // no message of 64 KiB or less (the smallest ≤ 4 MiB)
  bool alpha_measured = true;       // false: the smallest message is over 4 MiB
  double busbw = 0;                 // B, bytes/s
  double largest_busbw = 0;         // busbw of the largest message
  // α_S: the per-call latency of NCCL's Simple protocol, the model min(α + volume/(B/2),
  // α_S + volume/B) closest to the messages from 1 MiB up; 0: none above α (one protocol).
  double alpha_simple_s = 0;
  double ll_share = k_ll_bandwidth_share;  // η: the low-latency protocol's share of B
  double worst_error = 0;                  // largest |model − t| / t over the sweep
  double worst_error_bytes = 0;            // at this size
  bool worst_optimistic = false;           // there the fit is faster than the measurement
  bool inter_node() const { return nodes > 1; }
};
Fit fit_sweep(const Sweep& sweep);

// A probe's measurement that is recorded in the profile (memory after the CUDA context, NCCL's
// buffers, the allocator's granularity, GEMM and HBM rates): the value in `unit` and how it was
// taken.
struct Measurement {
  std::string name;  // "cuda_context_bare"
  double value = 0;
  std::string unit;  // "bytes", "FLOP/s", "bytes/s"
  std::string why;
};

// A profile: provenance, the plan keys it measures (key → TOML value, and why), the fits and
// the raw sweeps.
struct Profile {
  std::string tool;
  std::string method;
  std::string created;  // UTC, ISO 8601
  std::string gpu_name;
  std::vector<std::string> hosts;
  std::vector<std::string> sources;
  std::vector<std::string> notes;
  std::string backend;                // probe: "nccl" or "mpi"
  std::string launcher;               // probe: "mpi", "torchrun" or "none"
  std::vector<std::string> versions;  // probe: CUDA, NCCL, driver, MPI
  std::vector<Measurement> measurements;
  struct Value {
    std::string key;    // "intra_node_bandwidth" (in [cluster])
    std::string value;  // TOML text: "\"361.2 GB/s\""
    std::string why;
  };
  std::vector<Value> cluster;
  std::vector<Fit> fits;
  std::vector<Sweep> sweeps;
};

// Fits every sweep and turns the fits into plan keys (docs/calibration.md): all-reduce inside a
// node → intra_node_bandwidth and intra_node_latency; all-gather, reduce-scatter, all-to-all and
// send/recv inside a node → intra_node_gather_bandwidth (the lowest); across nodes →
// inter_node_bandwidth (B over the ranks per node, the inverse of the planner's NIC model) and
// inter_node_latency. Across nodes a ring collective (all-gather, reduce-scatter, all-to-all,
// send/recv) sets the NIC rate before an all-reduce, which NCCL may run as a tree (its busbw
// is then above what a ring's NICs carry); `nic_rate` (bytes/s per GPU, 0: unknown) caps an
// all-reduce's rate at the line rate. Throws config::ConfigError when the sweeps disagree on
// the GPU.
Profile build_profile(std::vector<Sweep> sweeps, const std::string& tool, const std::string& method,
                      const std::string& created, double nic_rate = 0);

// The profile as TOML ([profile], [cluster], [[fit]], [[sweep]]).
std::string render_profile(const Profile& p);

// The measured keys of [cluster] a profile may set.
const std::vector<std::string>& measurable_keys();

}  // namespace trainledger::calibrate
