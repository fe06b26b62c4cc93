// `calibrate replica`: one self-contained PyTorch script that runs the plan's model at full
// width and reduced depth on one GPU and writes what `calibrate compare --replica` reads
// (docs/calibration.md#replica). The script is fixed text; the plan enters it as one JSON
// object (PLAN), so nothing of the plan file is pasted into code.
#include <fmt/format.h>
#include <algorithm>
#include <nlohmann/json.hpp>

#include "trainledger/report.hpp"

namespace trainledger::report {

namespace {

constexpr const char* k_script = R"PY(#!/usr/bin/env python3
# A replica of a trainledger plan (trainledger calibrate replica): the plan's model at full
# width and reduced depth, random weights, its dtype policy, attention, recompute, loss,
# optimizer and micro-batch, run for a few steps on one device. It writes what
# `trainledger calibrate compare PLAN --replica RESULT` reads (format trainledger.replica/1):
# peak allocated and reserved memory per phase, torch.cuda.memory_stats(), the device's used
# memory, step and per-phase times, per layer count.
# Usage: python3 replica.py [--layers 2,3] [--steps 3] [--warmup 1] [--tiny] [--out FILE]
# Needs only torch. Nothing is downloaded.
import argparse
import json
import math
import os
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

PLAN = json.loads(r"""@PLAN@""")


def shrink(p):
    """A tiny configuration with the same structure (the CPU test of the script)."""
    p = dict(p)
    heads = max(2, min(4, p["heads"]))
    kv = max(1, min(heads, p["kv_heads"] * heads // max(1, p["heads"])))
    while heads % kv:
        kv -= 1
    p.update(hidden=64, heads=heads, kv_heads=kv, head_dim=16, ffn=128, vocab=256,
             seq_len=min(64, p["seq_len"]), micro_batch=min(2, p["micro_batch"]))
    if p["experts"]:
        p.update(experts=min(4, p["experts"]), experts_per_token=min(2, p["experts_per_token"]),
                 expert_ffn=32)
    if p["kv_lora_rank"]:
        p.update(q_lora_rank=32 if p["q_lora_rank"] else 0, kv_lora_rank=32,
                 qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16)
    if p["sliding_window"]:
        p["sliding_window"] = min(p["sliding_window"], 16)
    if p["position_embeddings"]:
        p["position_embeddings"] = max(p["seq_len"], 64)
    return p


class Norm(nn.Module):
    def __init__(self, kind, width, eager):
        super().__init__()
        self.kind, self.eager = kind, eager
        self.weight = nn.Parameter(torch.ones(width))
        self.bias = nn.Parameter(torch.zeros(width)) if kind == "layernorm" else None

    def forward(self, x):
        if self.kind == "layernorm":
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias)
        if self.eager:  # Hugging Face's LlamaRMSNorm: fp32 inside
            dtype = x.dtype
            x = x.float()
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.weight * x.to(dtype)
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def rope(x, pos):
    d = x.shape[-1]
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d))
    f = torch.outer(pos.float(), inv)
    cos, sin = f.cos().to(x.dtype), f.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def attend(q, k, v, p, window):
    # q: (b, h, s, d); k, v: (b, kv, s, d) repeated to h.
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    s = q.shape[2]
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if p["attention"] == "flash" and sdpa is not None and not window:
        return sdpa(q, k, v, is_causal=True)
    i = torch.arange(s, device=q.device)
    mask = i[None, :] > i[:, None]
    if window:
        mask = mask | (i[:, None] - i[None, :] >= window)
    if p["attention"] == "flash" and sdpa is not None:
        return sdpa(q, k, v, attn_mask=~mask)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


class Attention(nn.Module):
    def __init__(self, p, index):
        super().__init__()
        self.p = p
        # Sliding-window layers: all but every global_every-th (Gemma, Mistral: all).
        local = p["sliding_window"] and (not p["global_every"] or (index + 1) % p["global_every"])
        self.window = p["sliding_window"] if local else 0
        h, d = p["hidden"], p["head_dim"]
        bias = p["bias"] in ("qkv", "all")
        self.mla = p["kv_lora_rank"] > 0
        if self.mla:
            qd = p["qk_nope_head_dim"] + p["qk_rope_head_dim"]
            if p["q_lora_rank"]:
                self.q_a = nn.Linear(h, p["q_lora_rank"], bias=False)
                self.q_norm = Norm("rmsnorm", p["q_lora_rank"], p["eager_norm"])
                self.q_b = nn.Linear(p["q_lora_rank"], p["heads"] * qd, bias=False)
            else:
                self.q = nn.Linear(h, p["heads"] * qd, bias=False)
            self.kv_a = nn.Linear(h, p["kv_lora_rank"] + p["qk_rope_head_dim"], bias=False)
            self.kv_norm = Norm("rmsnorm", p["kv_lora_rank"], p["eager_norm"])
            self.kv_b = nn.Linear(p["kv_lora_rank"],
                                  p["heads"] * (p["qk_nope_head_dim"] + p["v_head_dim"]), bias=False)
            self.o = nn.Linear(p["heads"] * p["v_head_dim"], h, bias=False)
        else:
            self.q = nn.Linear(h, p["heads"] * d, bias=bias)
            self.k = nn.Linear(h, p["kv_heads"] * d, bias=bias)
            self.v = nn.Linear(h, p["kv_heads"] * d, bias=bias)
            self.o = nn.Linear(p["heads"] * d, h, bias=p["bias"] == "all")

