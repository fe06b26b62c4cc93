// The probe's orchestration (docs/calibration.md#probe): topology from host names, the
// communicators, the sweeps, the device probes, the profile on rank 0; the watchdog that turns a
// hang or a dead peer into exit 3; the torchrun-style rendezvous.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <thread>

#include "backends.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace trainledger::probe {

std::string to_string(Launcher l) {
  switch (l) {
    case Launcher::mpi:
      return "mpi";
    case Launcher::torchrun:
      return "torchrun";
    case Launcher::none:
      break;
  }
  return "none";
}

Launcher detect_launcher() {
  auto has = [](const char* v) { return std::getenv(v) != nullptr; };
  if (has("OMPI_COMM_WORLD_SIZE") || has("PMI_SIZE") || has("PMIX_RANK") ||
      has("MV2_COMM_WORLD_SIZE") || (has("SLURM_PROCID") && has("SLURM_NTASKS") && !has("RANK")))
    return Launcher::mpi;
  if (has("RANK") && has("WORLD_SIZE") && has("MASTER_ADDR") && has("MASTER_PORT"))
    return Launcher::torchrun;
  return Launcher::none;
}

namespace detail {

// ---------------------------------------------------------------------------------------------
// The watchdog.

namespace {

using Clock = std::chrono::steady_clock;

struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  Clock::time_point deadline{};
  bool armed = false;
  bool startup = false;  // the armed deadline is the start-up's (begin_startup)
  bool started = false;
  double seconds = 0;
  std::string what;
  std::atomic<Backend*> backend{nullptr};
  std::atomic<int> rank{-1};
};

// Never destroyed: the watchdog's thread may wait on it while the process exits.
Watchdog& dog() {
  static Watchdog* w = new Watchdog;
  return *w;
}

std::string rank_text(int rank) { return rank < 0 ? "?" : std::to_string(rank); }

[[noreturn]] void fire(const std::string& what, double seconds) {
  Watchdog& w = dog();
  const std::string msg = fmt::format(
      "trainledger: calibrate probe: rank {}: no progress for {:.0f} s in {}: a rank died, hangs "
      "or cannot be reached; aborting, exit 3, no profile written\n",
      rank_text(w.rank.load()), seconds, what);
  (void)!::write(2, msg.data(), msg.size());
  if (Backend* b = w.backend.load()) b->abort();
  std::_Exit(k_exit_probe_failed);
}

void watch() {
  Watchdog& w = dog();
  std::unique_lock<std::mutex> lock(w.mu);
  for (;;) {
    if (!w.armed) {
      w.cv.wait(lock);
      continue;
    }
    if (w.cv.wait_until(lock, w.deadline) == std::cv_status::timeout && w.armed &&
        Clock::now() >= w.deadline)
      fire(w.startup ? "the start-up: " + w.what : w.what, w.seconds);
  }
}

// With the watchdog's mutex held.
void arm_locked(Watchdog& w, double seconds, const std::string& what, bool startup) {
  if (!w.started) {
    std::thread(watch).detach();
    w.started = true;
  }
  w.seconds = seconds;
  w.what = what;
  w.startup = startup;
  w.deadline = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  w.armed = true;
  w.cv.notify_all();
}

char g_signal_message[200];
std::size_t g_signal_length = 0;

extern "C" void on_signal(int) {
  (void)!::write(2, g_signal_message, g_signal_length);
  std::_Exit(k_exit_probe_failed);
}

constexpr int k_signals[] = {SIGTERM, SIGINT, SIGHUP};
struct sigaction g_saved[std::size(k_signals)];
bool g_saved_set = false;

void set_signal_message(int rank) {
  const std::string m = fmt::format(
      "trainledger: calibrate probe: rank {}: stopped by a signal (the launcher ends the job when "
      "another rank fails); exit 3, no profile written\n",
      rank_text(rank));
  g_signal_length = std::min(m.size(), sizeof g_signal_message);
  std::memcpy(g_signal_message, m.data(), g_signal_length);
}

}  // namespace

void watchdog_arm(double seconds, const std::string& what) {
  Watchdog& w = dog();
  std::lock_guard<std::mutex> lock(w.mu);
  arm_locked(w, seconds, what, false);
}

void watchdog_arm_startup(double seconds, const std::string& what) {
  Watchdog& w = dog();
  std::lock_guard<std::mutex> lock(w.mu);
  arm_locked(w, seconds, what, true);
}

