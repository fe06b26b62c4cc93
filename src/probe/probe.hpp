// `trainledger calibrate probe`: one process per GPU (or per CPU rank) under mpirun, srun or a
// torchrun-style environment sweeps the collectives over message sizes on the world, one node
// and one GPU per node, measures memory and GEMM/HBM rates where a GPU is present, and rank 0
// writes a calibration profile (docs/calibration.md#probe).
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "trainledger/calibrate.hpp"

namespace trainledger::probe {

// The exit code of every failure of a probe (no GPU, no NCCL, a rank that died, a hang).
inline constexpr int k_exit_probe_failed = 3;

// How long the start-up of a rank may take (reading the plan, MPI_Init, the first rendezvous)
// unless told (--startup-timeout): much less than a sweep's calls, so that a rank that never
// started, failed or hangs at start-up ends the job quickly.
inline constexpr double k_default_startup_timeout_s = 30;

// A failure that ends the probe on this rank with exit 3.
struct ProbeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How the processes found each other.
enum class Launcher { none, mpi, torchrun };
std::string to_string(Launcher l);
// From the environment: OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or SLURM_PROCID (srun with
// PMI) → mpi; RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT → torchrun; otherwise none.
Launcher detect_launcher();
// The rank the launcher gave this process before any process group exists
// (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID, RANK); -1 when none says.
int launcher_rank();

// A group of ranks that runs collectives together.
class Group {
 public:
  virtual ~Group() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // Seconds per call of `kind` on a message of `bytes` (nccl-tests' size: the all-gather's
  // output, the reduce-scatter's input, each rank's buffer otherwise), after `warmup` calls,
  // averaged over `iters` calls: the slowest member's. Every member calls it together.
  virtual double time(CollKind kind, double bytes, int warmup, int iters) = 0;
};

// What the GPU side measured (empty on the CPU backend).
struct DeviceReport {
  std::string gpu_name;
  std::vector<std::string> versions;  // "CUDA runtime 13.0", "NCCL 2.28.9", "driver 13.0"
  std::vector<calibrate::Measurement> measurements;
  std::vector<calibrate::Profile::Value> cluster;  // measured plan keys (matmul_efficiency)
  std::vector<std::string> notes;
};

// GEMM shapes to time: m × n × k (m the tokens of a micro-batch), with a weight (how many of
// them a layer runs).
struct GemmShape {
  std::string name;
  long long m = 0, n = 0, k = 0;
  double weight = 1;
};

// A way to run collectives across the processes of a launch.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `mine`, in rank order (every rank calls it).
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  // The group of the ranks that pass the same colour, ordered by key (every rank calls it;
  // a negative colour joins no group and gets nullptr).
  virtual std::unique_ptr<Group> split(int color, int key) = 0;
  virtual std::unique_ptr<Group> world() = 0;
  // The name of what a rank computes on ("NVIDIA H100 80GB HBM3", "host CPU (MPI)").
  virtual std::string device_name() = 0;
  // Memory, GEMM and HBM probes on this rank's device; `shapes` from the plan, when given.
  virtual DeviceReport measure_device(const std::vector<GemmShape>& shapes, double peak_bf16,
                                      double peak_fp8, double hbm_bandwidth) = 0;
  // Tears down communicators so that peers blocked in a collective return (NCCL's abort);
  // called from the watchdog before exit 3. Must not block.
  virtual void abort() noexcept = 0;
};

struct Options {
  std::string backend = "auto";  // auto, nccl, mpi
  double min_bytes = 8;
  double max_bytes = 0;  // 0: 1 GiB with NCCL, 64 MiB with MPI on CPUs
  double step_factor = 2;
  int warmup = 5;
  int iters = 20;
  double timeout_s = 300;  // one collective call, or a rendezvous, longer than this: exit 3
  // The start-up (the plan, MPI_Init, the first rendezvous) longer than this: exit 3.
  double startup_timeout_s = k_default_startup_timeout_s;
  std::vector<CollKind> collectives;
  bool progress = false;                                  // a progress line on stderr (a terminal)
  std::vector<GemmShape> gemm;                            // from the plan
  std::string plan_source;                                // the plan the shapes came from
  double peak_bf16 = 0, peak_fp8 = 0, hbm_bandwidth = 0;  // the plan's GPU, or the preset's
  Launcher launcher = Launcher::none;
};

// The backends this build has: "nccl" when CUDA and NCCL were found, "mpi" when MPI was.
std::vector<std::string> available_backends();

// Makes the backend (auto: NCCL when a GPU is visible, else MPI on CPUs); throws ProbeError
// saying why none can run. The torchrun-style rendezvous allows `startup_timeout_s` per
// exchange; NCCL's communicator set-up, `timeout_s` per step.
std::unique_ptr<Backend> make_backend(const std::string& name, Launcher launcher, double timeout_s,
                                      double startup_timeout_s = k_default_startup_timeout_s);

// Runs the probe on this rank; rank 0 builds the profile and hands it to `write` (which throws
// when it cannot write it); then every rank learns whether it was written. Returns the profile
// on rank 0 (empty elsewhere). Throws ProbeError, on every rank, when anything failed.
calibrate::Profile run_probe(Backend& backend, const Options& o, const std::string& tool,
                             const std::string& created,
                             const std::function<void(const calibrate::Profile&)>& write);

// After a ProbeError on this rank: aborts the backend's communicators and the MPI job (every
// rank ends with exit 3) and exits 3 once a backend or MPI exists; returns when neither does
// (the caller returns 3).
void end_job(Backend* backend) noexcept;

// The first thing a rank does, before it reads the plan or calls MPI_Init: SIGTERM, SIGINT and
// SIGHUP (the launcher ending the job because another rank failed) end it with exit 3, and the
// watchdog allows `seconds` for the whole start-up (until the first rendezvous is done), then
// ends it with exit 3. The rank's number comes from the launcher's environment until the
// backend knows it.
void begin_startup(double seconds);
// Names the step of the start-up the rank is in now (for the watchdog's message); keeps the
// deadline.
void startup_step(const std::string& what);
// When the command ends with an exit code to return (a probe that ran, or a start-up that ended
// in an error): the start-up's deadline, if it still runs, is cancelled and the signal handlers
// from before begin_startup are back.
void end_startup() noexcept;

// A torchrun-style rendezvous: rank 0 listens on MASTER_ADDR:MASTER_PORT and every rank sends
// its bytes; each gets all of them back in rank order. Used to exchange NCCL's unique id and
// host names without MPI. Throws ProbeError after `timeout_s`.
std::vector<std::string> tcp_allgather(const std::string& addr, int port, int rank, int size,
                                       const std::string& mine, double timeout_s);

}  // namespace trainledger::probe