    def core(self, x):
        p = self.p
        b, s, _ = x.shape
        pos = torch.arange(s, device=x.device)
        if self.mla:
            nope, rd, vd = p["qk_nope_head_dim"], p["qk_rope_head_dim"], p["v_head_dim"]
            q = self.q_b(self.q_norm(self.q_a(x))) if p["q_lora_rank"] else self.q(x)
            q = q.view(b, s, p["heads"], nope + rd).transpose(1, 2)
            kv = self.kv_a(x)
            latent, k_rope = kv[..., : p["kv_lora_rank"]], kv[..., p["kv_lora_rank"]:]
            kv = self.kv_b(self.kv_norm(latent)).view(b, s, p["heads"], nope + vd).transpose(1, 2)
            k_nope, v = kv[..., :nope], kv[..., nope:]
            k_rope = rope(k_rope.view(b, 1, s, rd), pos).expand(b, p["heads"], s, rd)
            q = torch.cat((q[..., :nope], rope(q[..., nope:], pos)), dim=-1)
            k = torch.cat((k_nope, k_rope), dim=-1)
            if vd != nope + rd:  # SDPA wants one head size: pad V, cut the output
                out = attend(q, k, F.pad(v, (0, nope + rd - vd)), p, self.window)[..., :vd]
            else:
                out = attend(q, k, v, p, self.window)
            return out.transpose(1, 2).reshape(b, s, p["heads"] * vd)
        d = p["head_dim"]
        q = self.q(x).view(b, s, p["heads"], d).transpose(1, 2)
        k = self.k(x).view(b, s, p["kv_heads"], d).transpose(1, 2)
        v = self.v(x).view(b, s, p["kv_heads"], d).transpose(1, 2)
        if not p["position_embeddings"]:
            q, k = rope(q, pos), rope(k, pos)
        return attend(q, k, v, p, self.window).transpose(1, 2).reshape(b, s, p["heads"] * d)

    def forward(self, x):
        if self.p["recompute"] == "selective" and self.training:
            return self.o(torch.utils.checkpoint.checkpoint(self.core, x, use_reentrant=False))
        return self.o(self.core(x))


def activation(kind, x):
    if kind in ("swiglu",):
        return F.silu(x)
    if kind in ("geglu", "gelu"):
        return F.gelu(x, approximate="tanh")
    return F.relu(x)


class Mlp(nn.Module):
    def __init__(self, p, width):
        super().__init__()
        h = p["hidden"]
        self.kind = p["ffn_act"]
        self.gated = self.kind in ("swiglu", "geglu")
        bias = p["bias"] in ("mlp", "all")
        self.up = nn.Linear(h, width, bias=bias)
        self.gate = nn.Linear(h, width, bias=bias) if self.gated else None
        self.down = nn.Linear(width, h, bias=bias)