void watchdog_continue(double seconds, const std::string& what) {
  Watchdog& w = dog();
  std::lock_guard<std::mutex> lock(w.mu);
  if (w.armed && w.startup)
    w.what = what;
  else
    arm_locked(w, seconds, what, false);
}

void watchdog_startup_step(const std::string& what) {
  Watchdog& w = dog();
  std::lock_guard<std::mutex> lock(w.mu);
  if (w.armed && w.startup) w.what = what;
}

void watchdog_disarm() {
  Watchdog& w = dog();
  std::lock_guard<std::mutex> lock(w.mu);
  w.armed = false;
  w.startup = false;
}

void watchdog_end_startup() {
  Watchdog& w = dog();
  std::lock_guard<std::mutex> lock(w.mu);
  if (w.startup) w.armed = false;
  w.startup = false;
}

void watchdog_set_backend(Backend* b) { dog().backend = b; }
int watchdog_rank() { return dog().rank; }
void watchdog_set_rank(int rank) {
  dog().rank = rank;
  set_signal_message(rank);
}

void install_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (std::size_t i = 0; i < std::size(k_signals); ++i)
    ::sigaction(k_signals[i], &sa, g_saved_set ? nullptr : &g_saved[i]);
  g_saved_set = true;
}

void restore_signals() noexcept {
  if (!g_saved_set) return;
  for (std::size_t i = 0; i < std::size(k_signals); ++i)
    ::sigaction(k_signals[i], &g_saved[i], nullptr);
  g_saved_set = false;
}

// ---------------------------------------------------------------------------------------------
// The torchrun-style rendezvous: rank 0 accepts size − 1 connections a round, each sends
// (magic, round, rank, length, bytes), and rank 0 answers every one with all of them.

namespace {

constexpr std::uint32_t k_magic = 0x544c5052;  // "TLPR"
constexpr std::uint32_t k_max_blob = 1 << 20;

double remaining(Clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - Clock::now()).count();
}

void wait_fd(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    const double left = remaining(deadline);
    if (left <= 0) throw ProbeError(fmt::format("rendezvous: timed out {}", what));
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min(left * 1000 + 1, 1e6)));
    if (r > 0) return;
    if (r < 0 && errno != EINTR)
      throw ProbeError(fmt::format("rendezvous: poll: {}", std::strerror(errno)));
  }
}

