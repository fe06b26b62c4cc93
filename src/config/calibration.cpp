// Fits of nccl-tests sweeps → a calibration profile (docs/calibration.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "calibration_detail.hpp"
#include "trainledger/text.hpp"

namespace trainledger::calibrate {

using namespace detail;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : (v[(n - 1) / 2] + v[n / 2]) / 2;
}

// A TOML basic string that reads back whatever the text (a GPU name, host or file name from a
// log): valid UTF-8, quotes, backslashes and every control character (DEL too) escaped.
std::string toml_string(const std::string& s) { return "\"" + text::toml_string(s) + "\""; }

// A number the profile records must be finite: a profile that says "inf GB/s" does not read back.
void require_finite(const std::string& source, const char* what, double v) {
  if (!std::isfinite(v))
    fail(source, 0,
         fmt::format("the fit's {} is not a finite number: the log's sizes and times do not "
                     "make a sweep",
                     what));
}

// Four significant digits in GB/s, MB/s or kB/s (a slow link must not round to zero).
std::string gbps(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
  if (bytes_per_s >= 1e6) return fmt::format("{:.2f} MB/s", bytes_per_s / 1e6);
  return fmt::format("{:.2f} kB/s", std::max(bytes_per_s, 10.0) / 1e3);
}
std::string micros(double s) { return fmt::format("{:.2f} us", s * 1e6); }

}  // namespace

const std::vector<std::string>& measurable_keys() {
  static const std::vector<std::string> keys = {"intra_node_bandwidth",
                                                "intra_node_gather_bandwidth",
                                                "intra_node_latency",
                                                "inter_node_bandwidth",
                                                "inter_node_latency",
                                                "intra_node_simple_latency",
                                                "inter_node_simple_latency",
                                                "intra_node_ll_share",
                                                "inter_node_ll_share",
                                                "matmul_efficiency",
                                                "attention_efficiency",
                                                "memory_efficiency",
                                                "cuda_context",
                                                "fragmentation",
                                                "fp8_matmul_ratio",
                                                "activation_factor"};
  return keys;
}

Fit fit_sweep(const Sweep& s) {
  Fit f;
  f.source = s.source;
  f.kind = s.kind;
  f.ranks = s.ranks;
  f.nodes = s.nodes;
  f.points = static_cast<int>(s.points.size());
  const double factor = bus_factor(s.kind, s.ranks);
  // B: the median busbw of the largest messages.
  const double largest = s.points.back().bytes;
  std::vector<double> big;
  for (const Point& p : s.points)
    if (p.bytes >= largest / 4) big.push_back(p.busbw);
  f.busbw = median(big);
  f.largest_busbw = s.points.back().busbw;
  // α: the small messages' median time, or the line through the two smallest at zero bytes.
  std::vector<double> small;
  for (const Point& p : s.points)
    if (p.bytes <= 65536) small.push_back(p.seconds);
  if (!small.empty()) {
    f.alpha_s = median(small);
  } else if (s.points.size() >= 2 && s.points[0].bytes <= 4 << 20 &&
             s.points[1].bytes > s.points[0].bytes) {
    const Point& a = s.points[0];
    const Point& b = s.points[1];
    const double slope = (b.seconds - a.seconds) / (b.bytes - a.bytes);
    f.alpha_s = std::max(0.0, a.seconds - slope * a.bytes);
    f.alpha_extrapolated = true;
  } else {
    f.alpha_measured = false;  // the smallest message is too large to tell a latency
  }
  // The planner's time of one call (src/core/collectives.hpp, calls_time): α + volume/B, or with
  // a Simple-protocol latency α_S above α the faster of the low-latency protocol (α, a share η
  // of the busbw: NCCL's LL has 0.5, tuning.cc) and Simple (α_S, the full busbw).
  const auto model = [&](double bytes, double simple, double share) {
    const double v = f.busbw > 0 ? bytes * factor / f.busbw : 0;
    return simple > f.alpha_s ? std::min(f.alpha_s + v / share, simple + v) : f.alpha_s + v;
  };
  // α_S and η: of the values the messages from 1 MiB up imply (α_S = t − volume/B on Simple,
  // η = (volume/B) / (t − α) on LL), the pair whose model has the least worst relative error
  // over them: how NCCL's busbw ramps up with the message size.
  constexpr double k_ramp_from = 1 << 20;
  const auto worst_from = [&](double simple, double share) {
    double worst = 0;
    for (const Point& p : s.points)
      if (p.bytes >= k_ramp_from)
        worst = std::max(worst, std::fabs(model(p.bytes, simple, share) - p.seconds) / p.seconds);
    return worst;
  };
  if (f.alpha_measured && f.busbw > 0) {
    std::vector<double> simples, shares = {k_ll_bandwidth_share};
    for (const Point& p : s.points) {
      if (p.bytes < k_ramp_from) continue;
      const double v = p.bytes * factor / f.busbw;
      if (p.seconds - v > f.alpha_s) simples.push_back(p.seconds - v);
      if (p.seconds > f.alpha_s && v / (p.seconds - f.alpha_s) < 1)
        shares.push_back(v / (p.seconds - f.alpha_s));
    }
    double best_error = worst_from(0, k_ll_bandwidth_share);
    for (double simple : simples)
      for (double share : shares) {
        const double e = worst_from(simple, share);
        if (e < best_error - 1e-12) {
          best_error = e;
          f.alpha_simple_s = simple;
          f.ll_share = share;
        }
      }
  }
  for (const Point& p : s.points) {
    const double model_s = model(p.bytes, f.alpha_simple_s, f.ll_share);
    const double e = std::fabs(model_s - p.seconds) / p.seconds;
    if (e > f.worst_error) {
      f.worst_error = e;
      f.worst_error_bytes = p.bytes;
      f.worst_optimistic = model_s < p.seconds;
    }
  }
  return f;
}

