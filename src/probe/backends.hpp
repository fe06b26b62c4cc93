// The probe's backends (src/probe/mpi_backend.cpp, nccl_backend.cpp) and what they share: the
// MPI rendezvous, the watchdog that turns a hang into exit 3.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "probe.hpp"

namespace trainledger::probe::detail {

// A way to exchange bytes between the ranks of a launch before any communicator exists.
class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
};

// MPI_Init (once) and MPI_COMM_WORLD; nullptr when this build has no MPI.
std::unique_ptr<Bootstrap> mpi_bootstrap();
// RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torchrun): rank 0 listens on MASTER_PORT and
// every allgather is one round of connections to it.
std::unique_ptr<Bootstrap> tcp_bootstrap(double timeout_s);
// A single process.
std::unique_ptr<Bootstrap> single_bootstrap();

// MPI collectives on CPU buffers (nullptr when this build has no MPI).
std::unique_ptr<Backend> make_mpi_backend();
// NCCL and CUDA, loaded at run time (throws ProbeError when this build has no NCCL support or
// the libraries, a driver or a GPU are missing).
std::unique_ptr<Backend> make_nccl_backend(std::unique_ptr<Bootstrap> boot, double timeout_s);
bool nccl_built();
bool mpi_built();
// MPI_Abort of the world when MPI is initialised (every rank ends with `code`); else nothing.
void mpi_abort(int code) noexcept;

// The watchdog: a deadline for what this rank waits on now (a collective, a rendezvous). When it
// passes, the rank prints what it waited on, aborts its communicators and exits 3.
void watchdog_arm(double seconds, const std::string& what);
void watchdog_disarm();
// The start-up's deadline (begin_startup): `what` names the step the rank is in.
void watchdog_arm_startup(double seconds, const std::string& what);
// While the start-up's deadline runs: names the step the rank is in (else nothing).
void watchdog_startup_step(const std::string& what);
// While the start-up's deadline runs: names the step and keeps the deadline. Otherwise arms the
// watchdog for `seconds` (as watchdog_arm).
void watchdog_continue(double seconds, const std::string& what);
// Cancels the start-up's deadline if it still runs.
void watchdog_end_startup();
// SIGTERM, SIGINT and SIGHUP end this rank with exit 3 (saying so); restore_signals puts back
// the handlers from before the first install.
void install_signals();
void restore_signals() noexcept;
void watchdog_set_backend(Backend* b);
int watchdog_rank();
void watchdog_set_rank(int rank);

}  // namespace trainledger::probe::detail