void send_all(int fd, const void* data, std::size_t n, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    wait_fd(fd, POLLOUT, deadline, "sending");
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) throw ProbeError(fmt::format("rendezvous: send: {}", std::strerror(errno)));
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void recv_all(int fd, void* data, std::size_t n, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    wait_fd(fd, POLLIN, deadline, "waiting for a peer's bytes");
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (r == 0) throw ProbeError("rendezvous: a peer closed the connection");
    if (r < 0) throw ProbeError(fmt::format("rendezvous: recv: {}", std::strerror(errno)));
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

void send_u32(int fd, std::uint32_t v, Clock::time_point d) { send_all(fd, &v, sizeof v, d); }
std::uint32_t recv_u32(int fd, Clock::time_point d) {
  std::uint32_t v = 0;
  recv_all(fd, &v, sizeof v, d);
  return v;
}

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

class TcpRendezvous : public Bootstrap {
 public:
  TcpRendezvous(std::string addr, int port, int rank, int size, double timeout_s)
      : m_addr(std::move(addr)), m_port(port), m_rank(rank), m_size(size), m_timeout(timeout_s) {
    if (rank == 0 && size > 1) listen_now();
  }
  int rank() const override { return m_rank; }
  int size() const override { return m_size; }

  std::vector<std::string> allgather(const std::string& mine) override {
    if (mine.size() > k_max_blob) throw ProbeError("rendezvous: message too large");
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(m_timeout));
    ++m_round;
    std::vector<std::string> all(static_cast<std::size_t>(m_size));
    all[static_cast<std::size_t>(m_rank)] = mine;
    if (m_size == 1) return all;
    if (m_rank == 0) {
      std::vector<Fd> peers;
      std::vector<bool> seen(static_cast<std::size_t>(m_size), false);
      seen[0] = true;
      while (static_cast<int>(peers.size()) < m_size - 1) {
        wait_fd(
            m_listen.fd, POLLIN, deadline,
            fmt::format("waiting for ranks to connect ({} of {} arrived)", peers.size() + 1, m_size)
                .c_str());
        Fd c(::accept(m_listen.fd, nullptr, nullptr));
        if (c.fd < 0) continue;
        if (recv_u32(c.fd, deadline) != k_magic) continue;  // not a probe: ignore it
        const std::uint32_t round = recv_u32(c.fd, deadline);
        const std::uint32_t r = recv_u32(c.fd, deadline);
        const std::uint32_t len = recv_u32(c.fd, deadline);
        if (round != m_round || r == 0 || r >= static_cast<std::uint32_t>(m_size) || seen[r] ||
            len > k_max_blob)
          throw ProbeError(fmt::format(
              "rendezvous: a peer sent rank {} of round {} (expected a new rank below {} in "
              "round {})",
              r, round, m_size, m_round));
        std::string blob(len, '\0');
        recv_all(c.fd, blob.data(), len, deadline);
        seen[r] = true;
        all[r] = std::move(blob);
        peers.push_back(std::move(c));
      }
      for (Fd& p : peers) {
        send_u32(p.fd, static_cast<std::uint32_t>(m_size), deadline);
        for (const std::string& s : all) {
          send_u32(p.fd, static_cast<std::uint32_t>(s.size()), deadline);
          send_all(p.fd, s.data(), s.size(), deadline);
        }
      }
      return all;
    }
    Fd c = connect_until(deadline);
    send_u32(c.fd, k_magic, deadline);
    send_u32(c.fd, m_round, deadline);
    send_u32(c.fd, static_cast<std::uint32_t>(m_rank), deadline);
    send_u32(c.fd, static_cast<std::uint32_t>(mine.size()), deadline);
    send_all(c.fd, mine.data(), mine.size(), deadline);
    if (recv_u32(c.fd, deadline) != static_cast<std::uint32_t>(m_size))
      throw ProbeError("rendezvous: rank 0 has another world size");
    for (std::string& s : all) {
      const std::uint32_t len = recv_u32(c.fd, deadline);
      if (len > k_max_blob) throw ProbeError("rendezvous: message too large");
      s.assign(len, '\0');
      recv_all(c.fd, s.data(), len, deadline);
    }
    return all;
  }

 private:
  addrinfo* resolve(bool passive) const {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (passive) hints.ai_flags = AI_PASSIVE;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(m_port);
    const int rc = ::getaddrinfo(passive ? nullptr : m_addr.c_str(), port.c_str(), &hints, &res);
    if (rc != 0)
      throw ProbeError(
          fmt::format("rendezvous: cannot resolve {}:{}: {}", m_addr, m_port, ::gai_strerror(rc)));
    return res;
  }

  void listen_now() {
    addrinfo* res = resolve(true);
    std::string why = "no address";
    for (addrinfo* a = res; a; a = a->ai_next) {
      Fd s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (s.fd < 0) continue;
      const int one = 1;
      ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(s.fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(s.fd, 1024) == 0) {
        m_listen = std::move(s);
        break;
      }
      why = std::strerror(errno);
    }
    ::freeaddrinfo(res);
    if (m_listen.fd < 0)
      throw ProbeError(fmt::format("rendezvous: rank 0 cannot listen on port {}: {}", m_port, why));
  }

  Fd connect_until(Clock::time_point deadline) const {
    std::string why;
    while (remaining(deadline) > 0) {
      addrinfo* res = resolve(false);
      for (addrinfo* a = res; a; a = a->ai_next) {
        Fd s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        if (s.fd < 0) continue;
        if (::connect(s.fd, a->ai_addr, a->ai_addrlen) == 0) {
          const int one = 1;
          ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::freeaddrinfo(res);
          return s;
        }
        why = std::strerror(errno);
      }
      ::freeaddrinfo(res);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw ProbeError(fmt::format("rendezvous: rank {} cannot reach rank 0 at {}:{} ({})", m_rank,
                                 m_addr, m_port, why.empty() ? "timed out" : why));
  }

  std::string m_addr;
  int m_port;
  int m_rank, m_size;
  double m_timeout;
  std::uint32_t m_round = 0;
  Fd m_listen;
};

class Single : public Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> allgather(const std::string& mine) override { return {mine}; }
};

int env_int(const char* name, int lo, int hi) {
  const char* v = std::getenv(name);
  char* end = nullptr;
  const long x = v ? std::strtol(v, &end, 10) : 0;
  if (!v || end == v || *end != '\0' || x < lo || x > hi)
    throw ProbeError(fmt::format("environment: {}={} is not an integer from {} to {}", name,
                                 v ? v : "(unset)", lo, hi));
  return static_cast<int>(x);
}

}  // namespace

