// The MPI backend: the probe's collectives with MPI on CPU buffers (one process per rank under
// mpirun or srun), so that probe → fit → profile → plan runs where there is no GPU; and the MPI
// rendezvous the NCCL backend uses under mpirun (docs/calibration.md#probe).
#include "backends.hpp"

#ifdef TRAINLEDGER_HAVE_MPI

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <vector>

namespace trainledger::probe::detail {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw ProbeError(fmt::format("{}: {}", what, text));
}

// MPI_Init once per process; MPI_Finalize at exit when this process initialised it.
void ensure_init() {
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return;
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // Errors come back as codes (and end in exit 3) instead of aborting the job silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  });
}

std::vector<std::string> allgather_on(MPI_Comm comm, const std::string& mine) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(n)), offs(static_cast<std::size_t>(n));
  check(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm), "MPI_Allgather");
  int total = 0;
  for (int i = 0; i < n; ++i) {
    offs[static_cast<std::size_t>(i)] = total;
    total += lens[static_cast<std::size_t>(i)];
  }
  std::string buf(static_cast<std::size_t>(std::max(total, 1)), '\0');
  check(MPI_Allgatherv(mine.data(), len, MPI_CHAR, buf.data(), lens.data(), offs.data(), MPI_CHAR,
                       comm),
        "MPI_Allgatherv");
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back(buf.substr(static_cast<std::size_t>(offs[static_cast<std::size_t>(i)]),
                             static_cast<std::size_t>(lens[static_cast<std::size_t>(i)])));
  return out;
}

class MpiBoot : public Bootstrap {
 public:
  MpiBoot() {
    ensure_init();
    MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m_size);
  }
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }
  std::vector<std::string> allgather(const std::string& mine) override {
    return allgather_on(MPI_COMM_WORLD, mine);
  }

 private:
  int m_rank = 0, m_size = 1;
};

// Buffers shared by the groups: grown to the largest message, filled once.
struct Buffers {
  std::vector<float> send, recv;
  void reserve(double bytes) {
    const auto n = static_cast<std::size_t>(bytes / 4) + 1;
    if (send.size() < n) {
      send.assign(n, 1.0f);
      recv.assign(n, 0.0f);
    }
  }
};

class MpiGroup : public Group {
 public:
  MpiGroup(MPI_Comm comm, bool owned, Buffers& buffers)
      : m_comm(comm), m_owned(owned), m_buf(buffers) {
    MPI_Comm_rank(comm, &m_rank);
    MPI_Comm_size(comm, &m_size);
  }
  ~MpiGroup() override {
    if (m_owned) MPI_Comm_free(&m_comm);
  }
  int size() const override { return m_size; }
  int rank() const override { return m_rank; }

  double time(CollKind kind, double bytes, int warmup, int iters) override {
    m_buf.reserve(bytes);
    check(MPI_Barrier(m_comm), "MPI_Barrier");
    for (int i = 0; i < warmup; ++i) once(kind, bytes);
    check(MPI_Barrier(m_comm), "MPI_Barrier");
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) once(kind, bytes);
    const double mine = (MPI_Wtime() - t0) / std::max(1, iters);
    double slowest = 0;
    check(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, m_comm), "MPI_Allreduce");
    return slowest;
  }

 private:
  void once(CollKind kind, double bytes) {
    float* s = m_buf.send.data();
    float* r = m_buf.recv.data();
    const int count = static_cast<int>(bytes / 4);
    const int per = count / m_size;
    switch (kind) {
      case CollKind::all_reduce:
      case CollKind::tree_all_reduce:
        check(MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, m_comm), "MPI_Allreduce");
        break;
      case CollKind::all_gather:
        check(MPI_Allgather(s, per, MPI_FLOAT, r, per, MPI_FLOAT, m_comm), "MPI_Allgather");
        break;
      case CollKind::reduce_scatter:
        check(MPI_Reduce_scatter_block(s, r, per, MPI_FLOAT, MPI_SUM, m_comm),
              "MPI_Reduce_scatter_block");
        break;
      case CollKind::all_to_all:
        check(MPI_Alltoall(s, per, MPI_FLOAT, r, per, MPI_FLOAT, m_comm), "MPI_Alltoall");
        break;
      case CollKind::send_recv: {
        // nccl-tests' sendrecv: each rank sends to the next and receives from the previous.
        const int next = (m_rank + 1) % m_size;
        const int prev = (m_rank + m_size - 1) % m_size;
        check(MPI_Sendrecv(s, count, MPI_FLOAT, next, 0, r, count, MPI_FLOAT, prev, 0, m_comm,
                           MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
        break;
      }
    }
  }

  MPI_Comm m_comm;
  bool m_owned;
  Buffers& m_buf;
  int m_rank = 0, m_size = 1;
};

class MpiBackend : public Backend {
 public:
  MpiBackend() : m_boot() {}
  std::string name() const override { return "mpi"; }
  int rank() const override { return m_boot.rank(); }
  int size() const override { return m_boot.size(); }
  std::vector<std::string> allgather(const std::string& mine) override {
    return m_boot.allgather(mine);
  }
  std::unique_ptr<Group> split(int color, int key) override {
    MPI_Comm c = MPI_COMM_NULL;
    check(MPI_Comm_split(MPI_COMM_WORLD, color < 0 ? MPI_UNDEFINED : color, key, &c),
          "MPI_Comm_split");
    if (c == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiGroup>(c, true, m_buffers);
  }
  std::unique_ptr<Group> world() override {
    return std::make_unique<MpiGroup>(MPI_COMM_WORLD, false, m_buffers);
  }
  std::string device_name() override { return "host CPU (MPI)"; }
  DeviceReport measure_device(const std::vector<GemmShape>& /*shapes*/, double, double,
                              double) override {
    DeviceReport r;
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<std::size_t>(std::max(0, len)));
    v = v.substr(0, v.find_first_of("\r\n,"));
    r.versions.push_back(v);
    r.notes.push_back(
        "MPI backend on CPUs: host-memory collectives, no GPU memory, GEMM or HBM measured; "
        "its bandwidths describe this host, not GPUs");
    return r;
  }
  void abort() noexcept override {}

 private:
  MpiBoot m_boot;
  Buffers m_buffers;
};

}  // namespace

std::unique_ptr<Bootstrap> mpi_bootstrap() { return std::make_unique<MpiBoot>(); }
std::unique_ptr<Backend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }
bool mpi_built() { return true; }

void mpi_abort(int code) noexcept {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (inited && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace trainledger::probe::detail

#else

namespace trainledger::probe::detail {
std::unique_ptr<Bootstrap> mpi_bootstrap() { return nullptr; }
std::unique_ptr<Backend> make_mpi_backend() { return nullptr; }
bool mpi_built() { return false; }
void mpi_abort(int) noexcept {}
}  // namespace trainledger::probe::detail

#endif
