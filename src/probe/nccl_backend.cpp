// The NCCL backend: one process per GPU; collectives with NCCL, timed with CUDA events; memory
// after the context, the allocator's granularity and NCCL's buffers; bf16/fp8 GEMM rates with
// cuBLASLt on the plan's shapes; HBM bandwidth (docs/calibration.md#probe).
//
// The CUDA runtime, NCCL and cuBLASLt are loaded when the probe runs (dlopen), with the
// signatures of the headers found at build time: the planner itself starts in milliseconds and
// runs where there is no CUDA.
#include "backends.hpp"

#ifdef TRAINLEDGER_HAVE_NCCL

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <unistd.h>

namespace trainledger::probe::detail {

namespace {

void* open_library(const char* soname, const char* fallback_dir) {
  if (void* h = ::dlopen(soname, RTLD_NOW | RTLD_GLOBAL)) return h;
  const std::string first = ::dlerror() ? ::dlerror() : "";
  const std::string path = std::string(fallback_dir) + "/" + soname;
  if (void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return h;
  throw ProbeError(fmt::format("cannot load {} (nor {}): {}", soname, path,
                               ::dlerror() ? ::dlerror() : first.c_str()));
}

template <typename F>
F symbol(void* lib, const char* name) {
  void* p = ::dlsym(lib, name);
  if (!p) throw ProbeError(fmt::format("the library has no {}", name));
  return reinterpret_cast<F>(p);
}

#define TL_SYM(lib, name) name = symbol<decltype(&::name)>(lib, #name)

// The functions used, typed by the headers.
struct Api {
  decltype(&::cudaGetDeviceCount) cudaGetDeviceCount = nullptr;
  decltype(&::cudaSetDevice) cudaSetDevice = nullptr;
  decltype(&::cudaGetDeviceProperties) cudaGetDeviceProperties = nullptr;
  decltype(&::cudaFree) cudaFree = nullptr;
  // cudaMalloc, cudaMemcpyAsync and cudaEventCreate have C++ overloads: their C signatures, spelled
  // out.
  cudaError_t (*cudaMalloc)(void**, std::size_t) = nullptr;
  decltype(&::cudaMemGetInfo) cudaMemGetInfo = nullptr;
  decltype(&::cudaMemcpy) cudaMemcpy = nullptr;
  cudaError_t (*cudaMemcpyAsync)(void*, const void*, std::size_t, cudaMemcpyKind,
                                 cudaStream_t) = nullptr;
  decltype(&::cudaMemset) cudaMemset = nullptr;
  decltype(&::cudaStreamCreate) cudaStreamCreate = nullptr;
  decltype(&::cudaStreamSynchronize) cudaStreamSynchronize = nullptr;
  cudaError_t (*cudaEventCreate)(cudaEvent_t*) = nullptr;
  decltype(&::cudaEventRecord) cudaEventRecord = nullptr;
  decltype(&::cudaEventSynchronize) cudaEventSynchronize = nullptr;
  decltype(&::cudaEventElapsedTime) cudaEventElapsedTime = nullptr;
  decltype(&::cudaGetErrorString) cudaGetErrorString = nullptr;
  decltype(&::cudaRuntimeGetVersion) cudaRuntimeGetVersion = nullptr;
  decltype(&::cudaDriverGetVersion) cudaDriverGetVersion = nullptr;

  decltype(&::ncclGetVersion) ncclGetVersion = nullptr;
  decltype(&::ncclGetUniqueId) ncclGetUniqueId = nullptr;
  decltype(&::ncclCommInitRank) ncclCommInitRank = nullptr;
  decltype(&::ncclCommSplit) ncclCommSplit = nullptr;
  decltype(&::ncclCommAbort) ncclCommAbort = nullptr;
  decltype(&::ncclCommUserRank) ncclCommUserRank = nullptr;
  decltype(&::ncclCommCount) ncclCommCount = nullptr;
  decltype(&::ncclAllReduce) ncclAllReduce = nullptr;
  decltype(&::ncclAllGather) ncclAllGather = nullptr;
  decltype(&::ncclReduceScatter) ncclReduceScatter = nullptr;
  decltype(&::ncclSend) ncclSend = nullptr;
  decltype(&::ncclRecv) ncclRecv = nullptr;
  decltype(&::ncclGroupStart) ncclGroupStart = nullptr;
  decltype(&::ncclGroupEnd) ncclGroupEnd = nullptr;
  decltype(&::ncclGetErrorString) ncclGetErrorString = nullptr;

  decltype(&::cublasLtCreate) cublasLtCreate = nullptr;
  decltype(&::cublasLtMatmulDescCreate) cublasLtMatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) cublasLtMatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) cublasLtMatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) cublasLtMatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) cublasLtMatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) cublasLtMatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) cublasLtMatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) cublasLtMatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) cublasLtMatmulAlgoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmul) cublasLtMatmul = nullptr;
  bool have_cublas = false;
  std::string cublas_error;

  Api() {
    void* rt = open_library("libcudart.so." TRAINLEDGER_CUDART_MAJOR, TRAINLEDGER_CUDA_LIBDIR);
    TL_SYM(rt, cudaGetDeviceCount);
    TL_SYM(rt, cudaSetDevice);
    TL_SYM(rt, cudaGetDeviceProperties);
    TL_SYM(rt, cudaFree);
    cudaMalloc = symbol<decltype(cudaMalloc)>(rt, "cudaMalloc");
    TL_SYM(rt, cudaMemGetInfo);
    TL_SYM(rt, cudaMemcpy);
    cudaMemcpyAsync = symbol<decltype(cudaMemcpyAsync)>(rt, "cudaMemcpyAsync");
    TL_SYM(rt, cudaMemset);
    TL_SYM(rt, cudaStreamCreate);
    TL_SYM(rt, cudaStreamSynchronize);
    cudaEventCreate = symbol<decltype(cudaEventCreate)>(rt, "cudaEventCreate");
    TL_SYM(rt, cudaEventRecord);
    TL_SYM(rt, cudaEventSynchronize);
    TL_SYM(rt, cudaEventElapsedTime);
    TL_SYM(rt, cudaGetErrorString);
    TL_SYM(rt, cudaRuntimeGetVersion);
    TL_SYM(rt, cudaDriverGetVersion);
    void* nc = open_library("libnccl.so.2", TRAINLEDGER_NCCL_LIBDIR);
    TL_SYM(nc, ncclGetVersion);
    TL_SYM(nc, ncclGetUniqueId);
    TL_SYM(nc, ncclCommInitRank);
    TL_SYM(nc, ncclCommSplit);
    TL_SYM(nc, ncclCommAbort);
    TL_SYM(nc, ncclCommUserRank);
    TL_SYM(nc, ncclCommCount);
    TL_SYM(nc, ncclAllReduce);
    TL_SYM(nc, ncclAllGather);
    TL_SYM(nc, ncclReduceScatter);
    TL_SYM(nc, ncclSend);
    TL_SYM(nc, ncclRecv);
    TL_SYM(nc, ncclGroupStart);
    TL_SYM(nc, ncclGroupEnd);
    TL_SYM(nc, ncclGetErrorString);
    try {
      void* lt = open_library("libcublasLt.so." TRAINLEDGER_CUDART_MAJOR, TRAINLEDGER_CUDA_LIBDIR);
      TL_SYM(lt, cublasLtCreate);
      TL_SYM(lt, cublasLtMatmulDescCreate);
      TL_SYM(lt, cublasLtMatmulDescDestroy);
      TL_SYM(lt, cublasLtMatmulDescSetAttribute);
      TL_SYM(lt, cublasLtMatrixLayoutCreate);
      TL_SYM(lt, cublasLtMatrixLayoutDestroy);
      TL_SYM(lt, cublasLtMatmulPreferenceCreate);
      TL_SYM(lt, cublasLtMatmulPreferenceDestroy);
      TL_SYM(lt, cublasLtMatmulPreferenceSetAttribute);
      TL_SYM(lt, cublasLtMatmulAlgoGetHeuristic);
      TL_SYM(lt, cublasLtMatmul);
      have_cublas = true;
    } catch (const ProbeError& e) {
      cublas_error = e.what();
    }
  }
};