    def forward(self, x):
        if self.gated:
            return self.down(activation(self.kind, self.gate(x)) * self.up(x))
        return self.down(activation(self.kind, self.up(x)))


class Moe(nn.Module):
    # The eager loop over experts of Hugging Face's Mixtral/Qwen-MoE blocks.
    def __init__(self, p):
        super().__init__()
        self.k = p["experts_per_token"]
        self.router = nn.Linear(p["hidden"], p["experts"], bias=False)
        self.experts = nn.ModuleList(Mlp(p, p["expert_ffn"]) for _ in range(p["experts"]))
        self.shared = Mlp(p, p["shared_ffn"]) if p["shared_experts"] else None

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        weights = torch.softmax(self.router(x).float(), dim=-1)
        top, chosen = torch.topk(weights, self.k, dim=-1)
        top = (top / top.sum(-1, keepdim=True)).to(x.dtype)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.where(chosen == e)
            if rows.numel():
                out.index_add_(0, rows, expert(x[rows]) * top[rows, slot, None])
        if self.shared is not None:
            out = out + self.shared(x)
        return out.view(shape)


class Layer(nn.Module):
    def __init__(self, p, moe, index):
        super().__init__()
        self.norm1 = Norm(p["norm"], p["hidden"], p["eager_norm"])
        self.attn = Attention(p, index)
        self.norm2 = Norm(p["norm"], p["hidden"], p["eager_norm"])
        self.mlp = Moe(p) if moe else Mlp(p, p["ffn"])

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, p, layers):
        super().__init__()
        self.p = p
        self.embed = nn.Embedding(p["vocab"], p["hidden"])
        self.pos = nn.Embedding(p["position_embeddings"], p["hidden"]) if p["position_embeddings"] else None
        every = max(1, p["moe_every"])
        moe = [p["experts"] > 0 and i >= p["dense_layers"] and (i + 1) % every == 0 for i in range(layers)]
        self.layers = nn.ModuleList(Layer(p, moe[i], i) for i in range(layers))
        self.norm = Norm(p["norm"], p["hidden"], p["eager_norm"])
        self.head = None if p["tied_embeddings"] else nn.Linear(p["hidden"], p["vocab"], bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        if self.pos is not None:
            x = x + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for layer in self.layers:
            if self.p["recompute"] == "full" and self.training:
                x = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False)
            else:
                x = layer(x)
        x = self.norm(x)
        return x @ (self.embed.weight if self.head is None else self.head.weight).t()


def loss_of(logits, targets, p):
    if p["loss"] == "standard" or p["loss_dtype"] == "fp32":
        logits = logits.float()
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class Meter:
    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def start(self):
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self.t = time.perf_counter()

    def stop(self):
        if self.cuda:
            torch.cuda.synchronize()
        out = {"s": time.perf_counter() - self.t}
        if self.cuda:
            out["allocated"] = torch.cuda.max_memory_allocated()
            out["reserved"] = torch.cuda.max_memory_reserved()
        return out


