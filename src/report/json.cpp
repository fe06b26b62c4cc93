// JSON report, schema trainledger.plan/2 (docs/json-schema.md): base units, stable key order.
#include <cmath>

#include <nlohmann/json.hpp>

#include "json_parts.hpp"
#include "rows.hpp"
#include "trainledger/report.hpp"
#include "trainledger/whatif.hpp"

namespace trainledger::report {

namespace {

using json = nlohmann::ordered_json;

// Byte counts are integers; anything beyond 2^53 is printed as a double rather than wrapped.
json number(double v, Unit unit) {
  if (unit == Unit::bytes && std::fabs(v) < 9e15) return static_cast<std::int64_t>(std::llround(v));
  return v;
}

// A change as the plan-file keys it sets: [{key, from, to}], values as the plan file writes them.
json changes_json(const Change& change) {
  json out = json::array();
  for (const Edit& e : change)
    out.push_back({{"key", std::string(key_of(e.knob))},
                   {"from", knob_text(e.knob, e.from)},
                   {"to", knob_text(e.knob, e.to)}});
  return out;
}

json item_json(const LineItem& i) {
  json j;
  j["id"] = i.id;
  j["role"] = std::string(to_string(info(i.item).role));
  j["label"] = i.label;
  j["value"] = number(i.value, i.unit);
  j["unit"] = std::string(to_string(i.unit));
  j["formula"] = i.formula;
  json terms = json::object();
  // Byte terms (labelled "B ...") in whole bytes, like the values; other whole numbers (counts)
  // as integers too.
  for (const Term& t : i.terms) {
    const bool byte_term = t.label == "B" || t.label.rfind("B ", 0) == 0;
    const bool whole = std::fabs(t.value) < 9e15 && t.value == std::floor(t.value);
    if ((byte_term && std::fabs(t.value) < 9e15) || whole) {
      terms[t.key] = static_cast<std::int64_t>(std::llround(t.value));
    } else {
      terms[t.key] = t.value;
    }
  }
  j["terms"] = terms;
  json inputs = json::object();
  for (const Term& t : i.terms)
    if (!t.input.empty())
      inputs[t.key] = {{"key", t.input}, {"source", std::string(to_string(t.source))}};
  if (!inputs.empty()) j["inputs"] = inputs;
  j["source"] = i.source;
  j["kind"] = std::string(to_string(i.kind));
  if (i.time_s) {
    j["time_s"] = *i.time_s;
    j["time_formula"] = i.time_formula;
  }
  if (!i.collectives.empty()) {
    json calls = json::array();
    for (const Collective& c : i.collectives) {
      calls.push_back({{"collective", c.collective},
                       {"algorithm", c.algorithm},
                       {"group_size", c.group_size},
                       {"message_bytes", number(c.message_bytes, Unit::bytes)},
                       {"calls_per_step", c.calls_per_step},
                       {"link", c.link}});
    }
    j["collectives"] = calls;
  }
  return j;
}

json items_json(const std::vector<LineItem>& items) {
  json a = json::array();
  for (const LineItem& i : items) a.push_back(item_json(i));
  return a;
}

json model_json(const ModelSpec& m) {
  json j;
  j["name"] = m.name;
  j["params"] = static_cast<std::int64_t>(std::llround(total_params(m)));
  if (m.count_only) return j;
  j["layers"] = m.layers;
  j["hidden"] = m.hidden;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["head_dim"] = head_dim(m);
  j["ffn"] = m.ffn;
  j["ffn_act"] = std::string(to_string(m.ffn_act));
  j["vocab"] = m.vocab;
  j["tied_embeddings"] = m.tied_embeddings;
  j["norm"] = std::string(to_string(m.norm));
  j["bias"] = std::string(to_string(m.bias));
  j["position_embeddings"] = m.position_embeddings;
  j["embedding_norm"] = m.embedding_norm;
  j["norms_per_layer"] = m.norms_per_layer;
  j["experts"] = m.experts;
  j["experts_per_token"] = m.experts_per_token;
  j["expert_ffn"] = m.expert_ffn;
  j["shared_experts"] = m.shared_experts;
  j["shared_expert_ffn"] = m.shared_expert_ffn;
  j["shared_expert_gate"] = m.shared_expert_gate;
  j["router_bias"] = m.router_bias;
  j["dense_layers"] = m.dense_layers;
  j["moe_every"] = m.moe_every;
  j["mtp_layers"] = m.mtp_layers;
  j["qk_norm"] = std::string(to_string(m.qk_norm));
  j["lm_head_bias"] = m.lm_head_bias;
  j["sliding_window"] = m.sliding_window;
  j["global_every"] = m.global_every;
  j["attention_chunk"] = m.attention_chunk;
  j["q_lora_rank"] = m.q_lora_rank;
  j["kv_lora_rank"] = m.kv_lora_rank;
  j["qk_nope_head_dim"] = m.qk_nope_head_dim;
  j["qk_rope_head_dim"] = m.qk_rope_head_dim;
  j["v_head_dim"] = m.v_head_dim;
  return j;
}

json training_json(const PlanInput& in) {
  const TrainingSpec& t = in.training;
  json j;
  j["framework"] = std::string(to_string(t.framework));
  // Why training.framework = "auto" chose it; null when the plan named the stack.
  j["framework_inferred_from"] =
      t.framework_basis.empty() ? json(nullptr) : json(t.framework_basis);
  // The stack's conventions in effect, each with the key it set ("" when it has none).
  j["conventions"] = json::array();
  for (const Convention& c : conventions(in))
    j["conventions"].push_back({{"effect", c.effect}, {"key", c.key}});
  j["loss_dtype"] = std::string(to_string(t.loss_dtype));
  j["seq_len"] = t.seq_len;
  // Every key that can change the numbers is present; 0 or null where it does not apply.
  j["document_length"] = t.document_length;
  j["micro_batch"] = t.micro_batch;
  j["global_batch"] = t.global_batch;
  j["precision"] = std::string(precision_name(t));
  j["recipe"] = std::string(to_string(t.recipe));  // "none" in 16 and 32 bits
  j["activation_offload_layers"] = t.activation_offload_layers;
  j["master_weights"] = t.master_weights;
  j["grad_dtype"] = std::string(to_string(t.grad_dtype));
  j["reduce_dtype"] = std::string(to_string(t.reduce_dtype));
  j["compile"] = t.compile;
  j["cuda_graphs"] = t.cuda_graphs;
  j["expandable_segments"] = t.expandable_segments;
  j["use_cache"] = t.use_cache;
  j["keep_outputs"] = t.keep_outputs;
  j["op_saves_attention"] = t.op_saves_attention;
  j["optimizer"] = std::string(to_string(t.optimizer));
  j["optimizer_dtype"] = std::string(to_string(t.optimizer_dtype));
  j["optimizer_impl"] = std::string(to_string(t.optimizer_impl));
  j["recompute"] = std::string(to_string(t.recompute));
  j["recompute_layers"] = t.recompute_layers;
  {
    // Selective recompute's modules (read with recompute = "selective" only).
    nlohmann::json mods = nlohmann::json::array();
    const std::pair<RecomputeModule, const char*> names[] = {
        {RecomputeModule::core_attn, "core_attn"},
        {RecomputeModule::layernorm, "layernorm"},
        {RecomputeModule::mlp, "mlp"},
        {RecomputeModule::moe, "moe"},
        {RecomputeModule::moe_act, "moe_act"},
        {RecomputeModule::shared_experts, "shared_experts"}};
    for (const auto& [m, name] : names)
      if (recomputes(t.recompute_modules, m)) mods.push_back(name);
    j["recompute_modules"] = mods;
  }
  j["attention"] = std::string(to_string(t.attention));
  j["dropout"] = t.dropout;
  j["grad_accum"] = t.grad_accum;
  j["moe_capacity_factor"] = t.moe_capacity_factor;
  j["moe_imbalance"] = t.moe_imbalance;
  j["finetune"] = std::string(to_string(t.finetune));
  j["norm_impl"] = t.eager_norm ? "eager" : "fused";
  j["loss"] = std::string(to_string(t.loss));
  j["lora_rank"] = t.lora_rank;
  j["lora_dropout"] = t.lora_dropout;
  json targets = json::array();
  for (LoraTarget x : t.lora_targets) targets.push_back(std::string(to_string(x)));
  j["lora_targets"] = targets;
  j["double_quant"] = t.double_quant;
  j["trainable_params"] = static_cast<std::int64_t>(std::llround(t.trainable_params));
  j["tokens"] = t.tokens;
  j["data_workers"] = t.data_workers;
  j["data_worker_memory"] = number(t.data_worker_memory, Unit::bytes);
  return j;
}

json parallel_json(const ParallelSpec& p) {
  json j;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["dp"] = p.dp;
  j["cp"] = p.cp;
  j["ep"] = p.ep;
  j["etp"] = expert_tp(p);
  j["sequence_parallel"] = p.sequence_parallel;
  j["zero"] = p.zero;
  j["zero_shard_size"] = p.zero_shard_size;
  j["grad_sync"] = std::string(to_string(p.grad_sync));
  j["schedule"] = std::string(to_string(p.schedule));
  j["virtual_stages"] = p.virtual_stages;
  j["stage_layers"] = p.stage_layers;
  j["offload"] = std::string(to_string(p.offload));
  j["bucket_size"] = number(p.bucket_size, Unit::bytes);
  j["allgather_bucket_size"] = p.allgather_bucket;
  j["zero3_max_live_parameters"] = p.zero3_live_params;
  j["zero3_prefetch_bucket_size"] = p.zero3_prefetch;
  j["gradient_as_bucket_view"] = p.gradient_as_bucket_view;
  j["fsdp_root"] = p.fsdp_split_root ? "split" : "model";
  j["fsdp_version"] = p.fsdp_version;
  j["reshard_after_forward"] = p.reshard_after_forward;
  j["keep_stage_outputs"] = p.keep_stage_outputs;
  j["limit_all_gathers"] = p.limit_all_gathers;
  j["fp8_all_gather"] = p.fp8_all_gather;
  j["fp8_param_gather"] = p.fp8_param_gather;
  j["placement"] = p.placement;
  j["overlap_dp"] = p.overlap_dp;
  j["overlap_tp"] = p.overlap_tp;
  j["overlap_cp"] = p.overlap_cp;
  j["overlap_param_gather"] = p.overlap_param_gather;
  j["ep_dispatch"] = std::string(to_string(p.ep_dispatch));
  j["allreduce"] = to_string(p.nccl_algo);
  return j;
}

json cluster_json(const ClusterSpec& c) {
  json j;
  j["gpu_name"] = c.gpu.name;
  j["gpu_memory"] = c.gpu.memory_bytes;
  const PeakFlops& f = c.gpu.peak_flops;
  json flops = json::object();
  for (const auto& [name, v] : f.entries())
    if (v > 0) flops[name] = v;
  j["peak_flops"] = flops;
  if (c.gpu.memory_bandwidth > 0) j["memory_bandwidth"] = c.gpu.memory_bandwidth;
  if (c.gpu.sms > 0) j["gpu_sms"] = c.gpu.sms;
  j["nodes"] = c.nodes;
  j["gpus_per_node"] = c.gpus_per_node;
  j["nvlink_domain"] = c.domain();
  j["leaf_nodes"] = c.leaf_nodes;  // 0: one tier
  j["oversubscription"] = c.oversubscription;
  if (c.intra_node_bandwidth > 0) j["intra_node_bandwidth"] = c.intra_node_bandwidth;
  if (c.intra_node_gather_bandwidth > 0)
    j["intra_node_gather_bandwidth"] = c.intra_node_gather_bandwidth;
  j["intra_node_latency"] = c.intra_node_latency;
  if (c.inter_node_bandwidth > 0) j["inter_node_bandwidth"] = c.inter_node_bandwidth;
  j["inter_node_latency"] = c.inter_node_latency;
  // NCCL's Simple protocol's own latencies (0: the latencies above, one protocol) and the
  // low-latency protocol's share of the busbw (docs/formulas.md#collectives).
  j["intra_node_simple_latency"] = c.intra_node_simple_latency;
  j["inter_node_simple_latency"] = c.inter_node_simple_latency;
  j["intra_node_ll_share"] = c.intra_node_ll_share;
  j["inter_node_ll_share"] = c.inter_node_ll_share;
  j["cuda_context"] = number(c.cuda_context, Unit::bytes);
  j["nccl_channels"] = c.nccl_channels;
  j["nccl_buffer"] = number(c.nccl_buffer, Unit::bytes);
  j["cublas_workspace"] = number(c.cublas_workspace, Unit::bytes);
  j["matmul_efficiency"] = c.matmul_efficiency;
  j["fp8_matmul_ratio"] = c.fp8_matmul_ratio;
  j["activation_factor"] = c.activation_factor;
  if (c.attention_efficiency > 0) j["attention_efficiency"] = c.attention_efficiency;
  j["memory_efficiency"] = c.memory_efficiency;
  j["op_overhead"] = c.op_overhead;
  j["launch_overhead"] = c.launch_overhead;
  j["fragmentation"] = c.fragmentation;
  j["fused_attention_efficiency"] = c.fused_attention_efficiency;
  j["host_memory"] = c.host_memory > 0 ? number(c.host_memory, Unit::bytes) : json(nullptr);
  j["pcie_bandwidth"] = c.pcie_bandwidth;
  j["pageable_bandwidth"] = c.pageable_bandwidth;
  j["host_memory_bandwidth"] = c.host_memory_bandwidth;
  j["host_process_memory"] = number(c.host_process_memory, Unit::bytes);
  return j;
}

json checkpoint_json(const CheckpointSpec& c) {
  json j = {{"storage_bandwidth", c.storage_bandwidth},
            {"restart_time", c.restart_time},
            {"gpu_failure_rate", c.gpu_failure_rate},
            {"node_failure_rate", c.node_failure_rate},
            {"format", std::string(to_string(c.format))}};
  j["interval"] = c.interval > 0 ? json(c.interval) : json(nullptr);
  return j;
}

json rl_json(const RlSpec& r) {
  return {{"algorithm", std::string(to_string(r.algorithm))},
          {"prompts", r.prompts},
          {"samples_per_prompt", r.samples},
          {"prompt_length", r.prompt_length},
          {"response_length", r.response_length},
          {"mean_prompt_length", r.mean_prompt_length},
          {"mean_response_length", r.mean_response_length},
          {"mini_batch_prompts", r.mini_batch_prompts},
          {"epochs", r.epochs},
          {"placement", std::string(to_string(r.placement))},
          {"rollout_gpus", r.rollout_gpus},
          {"off_policy", r.off_policy},
          {"engine", std::string(to_string(r.engine))},
          {"rollout_tp", r.rollout_tp},
          {"memory_fraction", r.memory_fraction},
          {"max_num_seqs", r.max_num_seqs},
          {"max_batched_tokens", r.max_batched_tokens},
          {"kv_dtype", std::string(to_string(r.kv_dtype))},
          {"cuda_graphs", r.cuda_graphs},
          {"sleep", std::string(to_string(r.sleep))},
          {"offload_params", r.offload_params},
          {"offload_optimizer", r.offload_optimizer},
          {"offload_copy", std::string(to_string(r.offload_copy))},
          {"old_log_probs", r.old_log_probs},
          {"reference", r.reference},
          {"reward_model", r.reward_model},
          {"frozen_weights", to_string(r.frozen_weights)},
          {"sync_bucket", r.sync_bucket},
          {"decode_efficiency", r.decode_efficiency},
          {"async_scheduling", r.async_scheduling},
          {"step_overhead", r.step_overhead},
          {"generation_rounds", r.generation_rounds},
          {"log_prob_micro_batch", r.log_prob_micro_batch},
          {"log_prob_entropy", r.log_prob_entropy},
          {"response_logits_only", r.response_logits_only}};
}

// What a user measures on that stage (rows.hpp, Comparable).
json predicted_json(const StageMemory& st) {
  const Comparable c = comparable(st);
  return {{"persistent_state_bytes", number(c.state, Unit::bytes)},
          {"max_memory_allocated_bytes", number(c.allocated, Unit::bytes)},
          {"max_memory_reserved_bytes", number(c.reserved, Unit::bytes)},
          {"nvidia_smi_bytes", number(c.device, Unit::bytes)}};
}

json derived_json(const Derived& d) {
  // Counts are whole numbers (a count-only model's params may be given as 7e9).
  auto count = [](double v) -> json {
    if (std::fabs(v) < 9e15) return static_cast<std::int64_t>(std::llround(v));
    return v;
  };
  return {{"params", count(d.params)},
          {"active_params", count(d.active_params)},
          {"trainable_params", count(d.trainable_params)},
          {"world_size", d.world_size},
          {"shard_group", d.shard_group},
          {"grad_accum", d.grad_accum},
          {"global_batch", d.global_batch},
          {"tokens_per_step", d.tokens_per_step}};
}

// The bands of a step and its throughput on their items (docs/json-schema.md): "band" and
// "band_family" where the plan has one.
void add_bands(json& items, const char* step_id, const Band& step, const char* tput_id,
               const Band& tput) {
  for (auto& item : items) {
    const Band* b = item["id"] == step_id ? &step : item["id"] == tput_id ? &tput : nullptr;
    if (b && b->cases > 0) {
      item["band"] = json{b->low, b->high};
      item["band_family"] = b->family;
    }
  }
}

json plan_json(const PlanResult& plan, const PlanSource& loaded) {
  json j;
  j["schema"] = k_schema;
  j["version"] = version();
  j["plan"] = loaded.name;
  j["inputs"] = {{"model", model_json(plan.input.model)},
                 {"training", training_json(plan.input)},
                 {"parallel", parallel_json(plan.input.parallel)},
                 {"cluster", cluster_json(plan.input.cluster)},
                 {"checkpoint", checkpoint_json(plan.input.checkpoint)}};
  if (plan.input.rl.enabled) j["inputs"]["rl"] = rl_json(plan.input.rl);
  json origins = json::object();
  for (const auto& [key, origin] : loaded.origins) origins[key] = origin;
  j["origins"] = origins;
  j["derived"] = derived_json(plan.derived);
  json stages = json::array();
  for (const StageMemory& st : plan.stages) {
    json phases = json::array();
    for (const PhaseTotal& pt : st.phases)
      phases.push_back(
          {{"phase", std::string(to_string(pt.phase))}, {"bytes", number(pt.bytes, Unit::bytes)}});
    stages.push_back({{"stage", st.stage},
                      {"role", st.role},
                      {"layers", st.layers},
                      {"peak_phase", std::string(to_string(st.peak_phase))},
                      {"items", items_json(st.items)},
                      {"phases", phases},
                      {"peak_bytes", number(st.peak_bytes, Unit::bytes)},
                      {"capacity_bytes", number(st.capacity_bytes, Unit::bytes)},
                      {"fits", st.fits},
                      {"predicted", predicted_json(st)}});
  }
  j["memory"] = {{"stages", stages}, {"worst_stage", plan.worst_stage}};
  json host = {{"items", items_json(plan.host.items)},
               {"peak_bytes", number(plan.host.peak_bytes, Unit::bytes)}};
  if (plan.host.capacity_bytes > 0) {
    host["capacity_bytes"] = number(plan.host.capacity_bytes, Unit::bytes);
    host["fits"] = plan.host.fits;
  } else {
    host["capacity_bytes"] = nullptr;
    host["fits"] = nullptr;
  }
  j["host"] = host;
  j["communication"] = {{"items", items_json(plan.communication)}};
  j["time"] = {{"items", items_json(plan.time)}};
  j["reliability"] = {{"items", items_json(plan.reliability)}};
  // fits: every GPU and every host; gpus_fit and host_fits say which failed.
  j["verdict"] = {
      {"fits", plan_fits(plan.verdict)},
      {"gpus_fit", plan.verdict.fits},
      {"host_fits", plan.verdict.host_fits},
      {"peak_bytes", number(plan.verdict.peak_bytes, Unit::bytes)},
      {"capacity_bytes", number(plan.verdict.limit_bytes, Unit::bytes)},
      {"limit_bytes",
       number(plan.verdict.limit_bytes * (1 - plan.verdict.required_headroom), Unit::bytes)},
      {"headroom", plan.verdict.headroom},
      {"required_headroom", plan.verdict.required_headroom},
      {"fits_with_headroom",
       plan_fits(plan.verdict) && plan.verdict.headroom >= plan.verdict.required_headroom},
      {"worst_stage", plan.verdict.worst_stage},
      {"phase", std::string(to_string(plan.verdict.phase))}};
  // The bands (docs/accuracy.md#bands): null when none was made (--confidence off).
  const Band& pb = plan.verdict.peak_band;
  j["verdict"]["confidence"] = pb.cases > 0 ? json(pb.confidence) : json(nullptr);
  j["verdict"]["peak_band_bytes"] =
      pb.cases > 0 ? json{number(pb.low, Unit::bytes), number(pb.high, Unit::bytes)}
                   : json(nullptr);
  j["verdict"]["band_family"] = pb.cases > 0 ? json(pb.family) : json(nullptr);
  j["verdict"]["band_cases"] = pb.cases;
  j["verdict"]["fits_band"] = plan.verdict.band_fits;
  add_bands(j["time"]["items"], "time.step", plan.step_band, "throughput.tokens_per_s_per_gpu",
            plan.throughput_band);
  if (plan.rl.present) {
    // RL post-training (docs/rl.md, docs/json-schema.md#rl): memory per phase, the step's
    // phases and the engine's KV cache.
    const RlResult& rl = plan.rl;
    json phases = json::array();
    for (const RlPhase& ph : rl.phases)
      phases.push_back({{"name", ph.name},
                        {"pool", ph.pool},
                        {"peak_bytes", number(ph.peak_bytes, Unit::bytes)},
                        {"capacity_bytes", number(ph.capacity_bytes, Unit::bytes)},
                        {"fits", ph.fits},
                        {"items", items_json(ph.items)}});
    json timeline = json::array();
    for (const RlSpan& sp : rl.timeline)
      timeline.push_back({{"item", std::string(info(sp.item).name)},
                          {"lane", sp.lane},
                          {"start_s", sp.start_s},
                          {"end_s", sp.end_s},
                          {"exposed_s", sp.exposed_s},
                          {"next_step", sp.next_step}});
    const RlSpec& s = plan.input.rl;
    j["rl"] = {{"algorithm", std::string(to_string(s.algorithm))},
               {"placement", std::string(to_string(s.placement))},
               {"engine", std::string(to_string(s.engine))},
               {"engines", rl.engines},
               {"rollout_gpus", rl.rollout_gpus},
               {"total_gpus", rl.total_gpus},
               {"samples", rl.samples},
               {"tokens_per_step", rl.tokens_per_step},
               {"kv_bytes_per_token", number(rl.kv_bytes_per_token, Unit::bytes)},
               {"kv_tokens", rl.kv_tokens},
               {"concurrency", rl.concurrency},
               {"kv_fits", rl.kv_fits},
               {"host_bytes_per_node", number(rl.host_bytes, Unit::bytes)},
               {"phases", phases},
               {"worst_phase", rl.phases.empty() ? json(nullptr) : json(rl.phases[rl.worst].name)},
               {"problem", rl.problem.empty() ? json(nullptr) : json(rl.problem)},
               {"time", {{"items", items_json(rl.time)}}},
               {"timeline", timeline}};
    add_bands(j["rl"]["time"]["items"], "rl.time.step", rl.step_band, "rl.tokens_per_s_per_gpu",
              rl.throughput_band);
    j["verdict"]["rl_fits"] = plan.verdict.rl_fits;
    j["verdict"]["rl_phase"] = rl.phases.empty() ? json(nullptr) : json(rl.phases[rl.worst].name);
  }
  json levers = json::array();
  for (const Lever& l : plan.levers) {
    levers.push_back({{"knob", change_text(l.change)},
                      {"changes", changes_json(l.change)},
                      {"tokens_per_s_per_gpu_before", l.throughput_before},
                      {"tokens_per_s_per_gpu_after", l.throughput_after},
                      {"bubble_before", l.bubble_before},
                      {"bubble_after", l.bubble_after},
                      {"peak_bytes", number(l.peak_bytes, Unit::bytes)},
                      {"global_batch_before", l.global_batch_before},
                      {"global_batch_after", l.global_batch_after},
                      {"grad_accum_before", l.grad_accum_before},
                      {"grad_accum_after", l.grad_accum_after},
                      {"fits", l.fits}});
  }
  j["levers"] = levers;
  // What would make a plan fit that does not (docs/json-schema.md): the worst stage's largest
  // items with the change that frees the most, as check's suggestions.
  j["fixes"] = fixes_json(plan.fixes);
  json warnings = json::array();
  for (const std::string& w : loaded.warnings) warnings.push_back(w);
  for (const std::string& w : plan.warnings) warnings.push_back(w);
  j["warnings"] = warnings;
  if (!loaded.calibration.empty())
    j["calibration"] = {{"profile", loaded.calibration},
                        {"measured", loaded.measured},
                        {"measured_from", loaded.measured_from},
                        {"assumed", loaded.assumed}};
  return j;
}

}  // namespace

nlohmann::ordered_json line_item_json(const LineItem& item) { return item_json(item); }

std::string render_json(const PlanResult& plan, const PlanSource& loaded) {
  return plan_json(plan, loaded).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

nlohmann::ordered_json fixes_json(const std::vector<Fix>& fixes) {
  json out = json::array();
  for (const Fix& f : fixes)
    out.push_back({{"id", std::string(info(f.item).name)},
                   {"bytes", number(f.bytes, Unit::bytes)},
                   {"changes", f.change ? changes_json(*f.change) : json::array()},
                   {"knob", f.change ? change_text(*f.change) : ""},
                   {"freed_bytes", number(f.freed_bytes, Unit::bytes)},
                   {"then_fits", f.then_fits}});
  return out;
}

}  // namespace trainledger::report
