// nccl-tests output (text tables, or the JSON of -J) → a Sweep
// (docs/calibration.md#importing-nccl-tests-logs).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "calibration_detail.hpp"
#include "trainledger/text.hpp"
#include "value.hpp"

namespace trainledger::calibrate {

using namespace detail;

namespace {

// The most ranks a log may describe: the devices it lists, nthreads × ngpus per process, the
// ranks a busbw/algbw ratio tells. Every loop and allocation driven by a rank count in the file
// is bounded by it before it starts.
constexpr int k_max_ranks = 65536;
// The most entries of a -J "results" list (sizes of one sweep: 8 B to 8 GiB in steps of 2 are 31).
constexpr std::size_t k_max_results = 65536;

std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A GPU's name as a log prints it, made printable (valid UTF-8, control characters such as
// DEL written as \xNN) and at most 255 characters: the name goes into the profile, which must
// read back, and into the terminal.
std::string gpu_name_of(const std::string& raw) {
  std::string name = text::printable(raw, 255);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  return name;
}

std::vector<std::string> split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  std::string t;
  while (in >> t) out.push_back(t);
  return out;
}

bool is_integer(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;
  std::size_t i = s[0] == '-' ? 1 : 0;
  if (i >= s.size()) return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The end of a run of digits starting at `i` (i itself when there is none).
std::size_t digits_end(const std::string& s, std::size_t i) {
  while (i < s.size() && digit(s[i])) ++i;
  return i;
}

// A line without the launchers' prefixes: "[1,0]<stdout>:" (mpirun --tag-output), "0: " (srun
// -l), "> " (a quoted log).
std::string strip_prefix(std::string line) {
  std::size_t at = 0;
  if (!line.empty() && line[0] == '[') {
    std::size_t i = digits_end(line, 1);
    if (i > 1 && i < line.size() && line[i] == ',') {
      const std::size_t j = digits_end(line, i + 1);
      for (const char* tag : {"]<stdout>:", "]<stderr>:"})
        if (j > i + 1 && line.compare(j, std::char_traits<char>::length(tag), tag) == 0)
          at = j + std::char_traits<char>::length(tag);
    }
  } else {
    std::size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t j = digits_end(line, i);
    if (j > i && j + 1 < line.size() && line[j] == ':' && line[j + 1] == ' ') at = j + 2;
  }
  line.erase(0, at);
  std::size_t lead = 0;
  while (lead < line.size() && (line[lead] == '>' || line[lead] == ' ' || line[lead] == '\t'))
    ++lead;
  line.erase(0, lead);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// The nccl-tests binaries a text names ("all_reduce_perf", "alltoall_perf_mpi", ...).
std::set<std::string> tests_named(const std::string& text) {
  static const char* k_tests[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                  "sendrecv",   "broadcast",  "reduce",         "gather",
                                  "scatter",    "hypercube"};
  std::set<std::string> out;
  for (const char* t : k_tests) {
    const std::string word = std::string(t) + "_perf";
    for (std::size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
      const bool left = at == 0 || !(std::isalnum(static_cast<unsigned char>(text[at - 1])) ||
                                     text[at - 1] == '_');
      if (left) {
        out.insert(t);
        break;
      }
    }
  }
  return out;
}

// "#  Rank  3 Group  0 Pid 123 on host device  3 [0x5d] NVIDIA H100 80GB HBM3": the rank, its
// host and its GPU's name.
struct RankLine {
  int rank = -1;
  std::string host, gpu;
};
std::optional<RankLine> rank_line(const std::string& line) {
  if (line.empty() || line[0] != '#') return std::nullopt;
  const std::vector<std::string> t = split(line.substr(1));
  if (t.size() < 8 || t[0] != "Rank" || !is_integer(t[1])) return std::nullopt;
  RankLine r;
  std::size_t i = 2;
  if (t[i] == "Group") i += 2;
  if (i + 5 >= t.size() || t[i] != "Pid" || t[i + 2] != "on" || t[i + 4] != "device")
    return std::nullopt;
  // A rank beyond the planner's largest test is kept as -2: the caller refuses it, located.
  int rank = 0;
  const auto [end, ec] = std::from_chars(t[1].data(), t[1].data() + t[1].size(), rank);
  r.rank = ec == std::errc() && end == t[1].data() + t[1].size() && rank >= 0 && rank < k_max_ranks
               ? rank
               : -2;
  r.host = t[i + 3];
  const std::size_t bracket = line.find(']', line.find(" device "));
  if (bracket == std::string::npos) return std::nullopt;
  r.gpu = line.substr(bracket + 1);
  while (!r.gpu.empty() && r.gpu[0] == ' ') r.gpu.erase(0, 1);
  return r;
}

}  // namespace

namespace {

struct Row {
  double bytes, us, algbw, busbw;
  int line;
};

// What a log says, before the checks both formats share.
struct Raw {
  std::set<std::string> named;         // the X_perf tests it names
  std::map<int, std::string> host_of;  // rank → host
  std::string gpu_name;
  std::vector<Row> rows;
};

void same_gpu(Raw& raw, const std::string& gpu, const std::string& name, int line) {
  if (raw.gpu_name.empty())
    raw.gpu_name = gpu;
  else if (gpu != raw.gpu_name)
    fail(name, line,
         fmt::format("ranks on different GPUs (\"{}\" and \"{}\"): a profile describes one "
                     "GPU type",
                     raw.gpu_name, gpu));
}

void add_row(Raw& raw, double bytes, double us, double alg, double bus, const std::string& name,
             int line) {
  if (bytes <= 0 || us <= 0) return;  // nccl-tests prints size-0 rows for some tests
  if (bytes > 1e15 || us > 1e12)
    fail(name, line, "a result row out of range (size or time too large)");
  // Below a nanosecond no collective runs; such a time would make the bandwidth infinite.
  if (us < 1e-3) fail(name, line, fmt::format("a result row's time {:g} us is below 1 ns", us));
  if (raw.rows.size() >= 4096) fail(name, line, "more than 4096 result rows");
  raw.rows.push_back(Row{bytes, us, alg, bus, line});
}

// nccl-tests -J: {"args": [argv...], "config": {"nthreads", "ngpus", "devices": [{"rank",
// "hostname", "device_info"}]}, "results": [{"size", "out_of_place": {"time" | "cpu_time",
// "alg_bw", "bus_bw", "nwrong"}, "in_place": {...}}]} (src/util.cu, JSON_FILE_VERSION 1).
Raw read_json(const std::string& text, const std::string& name) {
  Raw raw;
  // Bounded before the parser builds a tree: a real -J file holds a few thousand values.
  config::check_json_structure(text, name, "log", 1000000, "any nccl-tests -J output");
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) fail(name, 0, "not valid JSON (expected the output of nccl-tests -J)");
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    fail(name, 0, "a JSON file without a \"results\" list: not the output of nccl-tests -J");
  if (j.contains("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string())
    raw.named = tests_named(j["args"][0].get<std::string>());
  auto count = [&](const nlohmann::json& o, const char* key) {
    if (!o.contains(key)) return 1;
    if (!o[key].is_number_integer() || o[key].get<long long>() < 1 ||
        o[key].get<long long>() > 1024)
      fail(name, 0, fmt::format("config/{} must be an integer from 1 to 1024", key));
    return static_cast<int>(o[key].get<long long>());
  };
  if (j.contains("config") && j["config"].is_object()) {
    const nlohmann::json& c = j["config"];
    // Each process lists its first GPU; it drives nthreads × ngpus ranks. The total is bounded
    // (checked products) before any rank is stored: 65,536 processes × 1024 × 1024 would be
    // 2^36 map entries.
    const int nthreads = count(c, "nthreads");
    const int ngpus = count(c, "ngpus");
    int per_process = 0;
    if (__builtin_mul_overflow(nthreads, ngpus, &per_process) || per_process > k_max_ranks)
      fail(name, 0,
           fmt::format("config: nthreads {} × ngpus {} ranks per process: at most {} ranks",
                       nthreads, ngpus, k_max_ranks));
    if (c.contains("devices") && c["devices"].is_array()) {
      const nlohmann::json& devices = c["devices"];
      long long total = 0;
      if (devices.size() > static_cast<std::size_t>(k_max_ranks) ||
          __builtin_mul_overflow(static_cast<long long>(devices.size()),
                                 static_cast<long long>(per_process), &total) ||
          total > k_max_ranks)
        fail(name, 0,
             fmt::format("config/devices: {} processes × {} ranks each (nthreads {} × ngpus "
                         "{}): at most {} ranks",
                         devices.size(), per_process, nthreads, ngpus, k_max_ranks));
      std::size_t at = 0;
      for (const nlohmann::json& d : devices) {
        const std::string where = fmt::format("config/devices/{}", at++);
        if (!d.is_object() || !d.contains("rank") || !d["rank"].is_number_integer() ||
            !d.contains("hostname") || !d["hostname"].is_string())
          fail(name, 0, where + ": each needs an integer \"rank\" and a \"hostname\"");
        const long long r = d["rank"].get<long long>();
        long long last = 0;
        if (r < 0 || __builtin_add_overflow(r, static_cast<long long>(per_process), &last) ||
            last > k_max_ranks)
          fail(name, 0,
               fmt::format("{}: rank {} out of range (ranks 0 to {}, {} per process)", where, r,
                           k_max_ranks - 1, per_process));
        const std::string host = text::printable(d["hostname"].get<std::string>(), 255);
        for (int i = 0; i < per_process; ++i) raw.host_of[static_cast<int>(r) + i] = host;
        if (d.contains("device_info") && d["device_info"].is_string())
          same_gpu(raw, gpu_name_of(d["device_info"].get<std::string>()), name, 0);
      }
    }
  }
  if (j["results"].size() > k_max_results)
    fail(name, 0,
         fmt::format("results: {} entries, at most {}", j["results"].size(), k_max_results));
  int i = 0;
  for (const nlohmann::json& r : j["results"]) {
    const std::string at = fmt::format("results/{}", i++);
    if (!r.is_object() || !r.contains("size") || !r["size"].is_number())
      fail(name, 0, at + ": a result without a numeric \"size\"");
    const nlohmann::json* t = nullptr;
    for (const char* place : {"out_of_place", "in_place"})
      if (!t && r.contains(place) && r[place].is_object()) t = &r[place];
    if (!t) fail(name, 0, at + ": neither out_of_place nor in_place has a timing");
    const char* time_key = t->contains("time") ? "time" : "cpu_time";
    for (const char* key : {time_key, "alg_bw", "bus_bw"})
      if (!t->contains(key) || !(*t)[key].is_number())
        fail(name, 0, fmt::format("{}: \"{}\" is not a number", at, key));
    if (t->contains("nwrong") && (*t)["nwrong"].is_number() && (*t)["nwrong"].get<double>() > 0)
      fail(name, 0,
           fmt::format("{}: {} wrong elements: the test failed, its timings do not count", at,
                       (*t)["nwrong"].get<double>()));
    add_row(raw, r["size"].get<double>(), (*t)[time_key].get<double>(),
            (*t)["alg_bw"].get<double>(), (*t)["bus_bw"].get<double>(), name, 0);
  }
  return raw;
}

}  // namespace

Sweep parse_nccl_tests(const std::string& text, const std::string& name, const ImportHints& hints) {
  Sweep s;
  s.source = name;
  const auto first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string::npos && text[first] == '{';
  Raw raw = json ? read_json(text, name) : Raw{};
  // The collective: named in the log (the command, "# Collective test starting: X_perf"), else
  // in the file name, else by the caller.
  const std::set<std::string> named = json ? raw.named : tests_named(text);
  std::optional<CollKind> kind;
  if (!hints.collective.empty()) {
    kind = collective_named(hints.collective);
    if (!kind)
      fail(name, 0,
           fmt::format("unknown collective \"{}\" (all_reduce, all_gather, reduce_scatter, "
                       "alltoall or sendrecv)",
                       hints.collective));
    if (!named.empty() && (named.size() > 1 || collective_named(*named.begin()) != kind))
      fail(name, 0, fmt::format("the log runs {}_perf, not {}", *named.begin(), hints.collective));
  } else if (named.size() > 1) {
    fail(name, 0,
         fmt::format("the log names several tests ({}); import one test per file",
                     fmt::join(named, ", ")));
  } else if (named.size() == 1) {
    kind = collective_named(*named.begin());
    if (!kind)
      fail(name, 0,
           fmt::format("{}_perf is not a collective the planner models (all_reduce, all_gather, "
                       "reduce_scatter, alltoall, sendrecv)",
                       *named.begin()));
  } else {
    const std::string file = name.substr(name.find_last_of('/') + 1);
    for (const Named& c : k_collectives)
      if (file.find(c.name) != std::string::npos) kind = c.kind;
    if (!kind)
      fail(name, 0,
           "the log does not say which collective it measured (no X_perf command in it or in "
           "the file name): give --collective");
  }
  s.kind = *kind;

  // Ranks and hosts from "#  Rank  3 Group  0 Pid 123 on host device  3 [0x5d] NVIDIA ...".
  std::map<int, std::string>& host_of = raw.host_of;
  std::vector<Row>& rows = raw.rows;
  bool header_root = false, saw_header = false;
  std::istringstream in(json ? std::string() : text);
  std::string text_line;
  int line_no = 0;
  while (std::getline(in, text_line)) {
    ++line_no;
    const std::string line = strip_prefix(text_line);
    if (line.empty()) continue;
    if (const auto rl = rank_line(line)) {
      if (rl->rank < 0)
        fail(name, line_no, fmt::format("a rank out of range (ranks 0 to {})", k_max_ranks - 1));
      if (host_of.size() >= static_cast<std::size_t>(k_max_ranks))
        fail(name, line_no, fmt::format("more than {} ranks", k_max_ranks));
      host_of[rl->rank] = text::printable(rl->host, 255);
      same_gpu(raw, gpu_name_of(rl->gpu), name, line_no);
      continue;
    }
    if (line[0] == '#') {
      if (line.find("size") != std::string::npos && line.find("count") != std::string::npos &&
          line.find("time") != std::string::npos) {
        saw_header = true;
        header_root = line.find("root") != std::string::npos;
      }
      continue;
    }
    const std::vector<std::string> t = split(line);
    if (t.size() < 8 || !is_integer(t[0]) || !is_integer(t[1])) continue;
    if (!saw_header) continue;
    // size count type redop [root] time algbw busbw #wrong|error time algbw busbw ...
    const std::size_t at = header_root ? 5 : 4;
    if (t.size() < at + 3) continue;
    const auto bytes = number(t[0]);
    const auto us = number(t[at]);
    const auto alg = number(t[at + 1]);
    const auto bus = number(t[at + 2]);
    if (!bytes || !us || !alg || !bus)
      fail(name, line_no, "a result row whose size, time or bandwidths are not numbers");
    add_row(raw, *bytes, *us, *alg, *bus, name, line_no);
  }
  s.gpu_name = raw.gpu_name;
  if (rows.empty())
    fail(name, 0,
         "no nccl-tests result rows (a table with size, count, type, redop, time, algbw, busbw)");
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.bytes < b.bytes; });

  // Ranks: the device list, else the caller, else the printed busbw/algbw ratio of the largest
  // message (all-reduce: 2(n−1)/n; all-gather, reduce-scatter, all-to-all: (n−1)/n).
  int ranks = static_cast<int>(host_of.size());
  if (ranks > 0 && hints.ranks > 0 && hints.ranks != ranks)
    fail(name, 0, fmt::format("--ranks {} but the log lists {} ranks", hints.ranks, ranks));
  if (ranks == 0 && s.kind != CollKind::send_recv) {
    const Row& big = rows.back();
    if (big.algbw > 0) {
      const double r = big.busbw / big.algbw;
      const double n = s.kind == CollKind::all_reduce ? 2 / (2 - r) : 1 / (1 - r);
      if (std::isfinite(n) && n >= 1.5 && n <= k_max_ranks)
        ranks = static_cast<int>(std::lround(n));
    }
    if (ranks > 0 && hints.ranks > 0 && hints.ranks != ranks)
      fail(name, 0,
           fmt::format("--ranks {} but the log's busbw/algbw ratio says {} ranks", hints.ranks,
                       ranks));
  }
  if (ranks == 0) ranks = hints.ranks;
  if (ranks < 1)
    fail(name, 0, "the log does not list its ranks and its bandwidths do not tell: give --ranks");
  if (ranks < 2) fail(name, 0, "one rank measures no link: import a test of 2 ranks or more");
  s.ranks = ranks;
  // Nodes: the distinct hosts, else the caller.
  // (A set, not a search of the list: 65,536 ranks on as many hosts.)
  std::set<std::string> seen;
  for (const auto& [rank, host] : host_of)
    if (seen.insert(host).second) s.hosts.push_back(host);
  s.nodes = static_cast<int>(s.hosts.size());
  if (s.nodes > 0 && hints.nodes > 0 && hints.nodes != s.nodes)
    fail(name, 0,
         fmt::format("--nodes {} but the log's ranks run on {} hosts", hints.nodes, s.nodes));
  if (s.nodes == 0) s.nodes = hints.nodes;
  if (s.nodes == 0)
    fail(name, 0,
         "the log does not list its ranks' hosts: give --nodes (1 for a single node) so the fit "
         "knows which link it measured");
  if (s.nodes > ranks) fail(name, 0, fmt::format("{} nodes for {} ranks", s.nodes, ranks));
  if (!hints.gpu_name.empty()) {
    const std::string given = gpu_name_of(hints.gpu_name);
    if (!s.gpu_name.empty() && s.gpu_name != given)
      fail(name, 0,
           fmt::format("--gpu-name \"{}\" but the log's GPUs are \"{}\"", given, s.gpu_name));
    s.gpu_name = given;
  }

  // algbw recomputed from size and time; busbw with nccl-tests' factor. A printed busbw far
  // from it means the ranks are not what the log or the caller says.
  const double factor = bus_factor(s.kind, ranks);
  for (const Row& r : rows) {
    Point p;
    p.bytes = r.bytes;
    p.seconds = r.us * 1e-6;
    p.busbw = p.bytes / p.seconds * factor;
    if (r.busbw >= 1.0 && std::fabs(p.busbw / 1e9 - r.busbw) > 0.05 * r.busbw + 0.02)
      fail(name, r.line,
           fmt::format("busbw {} GB/s printed, {:.2f} GB/s from size and time with {} ranks: "
                       "the ranks are not what {} says",
                       r.busbw, p.busbw / 1e9, ranks,
                       host_of.empty() ? "--ranks" : "the device list"));
    s.points.push_back(p);
  }
  return s;
}

}  // namespace trainledger::calibrate