std::unique_ptr<Bootstrap> tcp_bootstrap(double timeout_s) {
  const int size = env_int("WORLD_SIZE", 1, 1 << 20);
  const int rank = env_int("RANK", 0, size - 1);
  // torchrun's own store holds MASTER_PORT: the probe meets on the next port unless told.
  const int port = std::getenv("TRAINLEDGER_PROBE_PORT")
                       ? env_int("TRAINLEDGER_PROBE_PORT", 1, 65535)
                       : env_int("MASTER_PORT", 1, 65534) + 1;
  return std::make_unique<TcpRendezvous>(std::getenv("MASTER_ADDR"), port, rank, size, timeout_s);
}

std::unique_ptr<Bootstrap> single_bootstrap() { return std::make_unique<Single>(); }

}  // namespace detail

std::vector<std::string> tcp_allgather(const std::string& addr, int port, int rank, int size,
                                       const std::string& mine, double timeout_s) {
  detail::TcpRendezvous r(addr, port, rank, size, timeout_s);
  return r.allgather(mine);
}

namespace {
constexpr const char* k_one_cpu_rank =
    "one process on CPUs has nothing to measure: launch one process per rank, e.g. mpirun -np 4 "
    "trainledger calibrate probe";
}  // namespace

int launcher_rank() {
  for (const char* name :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"}) {
    const char* v = std::getenv(name);
    if (!v || !*v) continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r < (1L << 24)) return static_cast<int>(r);
  }
  return -1;
}

void begin_startup(double seconds) {
  const int rank = launcher_rank();
  detail::watchdog_set_rank(rank < 0 && detect_launcher() == Launcher::none ? 0 : rank);
  detail::install_signals();
  detail::watchdog_arm_startup(seconds, "reading the plan");
}

void startup_step(const std::string& what) { detail::watchdog_startup_step(what); }

void end_startup() noexcept {
  detail::watchdog_end_startup();
  detail::restore_signals();
}

void end_job(Backend* backend) noexcept {
  std::fflush(nullptr);
  if (backend) backend->abort();
  if (!backend || backend->size() > 1) detail::mpi_abort(k_exit_probe_failed);
  if (backend) std::_Exit(k_exit_probe_failed);
}

std::vector<std::string> available_backends() {
  std::vector<std::string> v;
  if (detail::nccl_built()) v.push_back("nccl");
  if (detail::mpi_built()) v.push_back("mpi");
  return v;
}

std::unique_ptr<Backend> make_backend(const std::string& name, Launcher launcher, double timeout_s,
                                      double startup_timeout_s) {
  auto boot = [&]() -> std::unique_ptr<detail::Bootstrap> {
    // Each exchange of the torchrun-style rendezvous is a step of the start-up.
    if (launcher == Launcher::torchrun) return detail::tcp_bootstrap(startup_timeout_s);
    if (launcher == Launcher::mpi) {
      if (auto b = detail::mpi_bootstrap()) return b;
      throw ProbeError(
          "launched by mpirun/srun, but this build has no MPI (install libopenmpi-dev and "
          "rebuild), or launch with torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT");
    }
    return detail::single_bootstrap();
  };
  if (name == "nccl") return detail::make_nccl_backend(boot(), timeout_s);
  if (name == "mpi" || (name == "auto" && !detail::nccl_built())) {
    if (!detail::mpi_built())
      throw ProbeError(
          "this build has neither NCCL nor MPI: build where CUDA with NCCL or OpenMPI "
          "(libopenmpi-dev) is installed");
    if (launcher == Launcher::torchrun)
      throw ProbeError(
          "the MPI backend needs an MPI launcher (mpirun or srun); under torchrun use the NCCL "
          "backend");
    if (launcher == Launcher::none) throw ProbeError(k_one_cpu_rank);
    return detail::make_mpi_backend();
  }
  if (name != "auto") throw ProbeError("unknown backend \"" + name + "\" (auto, nccl or mpi)");
  // auto with NCCL built: NCCL when a GPU answers, else MPI on CPUs.
  try {
    return detail::make_nccl_backend(boot(), timeout_s);
  } catch (const ProbeError& e) {
    if (!detail::mpi_built() || launcher == Launcher::torchrun) throw;
    if (launcher == Launcher::none)
      throw ProbeError(std::string(e.what()) + "; and " + k_one_cpu_rank);
    std::unique_ptr<Backend> b = detail::make_mpi_backend();
    if (b->rank() == 0)
      std::fprintf(stderr, "trainledger: calibrate probe: %s; using MPI on CPUs\n", e.what());
    return b;
  }
}