Profile build_profile(std::vector<Sweep> sweeps, const std::string& tool, const std::string& method,
                      const std::string& created, double nic_rate) {
  Profile p;
  p.tool = tool;
  p.method = method;
  p.created = created;
  std::set<std::string> hosts;  // a set, not a search of the list: 65,536 hosts per sweep
  for (const Sweep& s : sweeps) {
    if (std::find(p.sources.begin(), p.sources.end(), s.source) == p.sources.end())
      p.sources.push_back(s.source);
    if (!s.gpu_name.empty()) {
      if (p.gpu_name.empty())
        p.gpu_name = s.gpu_name;
      else if (p.gpu_name != s.gpu_name)
        fail(s.source, 0,
             fmt::format("GPUs \"{}\" here, \"{}\" in {}: a profile describes one GPU type",
                         s.gpu_name, p.gpu_name, p.sources.front()));
    }
    for (const std::string& h : s.hosts)
      if (hosts.insert(h).second) p.hosts.push_back(h);
    p.fits.push_back(fit_sweep(s));
    const Fit& f = p.fits.back();
    require_finite(s.source, "latency α", f.alpha_s);
    require_finite(s.source, "bus bandwidth B", f.busbw);
    require_finite(s.source, "largest message's bus bandwidth", f.largest_busbw);
    require_finite(s.source, "worst error", f.worst_error);
  }
  if (p.gpu_name.empty() && !sweeps.empty())
    p.notes.push_back(
        "no log lists its GPUs: plans of any GPU accept this profile (give --gpu-name)");
  // Inside a node: all-reduce sets the all-reduce busbw and the per-step latency; the other
  // collectives the gather busbw (the lowest of them). The largest group of each kind counts.
  const Fit* ar = nullptr;
  const Fit* gather = nullptr;
  const Fit* inter = nullptr;
  for (const Fit& f : p.fits) {
    if (!f.inter_node()) {
      if (f.kind == CollKind::all_reduce) {
        if (!ar || f.ranks > ar->ranks) ar = &f;
      } else if (f.ranks > 1 || f.kind == CollKind::send_recv) {
        if (!gather || f.busbw < gather->busbw) gather = &f;
      }
    } else if (!inter || inter->kind == CollKind::all_reduce) {
      // The last all-reduce across nodes, unless a ring collective (the first) measures the
      // NICs as the planner uses them (rings, sends, all-to-alls): NCCL may run an all-reduce
      // across nodes as a tree, which moves half the bytes through them.
      inter = &f;
    }
  }
  double intra_latency = 0;
  if (ar) {
    p.cluster.push_back(
        {"intra_node_bandwidth", toml_string(gbps(ar->busbw)),
         fmt::format("all-reduce busbw over {} ranks ({})", ar->ranks, ar->source)});
  }
  if (ar && ar->alpha_measured) {
    intra_latency = ar->alpha_s / ring_steps(CollKind::all_reduce, ar->ranks);
    p.cluster.push_back(
        {"intra_node_latency", toml_string(micros(intra_latency)),
         fmt::format("all-reduce α {} / {} ring steps{}", micros(ar->alpha_s),
                     ring_steps(CollKind::all_reduce, ar->ranks),
                     ar->alpha_extrapolated ? " (extrapolated: no message ≤ 64 KiB)" : "")});
  }
  // Simple's latency inside a node, per ring step as α's (only above it: one protocol else).
  double intra_simple = intra_latency;
  if (ar && ar->alpha_measured && ar->alpha_simple_s > ar->alpha_s) {
    intra_simple = ar->alpha_simple_s / ring_steps(CollKind::all_reduce, ar->ranks);
    p.cluster.push_back(
        {"intra_node_simple_latency", toml_string(micros(intra_simple)),
         fmt::format("all-reduce α_S {} / {} ring steps: NCCL's Simple protocol, fitted to the "
                     "messages from 1 MiB up (LL: intra_node_latency at half the busbw)",
                     micros(ar->alpha_simple_s), ring_steps(CollKind::all_reduce, ar->ranks))});
    p.cluster.push_back({"intra_node_ll_share", fmt::format("{:.4f}", ar->ll_share),
                         "the low-latency protocol's share of the busbw, fitted with it"});
  }
  // A fit without small messages measures no latency; the key stays assumed.
  auto no_latency = [&p](const Fit* f, const char* key) {
    if (f && !f->alpha_measured)
      p.notes.push_back(
          fmt::format("{}: its smallest message is over 4 MiB, too large to "
                      "measure a latency; {} stays assumed",
                      f->source, key));
  };
  no_latency(ar, "intra_node_latency");
  if (gather) {
    p.cluster.push_back({"intra_node_gather_bandwidth", toml_string(gbps(gather->busbw)),
                         fmt::format("{} busbw over {} ranks ({})", nccl_name(gather->kind),
                                     gather->ranks, gather->source)});
  }
  no_latency(inter, "inter_node_latency");
  if (inter) {
    const int rpn = (inter->ranks + inter->nodes - 1) / inter->nodes;
    // The planner: a group with r members per node moves r × inter_node_bandwidth across nodes.
    double rate = inter->busbw / rpn;
    std::string rate_why = fmt::format(
        "{} busbw {} over {} ranks on {} nodes / {} ranks per node ({})", nccl_name(inter->kind),
        gbps(inter->busbw), inter->ranks, inter->nodes, rpn, inter->source);
    if (inter->kind == CollKind::all_reduce && nic_rate > 0 && rate > nic_rate) {
      rate_why += fmt::format(
          ", above the {} line rate per GPU (--nic-rate): NCCL ran it as a tree (or NVLS/CollNet), "
          "which a ring's NICs cannot match; rings, sends and all-to-alls get the line rate",
          gbps(nic_rate));
      rate = nic_rate;
    } else if (inter->kind == CollKind::all_reduce) {
      p.notes.push_back(fmt::format(
          "{}: an all-reduce across nodes sets inter_node_bandwidth ({} per GPU); NCCL may have "
          "run it as a tree, whose busbw exceeds what rings, sends and all-to-alls get through "
          "the same NICs: give --nic-rate (the line rate per GPU) to cap it, or import an "
          "all_gather or reduce_scatter sweep across the nodes",
          inter->source, gbps(rate)));
    }
    p.cluster.push_back({"inter_node_bandwidth", toml_string(gbps(rate)), rate_why});
    // α = intra steps × intra latency + inter steps × inter latency (ring over N nodes: the
    // network 2(N − 1) times for all-reduce, N − 1 for the others).
    const double total = ring_steps(inter->kind, inter->ranks);
    const double inter_steps =
        std::min(total, (inter->kind == CollKind::all_reduce ? 2.0 : 1.0) * (inter->nodes - 1));
    const double intra_steps = total - inter_steps;
    double latency = 0;
    std::string why;
    if (ar && ar->alpha_measured && inter->alpha_s > intra_steps * intra_latency) {
      latency = (inter->alpha_s - intra_steps * intra_latency) / inter_steps;
      why = fmt::format(
          "{} α {} less {} intra-node steps at the measured {}, over {} network "
          "steps",
          nccl_name(inter->kind), micros(inter->alpha_s), intra_steps, micros(intra_latency),
          inter_steps);
    } else {
      latency = inter->alpha_s / total;
      why = fmt::format(
          "{} α {} over all {} ring steps (no intra-node all-reduce measured "
          "to split it)",
          nccl_name(inter->kind), micros(inter->alpha_s), total);
    }
    // Simple's latency across nodes: α_S less the intra-node steps at the latency the plan
    // gives them (Simple's inside a node when measured there, else α's per step), over the
    // network steps. The Simple protocol's longer start is put on the network steps alone: a
    // sweep across nodes does not say how much of it NVLink's steps pay.
    if (inter->alpha_measured && inter->alpha_simple_s > inter->alpha_s) {
      const double intra_step = ar && ar->alpha_measured ? intra_simple : latency;
      const double simple = (inter->alpha_simple_s - intra_steps * intra_step) / inter_steps;
      if (simple > latency) {
        p.cluster.push_back(
            {"inter_node_simple_latency", toml_string(micros(simple)),
             fmt::format("{} α_S {} less {} intra-node steps at {}, over {} network steps: "
                         "NCCL's Simple protocol, fitted to the messages from 1 MiB up",
                         nccl_name(inter->kind), micros(inter->alpha_simple_s), intra_steps,
                         micros(intra_step), inter_steps)});
        p.cluster.push_back({"inter_node_ll_share", fmt::format("{:.4f}", inter->ll_share),
                             "the low-latency protocol's share of the busbw, fitted with it"});
      }
    }
    if (inter->alpha_measured) {
      p.cluster.push_back({"inter_node_latency", toml_string(micros(latency)), why});
      // Without an intra-node latency of its own the plan would price the intra-node steps at
      // the GPU preset's and not reproduce α: the same per-step latency holds for them.
      if (!(ar && ar->alpha_measured))
        p.cluster.push_back(
            {"intra_node_latency", toml_string(micros(latency)),
             fmt::format("{} α {} over all {} ring steps, the intra-node steps at the same "
                         "latency (no intra-node all-reduce measured), so that the plan "
                         "reproduces α",
                         nccl_name(inter->kind), micros(inter->alpha_s), total)});
    }
  }
  for (const Fit& f : p.fits)
    if (f.worst_error > 0.25)
      p.notes.push_back(fmt::format(
          "{} ({}): the fitted model is {:.0f} % {} the measured time at {:.0f} B ({})",
          nccl_name(f.kind), f.source, 100 * f.worst_error, f.worst_optimistic ? "under" : "over",
          f.worst_error_bytes,
          f.worst_optimistic
              ? "the link reaches its large-message busbw only on large messages: the planner's "
                "time for messages of this size is optimistic"
              : "α, the median of the small messages, is above this size's time: the planner's "
                "time for messages of this size is pessimistic"));
  p.sweeps = std::move(sweeps);
  return p;
}

