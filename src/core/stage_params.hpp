// Parameters held by one GPU of one pipeline stage, before ZeRO sharding.
#pragma once

#include "trainledger/plan_input.hpp"

namespace trainledger {

struct StageParams {
  double dense = 0;      // every parameter of the stage except experts, local to the TP rank
  double expert = 0;     // expert weights local to the TP × EP rank
  double matrix = 0;     // GEMM weights of the transformer layers (dense + expert)
  double adapters = 0;   // LoRA adapters (lora / qlora)
  double adafactor = 0;  // Adafactor's factored second-moment elements (rows + cols per matrix)
  double total() const { return dense + expert; }
};

// `first_layer` and `layers` place the stage in the model; first/last say whether it holds
// the embedding and the LM head.
StageParams stage_params(const PlanInput& in, int layers, bool first, bool last);

// Number of LoRA adapter parameters of the whole model (all ranks), for the derived section.
double lora_adapter_params(const PlanInput& in);

}  // namespace trainledger