// ---------------------------------------------------------------------------------------------
// The probe.

namespace {

using detail::watchdog_arm;
using detail::watchdog_disarm;

std::string hostname() {
  if (const char* h = std::getenv("TRAINLEDGER_PROBE_HOSTNAME"); h && *h) return h;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string size_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", b, units[u]);
}

// The message sizes nccl-tests would use (-b min -e max -f factor), rounded to whole floats per
// rank (and per peer for the gathers and all-to-all).
std::vector<double> sizes_for(CollKind kind, int n, const Options& o) {
  const double unit = 4.0 * (kind == CollKind::all_reduce || kind == CollKind::send_recv ? 1 : n);
  std::vector<double> v;
  for (double b = o.min_bytes; b <= o.max_bytes * (1 + 1e-9); b *= o.step_factor) {
    const double r = std::max(unit, std::round(b / unit) * unit);
    if (v.empty() || r > v.back()) v.push_back(r);
  }
  return v;
}

// Fault injection for tests (docs/calibration.md#failures): TRAINLEDGER_PROBE_FAULT=kind:rank
// with kind kill (SIGKILL itself), hang (stop answering) or fail (an error on that rank).
void maybe_fault(int rank) {
  const char* f = std::getenv("TRAINLEDGER_PROBE_FAULT");
  if (!f) return;
  const std::string s = f;
  const auto colon = s.find(':');
  if (colon == std::string::npos || std::atoi(s.c_str() + colon + 1) != rank) return;
  const std::string kind = s.substr(0, colon);
  if (kind == "kill") std::raise(SIGKILL);
  if (kind == "hang")
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  if (kind == "fail") throw ProbeError("injected failure (TRAINLEDGER_PROBE_FAULT)");
}

struct Planned {
  std::string source;
  std::unique_ptr<Group> group;
  int nodes = 1;
  std::vector<std::string> hosts;
};

}  // namespace