std::string render_profile(const Profile& p) {
  std::string out =
      "# trainledger calibration profile: measured values that replace assumed ones in a plan\n"
      "# (trainledger plan PLAN --calibration THIS_FILE; docs/calibration.md).\n";
  out += "[profile]\nformat = 1\n";
  out += "tool = " + toml_string(p.tool) + "\n";
  out += "method = " + toml_string(p.method) + "\n";
  out += "created = " + toml_string(p.created) + "\n";
  if (!p.gpu_name.empty()) out += "gpu_name = " + toml_string(p.gpu_name) + "\n";
  auto list = [](const std::vector<std::string>& v) {
    std::vector<std::string> q;
    for (const std::string& s : v) q.push_back(toml_string(s));
    return "[" + fmt::format("{}", fmt::join(q, ", ")) + "]";
  };
  out += "hosts = " + list(p.hosts) + "\n";
  out += "sources = " + list(p.sources) + "\n";
  out += "notes = " + list(p.notes) + "\n";
  if (!p.backend.empty()) out += "backend = " + toml_string(p.backend) + "\n";
  if (!p.launcher.empty()) out += "launcher = " + toml_string(p.launcher) + "\n";
  if (!p.versions.empty()) out += "versions = " + list(p.versions) + "\n";
  out += "\n# Plan keys (section [cluster]) with measured values.\n[cluster]\n";
  for (const Profile::Value& v : p.cluster)
    out += fmt::format("{} = {}  # {}\n", v.key, v.value, v.why);
  for (const Measurement& m : p.measurements) {
    out += "\n[[measurement]]\n";
    out += "name = " + toml_string(m.name) + "\n";
    out += fmt::format("value = {:.6g}\n", m.value);
    out += "unit = " + toml_string(m.unit) + "\n";
    out += "why = " + toml_string(m.why) + "\n";
  }
  for (const Fit& f : p.fits) {
    out += "\n[[fit]]\n";
    out += "source = " + toml_string(f.source) + "\n";
    out += "collective = " + toml_string(nccl_name(f.kind)) + "\n";
    out += fmt::format("link = \"{}\"\nranks = {}\nnodes = {}\npoints = {}\n",
                       f.inter_node() ? "inter_node" : "intra_node", f.ranks, f.nodes, f.points);
    out += "alpha = " + toml_string(micros(f.alpha_s)) + "\n";
    out += fmt::format("alpha_measured = {}\nalpha_extrapolated = {}\n", f.alpha_measured,
                       f.alpha_extrapolated);
    if (f.alpha_simple_s > 0)
      out += "alpha_simple = " + toml_string(micros(f.alpha_simple_s)) +
             fmt::format("\nll_share = {:.4f}\n", f.ll_share);
    out += "busbw = " + toml_string(gbps(f.busbw)) + "\n";
    out += "largest_busbw = " + toml_string(gbps(f.largest_busbw)) + "\n";
    out += fmt::format("worst_error = {:.4f}\nworst_error_bytes = {:.0f}\n", f.worst_error,
                       f.worst_error_bytes);
  }
  for (const Sweep& s : p.sweeps) {
    out += "\n[[sweep]]\n";
    out += "source = " + toml_string(s.source) + "\n";
    out += "collective = " + toml_string(nccl_name(s.kind)) + "\n";
    out += fmt::format("ranks = {}\nnodes = {}\n", s.ranks, s.nodes);
    std::vector<std::string> bytes, us;
    for (const Point& pt : s.points) {
      bytes.push_back(fmt::format("{:.0f}", pt.bytes));
      us.push_back(fmt::format("{:.6g}", pt.seconds * 1e6));
    }
    out += "bytes = [" + fmt::format("{}", fmt::join(bytes, ", ")) + "]\n";
    out += "time_us = [" + fmt::format("{}", fmt::join(us, ", ")) + "]\n";
  }
  return out;
}

}  // namespace trainledger::calibrate