#undef TL_SYM

Api& api() {
  static Api* a = new Api;  // loaded once, never unloaded
  return *a;
}

void cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw ProbeError(fmt::format("{}: {}", what, api().cudaGetErrorString(rc)));
}

void nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess)
    throw ProbeError(fmt::format("{}: {}", what, api().ncclGetErrorString(rc)));
}

std::string local_host() {
  if (const char* h = std::getenv("TRAINLEDGER_PROBE_HOSTNAME"); h && *h) return h;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

// Device buffers the groups share, grown to the largest message.
struct DeviceBuffers {
  void* send = nullptr;
  void* recv = nullptr;
  double bytes = 0;
  void reserve(double b) {
    if (b <= bytes) return;
    if (send) api().cudaFree(send);
    if (recv) api().cudaFree(recv);
    send = recv = nullptr;
    const auto n = static_cast<std::size_t>(b);
    cuda(api().cudaMalloc(&send, n), "cudaMalloc (message buffer)");
    cuda(api().cudaMalloc(&recv, n), "cudaMalloc (message buffer)");
    cuda(api().cudaMemset(send, 0, n), "cudaMemset");
    bytes = b;
  }
};

class NcclGroup : public Group {
 public:
  NcclGroup(ncclComm_t comm, int rank, int size, cudaStream_t stream, DeviceBuffers& buf)
      : m_comm(comm), m_rank(rank), m_size(size), m_stream(stream), m_buf(buf) {
    cuda(api().cudaEventCreate(&m_start), "cudaEventCreate");
    cuda(api().cudaEventCreate(&m_stop), "cudaEventCreate");
    cuda(api().cudaMalloc(&m_scalar, sizeof(double)), "cudaMalloc");
  }
  int size() const override { return m_size; }
  int rank() const override { return m_rank; }
  ncclComm_t comm() const { return m_comm; }

  double time(CollKind kind, double bytes, int warmup, int iters) override {
    m_buf.reserve(bytes);
    for (int i = 0; i < warmup; ++i) once(kind, bytes);
    cuda(api().cudaEventRecord(m_start, m_stream), "cudaEventRecord");
    for (int i = 0; i < iters; ++i) once(kind, bytes);
    cuda(api().cudaEventRecord(m_stop, m_stream), "cudaEventRecord");
    cuda(api().cudaEventSynchronize(m_stop), "cudaEventSynchronize");
    float ms = 0;
    cuda(api().cudaEventElapsedTime(&ms, m_start, m_stop), "cudaEventElapsedTime");
    double mine = ms / 1e3 / std::max(1, iters);
    // The slowest member's time.
    cuda(api().cudaMemcpy(m_scalar, &mine, sizeof mine, cudaMemcpyHostToDevice), "cudaMemcpy");
    nccl(api().ncclAllReduce(m_scalar, m_scalar, 1, ncclDouble, ncclMax, m_comm, m_stream),
         "ncclAllReduce");
    cuda(api().cudaStreamSynchronize(m_stream), "cudaStreamSynchronize");
    cuda(api().cudaMemcpy(&mine, m_scalar, sizeof mine, cudaMemcpyDeviceToHost), "cudaMemcpy");
    return mine;
  }

 private:
  void once(CollKind kind, double bytes) {
    const auto count = static_cast<std::size_t>(bytes / 4);
    const std::size_t per = count / static_cast<std::size_t>(m_size);
    auto* s = static_cast<float*>(m_buf.send);
    auto* r = static_cast<float*>(m_buf.recv);
    const Api& a = api();
    switch (kind) {
      case CollKind::all_reduce:
      case CollKind::tree_all_reduce:
        nccl(a.ncclAllReduce(s, r, count, ncclFloat, ncclSum, m_comm, m_stream), "ncclAllReduce");
        break;
      case CollKind::all_gather:
        nccl(a.ncclAllGather(s, r, per, ncclFloat, m_comm, m_stream), "ncclAllGather");
        break;
      case CollKind::reduce_scatter:
        nccl(a.ncclReduceScatter(s, r, per, ncclFloat, ncclSum, m_comm, m_stream),
             "ncclReduceScatter");
        break;
      case CollKind::all_to_all:
        // As nccl-tests' alltoall_perf: grouped sends and receives to and from every rank.
        nccl(a.ncclGroupStart(), "ncclGroupStart");
        for (int p = 0; p < m_size; ++p) {
          nccl(a.ncclSend(s + per * static_cast<std::size_t>(p), per, ncclFloat, p, m_comm,
                          m_stream),
               "ncclSend");
          nccl(a.ncclRecv(r + per * static_cast<std::size_t>(p), per, ncclFloat, p, m_comm,
                          m_stream),
               "ncclRecv");
        }
        nccl(a.ncclGroupEnd(), "ncclGroupEnd");
        break;
      case CollKind::send_recv: {
        const int next = (m_rank + 1) % m_size;
        const int prev = (m_rank + m_size - 1) % m_size;
        nccl(a.ncclGroupStart(), "ncclGroupStart");
        nccl(a.ncclSend(s, count, ncclFloat, next, m_comm, m_stream), "ncclSend");
        nccl(a.ncclRecv(r, count, ncclFloat, prev, m_comm, m_stream), "ncclRecv");
        nccl(a.ncclGroupEnd(), "ncclGroupEnd");
        break;
      }
    }
  }

  ncclComm_t m_comm;
  int m_rank, m_size;
  cudaStream_t m_stream;
  DeviceBuffers& m_buf;
  cudaEvent_t m_start{}, m_stop{};
  void* m_scalar = nullptr;
};

double free_bytes() {
  std::size_t f = 0, t = 0;
  cuda(api().cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
  return static_cast<double>(f);
}

class NcclBackend : public Backend {
 public:
  NcclBackend(std::unique_ptr<Bootstrap> boot, double timeout_s) : m_boot(std::move(boot)) {
    Api& a = api();
    int count = 0;
    const cudaError_t rc = a.cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
      throw ProbeError(fmt::format("no GPU visible ({})", rc != cudaSuccess
                                                              ? a.cudaGetErrorString(rc)
                                                              : "cudaGetDeviceCount: 0 devices"));
    // The local rank from the host names: rank r uses GPU (local rank mod the GPUs it sees).
    watchdog_arm(timeout_s, "the rendezvous (host names)");
    const std::vector<std::string> hosts = m_boot->allgather(local_host());
    watchdog_disarm();
    int local = 0;
    for (int r = 0; r < m_boot->rank(); ++r)
      local +=
          hosts[static_cast<std::size_t>(r)] == hosts[static_cast<std::size_t>(m_boot->rank())];
    m_device = local % count;
    cuda(a.cudaSetDevice(m_device), "cudaSetDevice");
    cudaDeviceProp prop{};
    cuda(a.cudaGetDeviceProperties(&prop, m_device), "cudaGetDeviceProperties");
    m_name = prop.name;
    m_cc = prop.major * 10 + prop.minor;
    std::size_t f = 0, t = 0;
    cuda(a.cudaFree(nullptr), "cudaFree (the context)");
    cuda(a.cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    m_total = static_cast<double>(t);
    m_after_context = static_cast<double>(f);
    // The allocator's granularity: what one byte takes from the free memory.
    void* one = nullptr;
    cuda(a.cudaMalloc(&one, 1), "cudaMalloc (1 byte)");
    m_granularity = m_after_context - free_bytes();
    a.cudaFree(one);
    cuda(a.cudaStreamCreate(&m_stream), "cudaStreamCreate");
    // The world communicator: rank 0's unique id through the bootstrap.
    ncclUniqueId id{};
    if (m_boot->rank() == 0) nccl(a.ncclGetUniqueId(&id), "ncclGetUniqueId");
    watchdog_arm(timeout_s, "the rendezvous (NCCL unique id)");
    const std::vector<std::string> ids = m_boot->allgather(
        m_boot->rank() == 0 ? std::string(reinterpret_cast<const char*>(&id), sizeof id) : "");
    watchdog_disarm();
    if (ids[0].size() != sizeof id) throw ProbeError("rendezvous: rank 0 sent no NCCL unique id");
    std::memcpy(&id, ids[0].data(), sizeof id);
    const double before = free_bytes();
    watchdog_arm(timeout_s, "ncclCommInitRank (every rank must join)");
    nccl(a.ncclCommInitRank(&m_world, m_boot->size(), id, m_boot->rank()), "ncclCommInitRank");
    watchdog_disarm();
    m_comms.push_back(m_world);
    m_nccl_init = before - free_bytes();
    // First use: NCCL connects its peers and allocates their buffers lazily.
    void* x = nullptr;
    cuda(a.cudaMalloc(&x, 4096), "cudaMalloc");
    const double before_use = free_bytes();
    watchdog_arm(timeout_s, "the first all-reduce");
    nccl(a.ncclAllReduce(x, x, 1024, ncclFloat, ncclSum, m_world, m_stream), "ncclAllReduce");
    cuda(a.cudaStreamSynchronize(m_stream), "cudaStreamSynchronize");
    watchdog_disarm();
    m_nccl_first_use = before_use - free_bytes();
    a.cudaFree(x);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return m_boot->rank(); }
  int size() const override { return m_boot->size(); }
  std::vector<std::string> allgather(const std::string& mine) override {
    return m_boot->allgather(mine);
  }
  std::unique_ptr<Group> split(int color, int key) override {
    ncclComm_t c = nullptr;
    const double before = free_bytes();
    nccl(api().ncclCommSplit(m_world, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &c, nullptr),
         "ncclCommSplit");
    if (!c) return nullptr;
    m_comms.push_back(c);
    int r = 0, n = 0;
    nccl(api().ncclCommUserRank(c, &r), "ncclCommUserRank");
    nccl(api().ncclCommCount(c, &n), "ncclCommCount");
    m_split_init.emplace_back(n, before - free_bytes());
    return std::make_unique<NcclGroup>(c, r, n, m_stream, m_buffers);
  }
  std::unique_ptr<Group> world() override {
    return std::make_unique<NcclGroup>(m_world, m_boot->rank(), m_boot->size(), m_stream,
                                       m_buffers);
  }
  std::string device_name() override { return m_name; }

  DeviceReport measure_device(const std::vector<GemmShape>& shapes_in, double peak_bf16,
                              double peak_fp8, double hbm_bandwidth) override {
    DeviceReport r;
    r.gpu_name = m_name;
    Api& a = api();
    int rt = 0, drv = 0, nv = 0;
    a.cudaRuntimeGetVersion(&rt);
    a.cudaDriverGetVersion(&drv);
    a.ncclGetVersion(&nv);
    r.versions.push_back(fmt::format("CUDA runtime {}.{}", rt / 1000, rt % 1000 / 10));
    r.versions.push_back(fmt::format("CUDA driver API {}.{}", drv / 1000, drv % 1000 / 10));
    r.versions.push_back(fmt::format("NCCL {}.{}.{}", nv / 10000, nv % 10000 / 100, nv % 100));
    r.versions.push_back(fmt::format("compute capability {}.{}", m_cc / 10, m_cc % 10));
    const double context = m_total - m_after_context;
    r.measurements.push_back({"gpu_memory_total", m_total, "bytes", "cudaMemGetInfo total"});
    r.measurements.push_back(
        {"cuda_context_bare", context, "bytes",
         "total − free after the CUDA context (lazy loading; other processes on the GPU count "
         "too); a training process also loads cuBLAS, cuDNN, NCCL and its own kernels, so "
         "cluster.cuda_context stays assumed"});
    r.measurements.push_back({"allocator_granularity", m_granularity, "bytes",
                              "free memory taken by a 1-byte cudaMalloc"});
    r.measurements.push_back({"nccl_world_init", m_nccl_init, "bytes",
                              "free memory taken by ncclCommInitRank of the world"});
    r.measurements.push_back(
        {"nccl_world_first_use", m_nccl_first_use, "bytes",
         "free memory taken by the first all-reduce (peer connections and their buffers)"});
    for (std::size_t i = 0; i < m_split_init.size(); ++i)
      r.measurements.push_back(
          {fmt::format("nccl_split_init_{}", i + 1), m_split_init[i].second, "bytes",
           fmt::format("free memory taken by ncclCommSplit of a group of {} ranks",
                       m_split_init[i].first)});
    r.measurements.push_back(
        {"nccl_buffers_after_sweep", m_after_context - free_bytes() - m_buffers.bytes * 2, "bytes",
         "free memory taken after every sweep, less the message buffers: the communicators' "
         "buffers (compare cluster.nccl_buffer × nccl_channels × connections)"});
    // HBM: device-to-device copies read and write each byte once.
    {
      const double b = std::min(1024.0 * 1024 * 1024, free_bytes() / 4);
      void* src = nullptr;
      void* dst = nullptr;
      cuda(a.cudaMalloc(&src, static_cast<std::size_t>(b)), "cudaMalloc");
      cuda(a.cudaMalloc(&dst, static_cast<std::size_t>(b)), "cudaMalloc");
      cudaEvent_t e0{}, e1{};
      cuda(a.cudaEventCreate(&e0), "cudaEventCreate");
      cuda(a.cudaEventCreate(&e1), "cudaEventCreate");
      for (int i = 0; i < 3; ++i)
        a.cudaMemcpyAsync(dst, src, static_cast<std::size_t>(b), cudaMemcpyDeviceToDevice,
                          m_stream);
      a.cudaEventRecord(e0, m_stream);
      const int iters = 20;
      for (int i = 0; i < iters; ++i)
        a.cudaMemcpyAsync(dst, src, static_cast<std::size_t>(b), cudaMemcpyDeviceToDevice,
                          m_stream);
      a.cudaEventRecord(e1, m_stream);
      cuda(a.cudaEventSynchronize(e1), "cudaEventSynchronize");
      float ms = 0;
      a.cudaEventElapsedTime(&ms, e0, e1);
      const double bw = 2 * b * iters / (ms / 1e3);
      r.measurements.push_back(
          {"hbm_copy_bandwidth", bw, "bytes/s",
           fmt::format("device-to-device copy of {:.0f} MiB, read + write{}", b / 1048576,
                       hbm_bandwidth > 0
                           ? fmt::format(", {:.0f} % of the preset's {:.2f} TB/s",
                                         100 * bw / hbm_bandwidth, hbm_bandwidth / 1e12)
                           : "")});
      a.cudaFree(src);
      a.cudaFree(dst);
    }
    if (!a.have_cublas) {
      r.notes.push_back("no GEMM measured: " + a.cublas_error);
      return r;
    }
    std::vector<GemmShape> shapes = shapes_in;
    if (shapes.empty()) shapes.push_back({"8192 × 8192 × 8192", 8192, 8192, 8192, 1});
    const double bf16 = gemm_rate(shapes, false, r.notes);
    if (bf16 > 0) {
      r.measurements.push_back(
          {"gemm_bf16", bf16, "FLOP/s",
           fmt::format("cuBLASLt bf16 GEMMs ({}), FLOP-weighted", describe(shapes))});
      if (peak_bf16 > 0)
        r.cluster.push_back(
            {"matmul_efficiency", fmt::format("{:.3f}", std::min(1.0, bf16 / peak_bf16)),
             fmt::format("bf16 GEMMs at {:.1f} TFLOP/s of the {:.1f} TFLOP/s peak ({})",
                         bf16 / 1e12, peak_bf16 / 1e12, describe(shapes))});
      else
        r.notes.push_back("no GPU preset has this GPU's name: matmul_efficiency not derived");
    }
    if (m_cc >= 89) {
      const double fp8 = gemm_rate(shapes, true, r.notes);
      if (fp8 > 0)
        r.measurements.push_back(
            {"gemm_fp8", fp8, "FLOP/s",
             fmt::format("cuBLASLt fp8 (e4m3) GEMMs ({}){}", describe(shapes),
                         peak_fp8 > 0 ? fmt::format(", {:.0f} % of the {:.1f} TFLOP/s peak",
                                                    100 * fp8 / peak_fp8, peak_fp8 / 1e12)
                                      : "")});
      // The share of its peak an fp8 GEMM reaches over the share a bf16 GEMM reaches.
      if (fp8 > 0 && bf16 > 0 && peak_fp8 > 0 && peak_bf16 > 0)
        r.cluster.push_back(
            {"fp8_matmul_ratio",
             fmt::format("{:.3f}", std::min(1.0, (fp8 / peak_fp8) / (bf16 / peak_bf16))),
             fmt::format("fp8 GEMMs at {:.0f} % of their peak against bf16's {:.0f} % ({})",
                         100 * fp8 / peak_fp8, 100 * bf16 / peak_bf16, describe(shapes))});
    } else {
      r.notes.push_back("fp8 GEMM not measured: compute capability below 8.9");
    }
    return r;
  }

  void abort() noexcept override {
    for (ncclComm_t c : m_comms) api().ncclCommAbort(c);
  }

 private:
  static std::string describe(const std::vector<GemmShape>& s) {
    std::vector<std::string> v;
    for (const GemmShape& g : s) v.push_back(fmt::format("{} {}×{}×{}", g.name, g.m, g.n, g.k));
    return fmt::format("{}", fmt::join(v, ", "));
  }

  // FLOP-weighted rate of the shapes: Σ weight·2mnk / Σ weight·t.
  double gemm_rate(const std::vector<GemmShape>& shapes, bool fp8,
                   std::vector<std::string>& notes) {
    Api& a = api();
    cublasLtHandle_t lt = nullptr;
    if (a.cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
      notes.push_back("cublasLtCreate failed: no GEMM measured");
      return 0;
    }
    const std::size_t workspace_bytes = 32u << 20;
    void* workspace = nullptr;
    cuda(a.cudaMalloc(&workspace, workspace_bytes), "cudaMalloc (cuBLASLt workspace)");
    double flops = 0, seconds = 0;
    std::mt19937 rng(1234);
    for (const GemmShape& g : shapes) {
      const std::size_t in_size = fp8 ? 1 : 2;
      const std::size_t na = static_cast<std::size_t>(g.m * g.k);
      const std::size_t nb = static_cast<std::size_t>(g.k * g.n);
      const std::size_t nc = static_cast<std::size_t>(g.m * g.n);
      void *A = nullptr, *B = nullptr, *C = nullptr;
      if (a.cudaMalloc(&A, na * in_size) != cudaSuccess ||
          a.cudaMalloc(&B, nb * in_size) != cudaSuccess ||
          a.cudaMalloc(&C, nc * 2) != cudaSuccess) {
        notes.push_back(fmt::format("GEMM {} does not fit in memory: skipped", g.name));
        if (A) a.cudaFree(A);
        if (B) a.cudaFree(B);
        continue;
      }
      // Random operands: zeros draw less power and run faster than real data.
      fill_random(A, na * in_size, fp8, rng);
      fill_random(B, nb * in_size, fp8, rng);
      const double t = time_gemm(lt, workspace, workspace_bytes, g, A, B, C, fp8);
      a.cudaFree(A);
      a.cudaFree(B);
      a.cudaFree(C);
      if (t <= 0) {
        notes.push_back(fmt::format("cuBLASLt has no {} algorithm for {} {}×{}×{}",
                                    fp8 ? "fp8" : "bf16", g.name, g.m, g.n, g.k));
        continue;
      }
      flops += g.weight * 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
               static_cast<double>(g.k);
      seconds += g.weight * t;
    }
    a.cudaFree(workspace);
    return seconds > 0 ? flops / seconds : 0;
  }

  void fill_random(void* dst, std::size_t bytes, bool fp8, std::mt19937& rng) {
    std::vector<unsigned char> chunk(std::min<std::size_t>(bytes, 16u << 20));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (std::size_t i = 0; i + 1 < chunk.size(); i += 2) {
      if (fp8) {
        // e4m3 with exponents 6-8 (|x| in 0.125-2): no NaN, no overflow in the products.
        for (std::size_t j = i; j < i + 2; ++j)
          chunk[j] =
              static_cast<unsigned char>((rng() & 0x80) | ((6 + rng() % 3) << 3) | (rng() & 7));
      } else {
        const float f = u(rng);
        std::uint32_t bits = 0;
        std::memcpy(&bits, &f, sizeof bits);
        chunk[i] = static_cast<unsigned char>(bits >> 16);
        chunk[i + 1] = static_cast<unsigned char>(bits >> 24);
      }
    }
    for (std::size_t off = 0; off < bytes; off += chunk.size())
      cuda(api().cudaMemcpy(static_cast<char*>(dst) + off, chunk.data(),
                            std::min(chunk.size(), bytes - off), cudaMemcpyHostToDevice),
           "cudaMemcpy");
  }

  // Seconds per GEMM C[m×n] = A[m×k]·B[k×n] (column-major; fp8 as A transposed, the TN layout
  // Hopper's fp8 kernels need); 0 when cuBLASLt has no algorithm.
  double time_gemm(cublasLtHandle_t lt, void* workspace, std::size_t workspace_bytes,
                   const GemmShape& g, void* A, void* B, void* C, bool fp8) {
    Api& a = api();
    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    double result = 0;
    const auto m = static_cast<std::uint64_t>(g.m), n = static_cast<std::uint64_t>(g.n),
               k = static_cast<std::uint64_t>(g.k);
    if (a.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) ==
        CUBLAS_STATUS_SUCCESS) {
      const cublasOperation_t ta = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasOperation_t tb = CUBLAS_OP_N;
      a.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
      a.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
      const bool ok =
          (fp8 ? a.cublasLtMatrixLayoutCreate(&la, in, k, m, static_cast<std::int64_t>(k))
               : a.cublasLtMatrixLayoutCreate(&la, in, m, k, static_cast<std::int64_t>(m))) ==
              CUBLAS_STATUS_SUCCESS &&
          a.cublasLtMatrixLayoutCreate(&lb, in, k, n, static_cast<std::int64_t>(k)) ==
              CUBLAS_STATUS_SUCCESS &&
          a.cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, static_cast<std::int64_t>(m)) ==
              CUBLAS_STATUS_SUCCESS &&
          a.cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS;
      cublasLtMatmulHeuristicResult_t heur{};
      int found = 0;
      if (ok) {
        a.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace_bytes, sizeof workspace_bytes);
        a.cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &heur, &found);
      }
      if (found > 0) {
        const float alpha = 1.0f, beta = 0.0f;
        auto run = [&] {
          return a.cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, C, lc, &heur.algo,
                                  workspace, workspace_bytes, m_stream);
        };
        bool good = true;
        for (int i = 0; i < 3 && good; ++i) good = run() == CUBLAS_STATUS_SUCCESS;
        cudaEvent_t e0{}, e1{};
        if (good && a.cudaEventCreate(&e0) == cudaSuccess &&
            a.cudaEventCreate(&e1) == cudaSuccess) {
          const int iters = 10;
          a.cudaEventRecord(e0, m_stream);
          for (int i = 0; i < iters; ++i) run();
          a.cudaEventRecord(e1, m_stream);
          cuda(a.cudaEventSynchronize(e1), "cudaEventSynchronize");
          float ms = 0;
          a.cudaEventElapsedTime(&ms, e0, e1);
          result = ms / 1e3 / iters;
        }
      }
    }
    if (pref) a.cublasLtMatmulPreferenceDestroy(pref);
    if (lc) a.cublasLtMatrixLayoutDestroy(lc);
    if (lb) a.cublasLtMatrixLayoutDestroy(lb);
    if (la) a.cublasLtMatrixLayoutDestroy(la);
    if (desc) a.cublasLtMatmulDescDestroy(desc);
    return result;
  }

  std::unique_ptr<Bootstrap> m_boot;
  int m_device = 0;
  int m_cc = 0;
  std::string m_name;
  double m_total = 0, m_after_context = 0, m_granularity = 0;
  double m_nccl_init = 0, m_nccl_first_use = 0;
  std::vector<std::pair<int, double>> m_split_init;  // group size, bytes
  cudaStream_t m_stream = nullptr;
  ncclComm_t m_world = nullptr;
  std::vector<ncclComm_t> m_comms;
  DeviceBuffers m_buffers;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(std::unique_ptr<Bootstrap> boot, double timeout_s) {
  return std::make_unique<NcclBackend>(std::move(boot), timeout_s);
}
bool nccl_built() { return true; }

}  // namespace trainledger::probe::detail

#else

namespace trainledger::probe::detail {
std::unique_ptr<Backend> make_nccl_backend(std::unique_ptr<Bootstrap>, double) {
  throw ProbeError(
      "this build has no NCCL backend: build where CUDA with NCCL is installed "
      "(/usr/local/cuda, or CUDAToolkit_ROOT)");
}
bool nccl_built() { return false; }
}  // namespace trainledger::probe::detail

#endif