def run(p, layers, args, device):
    torch.manual_seed(0)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp8": torch.bfloat16}
    compute = dtypes[p["precision"]]
    if device.type == "cuda" and hasattr(device, "__enter__"):
        with device:  # built on the GPU (PyTorch 2.0+): a CPU init of billions of weights is slow
            model = Model(p, layers)
    else:
        model = Model(p, layers)
    if not p["master_weights"]:
        model = model.to(compute)
    model = model.to(device)
    if p["fsdp"] and device.type == "cuda":
        try:  # FSDP2 on one rank: its buffers and dtypes are the real ones
            import torch.distributed as dist
            from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
            if not dist.is_initialized():
                store = os.path.join(tempfile.mkdtemp(prefix="replica-"), "store")
                dist.init_process_group("nccl", init_method="file://" + store, rank=0, world_size=1)
            mp = MixedPrecisionPolicy(param_dtype=compute, reduce_dtype=torch.float32)
            if p["fsdp_split_root"]:  # torchtitan's apply_fsdp: the ends as units of their own
                fully_shard(model.embed, mp_policy=mp)
            for layer in model.layers:
                fully_shard(layer, mp_policy=mp)
            if p["fsdp_split_root"]:
                fully_shard([model.norm, model.head], mp_policy=mp, reshard_after_forward=False)
            fully_shard(model, mp_policy=mp)
        except (ImportError, RuntimeError) as e:
            print(f"replica: FSDP2 unavailable ({e}); running unsharded", file=sys.stderr)
    params = [q for q in model.parameters() if q.requires_grad]
    impl = {"foreach": {"foreach": True}, "for-loop": {"foreach": False}, "fused": {"fused": True}}
    options = dict(impl[p["optimizer_impl"]]) if device.type == "cuda" else {}
    if p["optimizer"].startswith("sgd"):
        opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9 if p["optimizer"] == "sgd-momentum" else 0)
    else:
        try:
            opt = torch.optim.AdamW(params, lr=1e-4, **options)
        except (TypeError, RuntimeError):
            opt = torch.optim.AdamW(params, lr=1e-4)
    autocast = p["master_weights"] and compute != torch.float32
    meter = Meter(device)
    b, s = p["micro_batch"], p["seq_len"]
    steps = []
    for step in range(args.warmup + args.steps):
        tokens = torch.randint(0, p["vocab"], (b, s + 1), device=device)
        record = {}
        meter.start()
        with torch.autocast(device.type, dtype=compute, enabled=autocast):
            logits = model(tokens[:, :-1])
            loss = loss_of(logits, tokens[:, 1:], p)
        del logits
        record["forward"] = meter.stop()
        meter.start()
        loss.backward()
        record["backward"] = meter.stop()
        meter.start()
        opt.step()
        opt.zero_grad(set_to_none=True)
        record["optimizer"] = meter.stop()
        if not math.isfinite(loss.item()):
            raise SystemExit("replica: the loss is not finite")
        if step >= args.warmup:
            steps.append(record)
    out = {"layers": layers, "steps": len(steps),
           "params": sum(q.numel() for q in model.parameters())}
    for phase in ("forward", "backward", "optimizer"):
        out[phase + "_s"] = sorted(r[phase]["s"] for r in steps)[len(steps) // 2]
    out["step_s"] = out["forward_s"] + out["backward_s"] + out["optimizer_s"]
    if device.type == "cuda":
        out["peak_allocated"] = {ph: max(r[ph]["allocated"] for r in steps) for ph in ("forward", "backward", "optimizer")}
        out["peak_reserved"] = {ph: max(r[ph]["reserved"] for r in steps) for ph in ("forward", "backward", "optimizer")}
        free, total = torch.cuda.mem_get_info()
        out["device_used"] = total - free
        out["memory_stats"] = {k: v for k, v in torch.cuda.memory_stats().items() if isinstance(v, int)}
    del model, opt
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", default=",".join(str(n) for n in PLAN["replica_layers"]),
                    help="layer counts to run, comma-separated (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=3, help="timed steps per layer count")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps first")
    ap.add_argument("--tiny", action="store_true", help="a tiny model of the same structure (tests)")
    ap.add_argument("--device", default="auto", help="cuda, cpu or auto")
    ap.add_argument("--out", default="replica.json", help="result file (trainledger.replica/1)")
    args = ap.parse_args()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if args.device == "auto" else args.device))
    p = shrink(PLAN) if args.tiny else PLAN
    runs = [run(p, int(n), args, device) for n in args.layers.split(",")]
    result = {
        "format": "trainledger.replica/1",
        "plan": PLAN["name"],
        "tiny": args.tiny,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "micro_batch": p["micro_batch"], "seq_len": p["seq_len"],
        "runs": runs,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    if "torch.distributed" in sys.modules and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    print(f"replica: {len(runs)} runs on {result['device']} -> {args.out}")


if __name__ == "__main__":
    main()
)PY";

}  // namespace