calibrate::Profile run_probe(Backend& b, const Options& o_in, const std::string& tool,
                             const std::string& created,
                             const std::function<void(const calibrate::Profile&)>& write) {
  Options o = o_in;
  const int rank = b.rank();
  const int n = b.size();
  detail::watchdog_set_backend(&b);
  detail::watchdog_set_rank(rank);
  detail::install_signals();  // again: MPI_Init may have set its own
  if (o.max_bytes <= 0)
    o.max_bytes = b.name() == "nccl" ? 1024.0 * 1024 * 1024 : 64.0 * 1024 * 1024;
  if (n == 1 && b.name() == "mpi") throw ProbeError(k_one_cpu_rank);
  if (o.collectives.empty())
    o.collectives = {CollKind::all_reduce, CollKind::all_gather, CollKind::reduce_scatter,
                     CollKind::all_to_all, CollKind::send_recv};

  // Topology: host names in rank order; the last step of the start-up.
  detail::watchdog_continue(o.startup_timeout_s, "the rendezvous (host and device names)");
  const std::string dev = b.device_name();
  const std::vector<std::string> all = b.allgather(hostname() + "\n" + dev);
  watchdog_disarm();
  std::vector<std::string> host_of, dev_of;
  for (const std::string& s : all) {
    const auto nl = s.find('\n');
    host_of.push_back(s.substr(0, nl));
    dev_of.push_back(nl == std::string::npos ? "" : s.substr(nl + 1));
  }
  for (int r = 0; r < n; ++r)
    if (dev_of[r] != dev_of[0])
      throw ProbeError(fmt::format(
          "rank {} has \"{}\", rank 0 \"{}\": a profile describes one GPU type; probe each "
          "type on its own",
          r, dev_of[r], dev_of[0]));
  std::vector<std::string> hosts;
  std::vector<int> node_of(n), local_of(n), per_node;
  for (int r = 0; r < n; ++r) {
    auto it = std::find(hosts.begin(), hosts.end(), host_of[r]);
    node_of[r] = static_cast<int>(it - hosts.begin());
    if (it == hosts.end()) {
      hosts.push_back(host_of[r]);
      per_node.push_back(0);
    }
    local_of[r] = per_node[node_of[r]]++;
  }
  const int nodes = static_cast<int>(hosts.size());
  const int rpn = *std::max_element(per_node.begin(), per_node.end());
  const bool even = std::all_of(per_node.begin(), per_node.end(), [&](int c) { return c == rpn; });
  std::vector<std::string> notes;
  if (!even)
    notes.push_back(
        fmt::format("uneven ranks per node ({}): the inter-node fit assumes {} per node",
                    fmt::join(per_node, ", "), rpn));

  // The communicators: one GPU per node and one node (every node's and every local rank's
  // group sweeps at once, as a training job's would), then the world.
  std::vector<Planned> groups;
  if (nodes > 1 && rpn > 1) {
    std::vector<std::string> h1 = hosts;
    std::vector<std::string> h0 = {hosts[0]};
    groups.push_back(
        Planned{"probe:one-gpu-per-node", b.split(local_of[rank], node_of[rank]), nodes, h1});
    groups.push_back(Planned{"probe:intra-node", b.split(node_of[rank], local_of[rank]), 1, h0});
  }
  if (n > 1)
    groups.push_back(Planned{"probe:world", b.world(), nodes, hosts});
  else
    notes.push_back("one rank: no collective to measure; launch one process per GPU");

  const bool lead = rank == 0;
  std::size_t total = 0, done = 0;
  for (const Planned& g : groups)
    for (CollKind k : o.collectives) total += sizes_for(k, g.group->size(), o).size();
  std::vector<calibrate::Sweep> sweeps;
  maybe_fault(rank);
  for (Planned& g : groups) {
    for (CollKind k : o.collectives) {
      calibrate::Sweep s;
      s.source = g.source;
      s.kind = k;
      s.ranks = g.group->size();
      s.nodes = g.nodes;
      s.gpu_name = dev;
      s.hosts = g.hosts;
      const double factor = bus_factor(k, s.ranks);
      for (double bytes : sizes_for(k, s.ranks, o)) {
        const std::string what = fmt::format("{} of {} on {} ({} ranks)", to_string(k),
                                             size_text(bytes), g.source.substr(6), s.ranks);
        if (lead && o.progress)
          std::fprintf(stderr, "\r\033[Kprobe: %s [%zu/%zu]", what.c_str(), ++done, total);
        watchdog_arm(o.timeout_s, what);
        const double t = g.group->time(k, bytes, o.warmup, o.iters);
        watchdog_disarm();
        if (!(t > 0) || !std::isfinite(t))
          throw ProbeError(fmt::format("{}: the timer gave {} s", what, t));
        s.points.push_back(calibrate::Point{bytes, t, bytes / t * factor});
      }
      sweeps.push_back(std::move(s));
    }
  }
  if (lead && o.progress) std::fprintf(stderr, "\r\033[Kprobe: device probes\n");
  watchdog_arm(std::max(o.timeout_s, 60.0), "the device probes (memory, GEMM, HBM)");
  DeviceReport dr = b.measure_device(o.gemm, o.peak_bf16, o.peak_fp8, o.hbm_bandwidth);
  watchdog_disarm();

  calibrate::Profile p;
  std::string status = "ok";
  if (lead) {
    const std::string method = fmt::format(
        "calibrate probe ({} backend, {} rank{} on {} node{}, {} warm-up and {} timed calls "
        "per size)",
        b.name(), n, n == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", o.warmup, o.iters);
    p = calibrate::build_profile(std::move(sweeps), tool, method, created);
    p.gpu_name = dr.gpu_name.empty() ? dev : dr.gpu_name;
    p.hosts = hosts;
    p.backend = b.name();
    p.launcher = to_string(o.launcher);
    p.versions = dr.versions;
    p.measurements = dr.measurements;
    for (const auto& v : dr.cluster) p.cluster.push_back(v);
    for (const std::string& s : notes) p.notes.push_back(s);
    for (const std::string& s : dr.notes) p.notes.push_back(s);
    if (!o.plan_source.empty()) p.sources.push_back(o.plan_source);
    try {
      if (write) write(p);
    } catch (const std::exception& e) {
      status = e.what();
    }
  }
  // Every rank learns whether rank 0 wrote the profile, and ends with its exit code.
  watchdog_arm(o.timeout_s, "the final rendezvous");
  const std::vector<std::string> end = b.allgather(status);
  watchdog_disarm();
  if (end[0] != "ok")
    throw ProbeError(lead ? end[0] : "rank 0 could not write the profile: " + end[0]);
  return p;
}

}  // namespace trainledger::probe
