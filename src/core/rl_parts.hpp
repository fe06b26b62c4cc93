// What the two halves of the RL phases share (src/core/rl.cpp: memory per phase;
// src/core/rl_time.cpp: the step's time per phase): the engine's and the trainer's numbers
// worked out once.
#pragma once

#include <string_view>

#include "trainledger/items.hpp"
#include "trainledger/plan.hpp"

namespace trainledger::rl_detail {

inline Expr T(std::string_view key, double value, std::string_view label) {
  return Expr::term(Text(key), value, Text(label));
}

// The trainer's state a training GPU keeps between its phases (its worst stage).
struct Trainer {
  double params = 0;     // weights (every 16-bit, quantized or frozen copy)
  double optimizer = 0;  // optimizer state and master weights
  double grads = 0;      // kept between steps (Megatron's buffer) else 0
  double context = 0;
  double nccl = 0;
};

struct Shared {
  const PlanInput& in;
  bool split = false;        // rollout and training on their own GPUs
  bool engine_here = false;  // colocated: the engine sleeps on the training GPUs
  int train_gpus = 0;
  double params = 0, active_params = 0;
  double mean_len = 0;          // mean prompt + mean response
  double peak = 0;              // the engine's 16-bit GEMM rate, at the GEMM efficiency
  double hbm = 0;               // the HBM rate at the memory efficiency
  double engine_weights_b = 0;  // per engine rank
  double kv_tok = 0;            // KV bytes per token per engine rank
  double kv_b = 0;              // the engine's KV cache per rank
  Trainer trainer;
};

// The step's time per phase, the throughput, idle shares and MFU into r.time; `mean_plan` is
// the training plan at the mean lengths (rl_mean_input).
void add_step_time(const Shared& s, const PlanResult& mean_plan, RlResult& r);

}  // namespace trainledger::rl_detail