std::vector<int> replica_layers(const PlanInput& in) {
  // The fewest layers that separate the fixed part from the per-layer part: two depths one
  // layer apart; for a MoE model past its dense first layers and one MoE period apart, so
  // that the added layers hold a MoE one as the model does.
  const ModelSpec& m = in.model;
  if (!is_moe(m)) return {2, 3};
  const int start = std::min(m.dense_layers, m.layers);
  const int every = std::max(1, m.moe_every);
  return {start + 2 * every, start + 3 * every};
}

std::string replica_script(const PlanInput& in, const std::vector<int>& layers) {
  const ModelSpec& m = in.model;
  const TrainingSpec& t = in.training;
  nlohmann::ordered_json p;
  p["name"] = m.name;
  p["layers"] = m.layers;
  p["hidden"] = m.hidden;
  p["heads"] = m.heads;
  p["kv_heads"] = m.kv_heads;
  p["head_dim"] = head_dim(m);
  p["ffn"] = m.ffn;
  p["ffn_act"] = std::string(to_string(m.ffn_act));
  p["norm"] = std::string(to_string(m.norm));
  p["vocab"] = m.vocab;
  p["tied_embeddings"] = m.tied_embeddings;
  p["bias"] = std::string(to_string(m.bias));
  p["position_embeddings"] = m.position_embeddings;
  const bool moe = is_moe(m);
  p["experts"] = moe ? m.experts : 0;
  p["experts_per_token"] = moe ? m.experts_per_token : 0;
  p["expert_ffn"] = moe ? m.expert_ffn : 0;
  p["shared_experts"] = moe ? m.shared_experts : 0;
  p["shared_ffn"] = moe && m.shared_experts > 0 ? shared_ffn(m) * m.shared_experts : 0;
  p["dense_layers"] = moe ? m.dense_layers : 0;
  p["moe_every"] = moe ? m.moe_every : 1;
  p["q_lora_rank"] = m.q_lora_rank;
  p["kv_lora_rank"] = m.kv_lora_rank;
  p["qk_nope_head_dim"] = m.qk_nope_head_dim;
  p["qk_rope_head_dim"] = m.qk_rope_head_dim;
  p["v_head_dim"] = m.v_head_dim;
  p["sliding_window"] = m.sliding_window;
  p["global_every"] = m.global_every;
  p["seq_len"] = t.seq_len;
  p["micro_batch"] = t.micro_batch;
  p["precision"] = std::string(to_string(t.precision));
  p["master_weights"] = t.master_weights;
  p["attention"] = std::string(to_string(t.attention));
  p["recompute"] = std::string(to_string(t.recompute));
  p["loss"] = std::string(to_string(t.loss));
  p["loss_dtype"] = std::string(to_string(t.loss_dtype));
  p["optimizer"] = std::string(to_string(t.optimizer));
  p["optimizer_impl"] = std::string(to_string(t.optimizer_impl));
  p["eager_norm"] = t.eager_norm;
  p["fsdp"] = in.parallel.zero >= 3;
  p["fsdp_split_root"] = fsdp_splits_ends(in);  // as the ledger counts the gathered ends
  p["replica_layers"] = layers;
  // dump() escapes every control character and non-ASCII byte: the JSON sits in a raw Python
  // string, which only a triple quote could end, and JSON never holds three quotes unescaped.
  std::string json = p.dump(-1, ' ', true);
  std::string script = k_script;
  const std::string marker = "@PLAN@";
  script.replace(script.find(marker), marker.size(), json);
  return script;
}

}  // namespace trainledger::report
