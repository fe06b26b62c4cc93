#include "keys.hpp"

#include "trainledger/config.hpp"

#include <algorithm>
#include <cctype>

namespace trainledger::config {

namespace {

using Q = QuantityKind;
using T = KeyType;

// One row per key: section, name, type, default (TOML text; empty: none or derived), meaning,
// then for quantities their kind, for choices the names, for numbers the bounds.
// clang-format off
std::vector<KeySpec> build_table() {
  const std::vector<std::string_view> dtypes_state = {"fp32", "bf16", "fp16"};
  return {
    // [model]
    {"model", "preset", T::text, "", "model preset: its name in any case (see `trainledger models`) or its Hugging Face repo id, e.g. \"meta-llama/Llama-3.1-8B\""},
    {"model", "hf_config", T::text, "", "path to a Hugging Face config.json or a snapshot directory holding one, relative to the plan file and inside its folder"},
    {"model", "hf_arch", T::choice, "", "read a config.json whose model_type the planner does not list as this architecture (a guess: check --strict fails it)", Q::count, {"llama"}},
    {"model", "name", T::text, "", "display name"},
    {"model", "params", T::count, "", "parameter count of a count-only model (no architecture: state ledger only)", Q::count, {}, 1, 1e15},
    {"model", "layers", T::integer, "", "transformer layers", Q::count, {}, 1, 100000},
    {"model", "hidden", T::integer, "", "hidden size h", Q::count, {}, 1, 10000000},
    {"model", "heads", T::integer, "", "attention heads a", Q::count, {}, 1, 100000},
    {"model", "kv_heads", T::integer, "", "key/value heads (GQA); default: heads", Q::count, {}, 1, 100000},
    {"model", "head_dim", T::integer, "", "head dimension; default: hidden / heads", Q::count, {}, 1, 100000},
    {"model", "ffn", T::integer, "", "MLP inner width", Q::count, {}, 1, 100000000},
    {"model", "ffn_act", T::choice, "\"swiglu\"", "MLP activation: gated (swiglu, geglu: 3 matrices) or not (gelu, relu: 2)", Q::count, {"swiglu", "geglu", "gelu", "relu"}},
    {"model", "vocab", T::integer, "", "vocabulary size V", Q::count, {}, 1, 1000000000},
    {"model", "tied_embeddings", T::boolean, "false", "LM head shares the embedding matrix"},
    {"model", "norm", T::choice, "\"rmsnorm\"", "rmsnorm (weight), layernorm (weight + bias) or none (a LayerNorm without parameters: OLMo)", Q::count, {"rmsnorm", "layernorm", "none"}},
    {"model", "bias", T::choice, "\"none\"", "biases: none (Llama), qkv (Qwen2), mlp (GPT-J: the MLP's only), all (GPT-2/BLOOM/Phi-2/StarCoder2: every linear layer)", Q::count, {"none", "qkv", "mlp", "all"}},
    {"model", "sliding_window", T::integer, "0", "sliding-window attention: keys a local layer attends to (0: full attention; Mistral v0.1 4096, Gemma 2 4096, Gemma 3 512-1024)", Q::count, {}, 0, 1000000000},
    {"model", "global_every", T::integer, "0", "with a sliding window or chunked attention: every n-th layer attends to the whole sequence (Gemma 2: 2, Gemma 3: 6, Llama 4: 4; 0: every layer is local)", Q::count, {}, 0, 100000},
    {"model", "attention_chunk", T::integer, "0", "chunked attention: local layers attend within blocks of this many tokens (Llama 4 attention_chunk_size 8192; 0: none)", Q::count, {}, 0, 1000000000},
    {"model", "lm_head_bias", T::boolean, "false", "the LM head has a bias (GPT-J, Phi-2)"},
    {"model", "qk_norm", T::choice, "\"none\"", "norms on queries and keys: none, head (per head: Qwen3, Gemma 3) or full (over all heads: OLMo 2)", Q::count, {"none", "head", "full"}},
    {"model", "position_embeddings", T::integer, "0", "rows of a learned position table (0 for RoPE/ALiBi)", Q::count, {}, 0, 100000000},
    {"model", "embedding_norm", T::boolean, "false", "norm after the word embedding (BLOOM)"},
    {"model", "norms_per_layer", T::integer, "2", "norms per layer (Gemma 2: 4)", Q::count, {}, 1, 16},
    {"model", "experts", T::integer, "0", "MoE: routed experts per layer (0: dense)", Q::count, {}, 0, 100000},
    {"model", "experts_per_token", T::integer, "0", "MoE: experts active per token", Q::count, {}, 0, 100000},
    {"model", "expert_ffn", T::integer, "0", "MoE: MLP width of one expert", Q::count, {}, 0, 100000000},
    {"model", "shared_experts", T::integer, "0", "MoE: always-active shared experts", Q::count, {}, 0, 1000},
    {"model", "shared_expert_ffn", T::integer, "0", "MoE: MLP width of one shared expert (0: expert_ffn; Qwen2-MoE: 5632)", Q::count, {}, 0, 100000000},
    {"model", "shared_expert_gate", T::boolean, "false", "MoE: a sigmoid gate (h × 1) on the shared expert (Qwen2-MoE)"},
    {"model", "router_bias", T::boolean, "false", "MoE: a score-correction bias per routed expert (DeepSeek-V3)"},
    {"model", "dense_layers", T::integer, "0", "MoE: the first layers have a dense MLP of width model.ffn (DeepSeek first_k_dense_replace); they must lie on the first pipeline stage", Q::count, {}, 0, 100000},
    {"model", "mtp_layers", T::integer, "0", "multi-token prediction modules trained with the model (DeepSeek-V3 num_nextn_predict_layers 1): each is one more transformer layer, an h x 2h projection and three norms on the last pipeline stage, and one more pass of the LM head and its loss", Q::count, {}, 0, 16},
    {"model", "moe_every", T::integer, "1", "MoE: routed experts on every n-th layer (n, 2n, ... counting from 1; Llama 4 Maverick interleave_moe_layer_step 2, Qwen2-MoE decoder_sparse_step); the others have a dense MLP of width model.ffn; each pipeline stage's layers must be a multiple of it", Q::count, {}, 1, 100000},
    {"model", "q_lora_rank", T::integer, "0", "MLA (DeepSeek-V2/V3): query bottleneck rank (0: a full query matrix)", Q::count, {}, 0, 1000000},
    {"model", "kv_lora_rank", T::integer, "0", "MLA: rank of the shared key/value latent (0: standard attention)", Q::count, {}, 0, 1000000},
    {"model", "qk_nope_head_dim", T::integer, "0", "MLA: query/key head dimension without rotary embedding", Q::count, {}, 0, 100000},
    {"model", "qk_rope_head_dim", T::integer, "0", "MLA: query/key head dimension with rotary embedding (one shared key per token)", Q::count, {}, 0, 100000},
    {"model", "v_head_dim", T::integer, "0", "MLA: value head dimension", Q::count, {}, 0, 100000},
    // [training]
    {"training", "seq_len", T::integer, "2048", "sequence length s (tokens)", Q::count, {}, 1, 1e9},
    {"training", "document_length", T::integer, "", "packed sequences: mean document length; attention stays inside each document (FlashAttention varlen, document masks), so its s² FLOPs use this instead of seq_len; default: seq_len", Q::count, {}, 1, 1e9},
    {"training", "micro_batch", T::integer, "1", "micro-batch b (sequences per GPU per pass)", Q::count, {}, 1, 1e7},
    {"training", "global_batch", T::integer, "", "sequences per optimizer step; default: micro_batch × dp (no accumulation)", Q::count, {}, 1, 1e12},
    {"training", "precision", T::choice, "\"bf16\"", "weights/compute: fp32, or bf16/fp16/fp8/fp4 mixed precision (fp8 and fp4: the linear layers' GEMMs in that format, with bf16 weights, attention and LM head; see training.recipe)", Q::count, {"fp32", "bf16", "fp16", "fp8", "fp4"}},
    {"training", "activation_offload_layers", T::integer, "0", "Megatron-Core's activation offloading (--cpu-offloading-num-layers, Transformer Engine's cpu_offload): the saved activations of the first k layers are copied to pinned host memory during their forward and back before their backward, on one copy stream that overlaps compute; the GPU holds the other layers' (framework megatron, pp 1, no recompute; timed over cluster.pcie_bandwidth)", Q::count, {}, 0, 1000000},
    {"training", "recipe", T::choice, "", "how fp8/fp4 GEMM operands are scaled: delayed (Transformer Engine's DelayedScaling, amax history), tensorwise (current scaling: Float8CurrentScaling, torchao tensorwise), rowwise (torchao), blockwise (1 x 128 / 128 x 128 blocks, Float8BlockScaling, DeepSeek-V3), mxfp8 (32-element blocks, E8M0 scales; Blackwell) with precision fp8; nvfp4 (16-element blocks, E4M3 scales, a per-tensor scale; Blackwell) with precision fp4. It sets the quantized weight copies kept, the saved GEMM inputs, the cast kernels' traffic and the parameter all-gather's bytes (docs/formulas.md#recipes); default: tensorwise for fp8, nvfp4 for fp4", Q::count, {"delayed", "tensorwise", "rowwise", "blockwise", "mxfp8", "nvfp4"}},
    {"training", "master_weights", T::boolean, "true", "keep fp32 master weights (mixed precision); false for pure 16-bit recipes"},
    {"training", "framework", T::choice, "\"auto\"", "the training stack whose conventions apply (docs/formulas.md#frameworks): auto (inferred from the plan, the reason printed: zero = 1 with tp, pp or ep, or tp or pp without zero → megatron; zero = 1 or 2 otherwise, or DeepSpeed's bucket keys → deepspeed; LoRA/QLoRA → hf; else pytorch), pytorch (AMP/DDP/FSDP/torchtitan: fp32 gradients, fp32 checkpoint weights), hf (Hugging Face Trainer: pytorch + eager RMSNorm, autocast: eager softmax saved in fp32, under TP the logits gathered to every rank), megatron (fp32 main_grad, fused SwiGLU and element-wise kernels, FP8 inputs saved in FP8, buckets of max(4e7, 1e6·dp) elements), deepspeed (BF16_Optimizer's fp32 gradients, 5e8-element buckets, ZeRO-3 live parameters), generic (the textbook 16 B/param: gradients in the weights' dtype); also accepted: torchtitan and fsdp (= pytorch), hf-trainer (= hf), nemo and megatron-core (= megatron)", Q::count, {"auto", "pytorch", "hf", "megatron", "deepspeed", "generic", "torchtitan", "fsdp", "hf-trainer", "nemo", "megatron-core"}},
    {"training", "grad_dtype", T::choice, "", "gradient dtype; default: fp32 when training in 16 bits with master weights (pytorch, hf, megatron; deepspeed at ZeRO 0-1), else the weights' dtype", Q::count, dtypes_state},
    {"training", "reduce_dtype", T::choice, "", "dtype of the data-parallel gradient reduction (FSDP2 MixedPrecisionPolicy.reduce_dtype, DeepSpeed communication_data_type, Megatron --grad-reduce-in-bf16); default: grad_dtype", Q::count, dtypes_state},
    {"training", "optimizer", T::choice, "\"adamw\"", "optimizer", Q::count, {"adamw", "adamw-8bit", "sgd", "sgd-momentum", "lion", "adafactor"}},
    {"training", "optimizer_impl", T::choice, "", "how the optimizer step visits the parameter tensors (its HBM traffic, host time and temporaries, docs/formulas.md#dispatch): foreach (PyTorch's multi-tensor ops, its default on CUDA: one kernel per operation, AdamW 84 B per fp32 parameter and a copy of the second moments), for-loop (foreach = False: the same ops per tensor, each dispatched from Python) or fused (one multi-tensor kernel: fused = True, apex/Transformer Engine/DeepSpeed FusedAdam, torchtitan's default); default: fused under framework megatron and deepspeed, else foreach", Q::count, {"foreach", "for-loop", "fused"}},
    {"training", "optimizer_dtype", T::choice, "\"fp32\"", "dtype of optimizer states", Q::count, dtypes_state},
    {"training", "recompute", T::choice, "\"none\"", "activation recomputation: none, selective (attention core), op (save list), full", Q::count, {"none", "selective", "op", "full"}},
    {"training", "recompute_modules", T::choice_list, "[\"core_attn\"]", "with recompute = \"selective\": the modules run again in backward (Megatron-LM --recompute-modules): core_attn (the attention core), layernorm (a MoE layer's pre-MLP norm, its own module), mlp (a dense layer's MLP), moe (a MoE layer whole: router, dispatch and combine, experts, shared experts), moe_act (the routed experts' activation), shared_experts", Q::count, {"core_attn", "layernorm", "mlp", "moe", "moe_act", "shared_experts"}},
    {"training", "recompute_layers", T::number, "1.0", "share of layers recomputed", Q::count, {}, 0, 1},
    {"training", "attention", T::choice, "\"flash\"", "flash (no s² tensors) or eager (materialized scores)", Q::count, {"flash", "eager"}},
    {"training", "grad_accum", T::integer, "0", "gradient accumulation steps (0: from global_batch); with global_batch absent, global_batch = micro_batch × dp × grad_accum", Q::count, {}, 0, 1000000000},
    {"training", "moe_capacity_factor", T::number, "0", "MoE: expert capacity factor c (0: dropless routing); an expert takes at most c × its mean share of the routed tokens, and buffers are sized for it", Q::count, {}, 0, 64},
    {"training", "moe_imbalance", T::number, "1.25", "MoE, dropless routing: the busiest rank's routed tokens over the mean; expert activations, all-to-all buffers and the slowest rank's expert GEMMs scale with it (assumed: Switch Transformer's customary capacity factor 1.25)", Q::count, {}, 1, 64},
    {"training", "dropout", T::number, "0.0", "dropout probability (masks stored when > 0)", Q::count, {}, 0, 0.99},
    {"training", "norm_impl", T::choice, "\"fused\"", "norms: fused (saves the 16-bit input) or eager (PyTorch code upcasting to fp32, as Hugging Face's LlamaRMSNorm); default: eager under framework hf, else fused", Q::count, {"fused", "eager"}},
    {"training", "expandable_segments", T::boolean, "false", "the run sets PYTORCH_ALLOC_CONF (or PYTORCH_CUDA_ALLOC_CONF) to expandable_segments:True: segments grow in place, so the allocator reserves little beyond what it allocates (cluster.fragmentation 0.1, not 0.3); torchtitan's launcher sets it, PyTorch's default is off"},
    {"training", "use_cache", T::boolean, "false", "Hugging Face model code with config.use_cache on and its own gradient checkpointing off (e.g. recompute by FSDP's checkpoint wrapper): the training forward returns every layer's keys and values (past_key_values), live when the loss runs"},
    {"training", "op_saves_attention", T::boolean, "true", "recompute = \"op\": the save list keeps the attention kernel's output and log-sum-exp; false: the kernel is not on the list, so backward runs the attention's forward again and they are not kept (torchtitan on Blackwell from 3b85aa31f, 2025-05-14, which runs cuDNN attention first, until b39377f9f, 2025-12-01, which added it to the save list)"},
    {"training", "keep_outputs", T::boolean, "false", "the loop holds the model's output through backward (outputs = model(**batch); loss = outputs.loss): its logits, and with use_cache the keys and values, stay until the step ends"},
    {"training", "compile", T::boolean, "false", "torch.compile: fused element-wise kernels (each chain reads its inputs and writes its outputs once) and pointwise results recomputed, not saved (the SwiGLU output, fp32 norm copies)"},
    {"training", "cuda_graphs", T::boolean, "false", "the layers' forward and backward are captured as CUDA graphs and replayed (Megatron-LM --enable-cuda-graph or --external-cuda-graph, torch.compile mode=\"reduce-overhead\"): one launch per layer and pass instead of one host dispatch per kernel (docs/formulas.md#dispatch)"},
    {"training", "loss", T::choice, "\"standard\"", "standard (PyTorch cross-entropy on an fp32 copy of the logits), chunked (fused linear + cross-entropy, Liger) or fused (a cross-entropy kernel on the 16-bit logits: flash-attn's CrossEntropyLoss, llm-foundry's fused_crossentropy, or a compiled loss); default: fused under framework pytorch with compile = true (torchtitan compiles its loss with the model since April 2025), else standard", Q::count, {"standard", "chunked", "fused"}},
    {"training", "loss_dtype", T::choice, "", "dtype the standard or chunked loss computes in: fp32 (the logits upcast, as autocast and Hugging Face's loss do) or the 16-bit dtype (the logits' own: a model cast to 16 bits and run without autocast); default: the weights' 16-bit dtype for pure 16-bit recipes (master_weights = false) and for DeepSpeed in fp16 (its engine casts the module, no autocast), else fp32; always fp32 under framework hf (its modeling code upcasts the logits)", Q::count, dtypes_state},
    {"training", "finetune", T::choice, "\"full\"", "full, lora or qlora", Q::count, {"full", "lora", "qlora"}},
    {"training", "lora_rank", T::integer, "8", "LoRA rank r", Q::count, {}, 1, 65536},
    {"training", "lora_targets", T::choice_list, "[\"q_proj\", \"v_proj\"]", "LoRA target matrices (\"all-linear\" for every one)", Q::count, {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "all-linear"}},
    {"training", "lora_dropout", T::number, "0.0", "LoRA dropout on the adapter input (its mask and output are saved when > 0)", Q::count, {}, 0, 0.99},
    {"training", "double_quant", T::boolean, "true", "QLoRA: double quantization of constants"},
    {"training", "trainable_params", T::count, "", "parameters that train (the rest frozen); default: all", Q::count, {}, 1, 1e15},
    {"training", "tokens", T::count, "", "total training tokens, e.g. \"15T\"", Q::count, {}, 1, 1e18},
    {"training", "data_workers", T::integer, "0", "data-loader worker processes per GPU rank (host memory)", Q::count, {}, 0, 1024},
    {"training", "data_worker_memory", T::quantity, "\"2 GiB\"", "host memory per data-loader worker", Q::bytes},
    // [parallel]
    {"parallel", "tp", T::integer, "1", "tensor parallel size", Q::count, {}, 1, 65536},
    {"parallel", "pp", T::integer, "1", "pipeline stages", Q::count, {}, 1, 65536},
    {"parallel", "dp", T::integer, "", "data parallel size; default: world / (tp × pp × cp)", Q::count, {}, 1, 100000000},
    {"parallel", "cp", T::integer, "1", "context parallel size", Q::count, {}, 1, 65536},
    {"parallel", "ep", T::integer, "1", "expert parallel size (MoE)", Q::count, {}, 1, 65536},
    {"parallel", "etp", T::integer, "0", "expert tensor parallel size (MoE): the ranks each routed expert is split over (Megatron-Core --expert-tensor-parallel-size, torchtitan expert_tensor_parallel_degree); 0 = tp, Megatron-Core's default. With 1 every expert is whole on a rank: ep spreads over tp too (etp × ep divides tp × cp × dp), expert weights and gradients per GPU grow tp-fold, the expert-tensor-parallel gather and reduce-scatter of the routed tokens go away", Q::count, {}, 0, 65536},
    {"parallel", "sequence_parallel", T::boolean, "false", "Megatron sequence parallelism (with tp > 1)"},
    {"parallel", "zero", T::zero_stage, "0", "ZeRO stage 0-3, or \"fsdp\" (= 3)"},
    {"parallel", "zero_shard_size", T::integer, "", "HSDP: ranks per shard group (divides dp × cp); default: all of dp × cp", Q::count, {}, 1, 100000000},
    {"parallel", "grad_sync", T::choice, "", "when gradients are reduced with accumulation; default: once per step (last_micro_batch) for ZeRO 0-1, every micro-batch for ZeRO 2-3", Q::count, {"every_micro_batch", "last_micro_batch"}},
    {"parallel", "schedule", T::choice, "\"1f1b\"", "pipeline schedule: 1f1b, gpipe, interleaved (with virtual_stages), zb-h1, or dualpipev (DeepSeek's DualPipe cut in half: two chunks per device in a V, PyTorch's ScheduleDualPipeV under torchtitan; bubble (pp − 1)/3 of a micro-batch, (2pp + 1)/2 micro-batches of activations)", Q::count, {"1f1b", "gpipe", "interleaved", "zb-h1", "dualpipev"}},
    {"parallel", "virtual_stages", T::integer, "1", "interleaved chunks per GPU", Q::count, {}, 1, 1000},
    {"parallel", "stage_layers", T::int_list, "[]", "uneven split: layers per stage (with the interleaved schedule each must split over virtual_stages; the first and last may count the embedding or loss as a layer)", Q::count, {}, 1, 100000},
    {"parallel", "offload", T::choice, "\"none\"", "ZeRO-Offload to host memory", Q::count, {"none", "optimizer", "optimizer+params"}},
    {"parallel", "bucket_size", T::quantity, "\"25 MiB\"", "DDP / ZeRO-1/2 gradient bucket (PyTorch DDP: 25 MiB; DeepSpeed: reduce_bucket_size)", Q::bytes, {}, 0, 1e15, true},
    {"parallel", "fp8_param_gather", T::boolean, "false", "Megatron-LM --fp8-param-gather (framework megatron, precision fp8, the distributed optimizer: zero 1 or 2): the GEMM weights are kept in FP8 only, 1 B per element and no bf16 copy, and the updated parameters are all-gathered in FP8"},
    {"parallel", "fp8_all_gather", T::boolean, "false", "ZeRO-3/FSDP with precision fp8: GEMM weights cast to FP8 on their shard and all-gathered in FP8, 1 B per element gathered and held (torchtitan enable_fsdp_float8_all_gather)"},
    {"parallel", "keep_stage_outputs", T::boolean, "true", "PyTorch's pipelining (framework pytorch or hf, pp > 1, schedules other than gpipe): the schedule keeps every micro-batch's stage output until the step ends, to return them (torch/distributed/pipelining/stage.py forward_one_chunk: output_chunks), so the last stage holds the logits of every micro-batch of the step; false when the run passes step(return_outputs=False) (newer PyTorch): only the one at the loss"},
    {"parallel", "fsdp_version", T::integer, "", "PyTorch FSDP under zero = 3: 2 (fully_shard, per-parameter shards: torchtitan) copies each gathered unit out of the all-gather buffer on the compute stream and the gradients into the reduce-scatter input; 1 (FullyShardedDataParallel's flat parameters: Hugging Face Accelerate's default, LLM Foundry/Composer) gathers into the flat parameter without a copy and casts and divides the flat gradient before its reduce-scatter (docs/formulas.md#fsdp-copies). Default: 2 under framework pytorch, 1 under hf", Q::count, {}, 1, 2},
    {"parallel", "fsdp_root", T::choice, "", "ZeRO-3/FSDP: the units at the model's ends. split: the token embedding is a unit of its own, resharded after its forward, and the final norm with the LM head a unit that stays gathered from its forward through its backward (torchtitan's apply_fsdp since 83e694105, 2025-07-28; tied embeddings stay one unit); model: embedding, final norm and head in the root unit, gathered from the first forward to the end of backward (FSDP1, and torchtitan before). Default: split under framework pytorch, model otherwise", Q::count, {"split", "model"}},
    {"parallel", "reshard_after_forward", T::boolean, "true", "ZeRO-3/FSDP: free gathered parameters after each unit's forward (true) or keep them to its backward (false: no backward all-gather, the stage's 16-bit weights stay gathered)"},
    {"parallel", "allgather_bucket_size", T::number, "5e8", "DeepSpeed ZeRO-1/2: allgather_bucket_size, elements of the updated parameters' all-gather bucket (with overlap_comm 4.5 × it is held beside 4.5 × the reduce bucket)", Q::count, {}, 1, 1e15},
    {"parallel", "zero3_max_live_parameters", T::number, "1e9", "DeepSpeed ZeRO-3: stage3_max_live_parameters, gathered parameters kept for reuse at most (elements)", Q::count, {}, 1, 1e15},
    {"parallel", "zero3_prefetch_bucket_size", T::number, "5e7", "DeepSpeed ZeRO-3: stage3_prefetch_bucket_size, parameters fetched ahead of their use (elements)", Q::count, {}, 0, 1e15},
    {"parallel", "limit_all_gathers", T::boolean, "true", "ZeRO-3/FSDP1: FullyShardedDataParallel(limit_all_gathers): false (PyTorch 2.0's default) lets the CPU issue the all-gathers of later units before the GPU frees the earlier ones, so up to every unit of the stage is held gathered (an upper bound); true keeps two in flight"},
    {"parallel", "gradient_as_bucket_view", T::boolean, "false", "PyTorch DDP: gradients are views into the buckets (else a second copy)"},
    {"parallel", "placement", T::choice_list, "[\"tp\", \"cp\", \"dp\", \"pp\"]", "rank order, innermost first (ep lives inside dp)", Q::count, {"tp", "cp", "dp", "pp"}},
    {"parallel", "overlap_dp", T::boolean, "true", "DP/ZeRO traffic overlaps compute unit by unit (each bucket or gathered layer behind the compute of the one before it; the first waits)"},
    {"parallel", "overlap_tp", T::boolean, "false", "TP collectives decomposed and overlapped with the GEMMs they feed (Transformer Engine TP comm overlap, AsyncTP): one of tp chunks stays exposed"},
    {"parallel", "overlap_cp", T::boolean, "true", "the ring-attention exchange overlaps attention"},
    {"parallel", "ep_dispatch", T::choice, "\"nccl\"", "how MoE tokens cross nodes: nccl (NCCL's all-to-all: a copy per routed expert, each GPU through its own NIC) or deepep (DeepEP's internode dispatch and combine: one copy per remote node, to the same-index GPU, forwarded over NVLink) or allgather (Megatron-Core's MoEAllGatherTokenDispatcher, moe_token_dispatcher_type allgather: every expert-parallel rank gathers the group's tokens whole and reduce-scatters its experts' outputs; NeMo-RL v0.5's Megatron default; v0.4 and v0.6 use alltoall)", Q::count, {"nccl", "deepep", "allgather"}},
    {"parallel", "overlap_param_gather", T::boolean, "false", "ZeRO-1/2: the all-gather of updated parameters overlaps the next step's forward, layer by layer (Megatron-LM --overlap-param-gather, NeMo overlap_param_sync)"},
    {"parallel", "allreduce", T::choice, "\"auto\"", "NCCL's algorithm: auto (its tuner picks per call: an all-reduce across nodes as a ring or a tree, an all-gather over one rank per node as a ring or PAT, whichever its model times faster; NCCL's default), ring (NCCL_ALGO=ring: rings only, no PAT) or tree (the data-parallel all-reduce as a tree); docs/formulas.md#collectives", Q::count, {"auto", "ring", "tree"}},
    // [cluster]
    {"cluster", "gpu", T::text, "", "GPU preset: its name in any case (see `trainledger gpus`) or the name nvidia-smi prints, e.g. \"NVIDIA H100 80GB HBM3\""},
    {"cluster", "gpu_name", T::text, "", "GPU display name"},
    {"cluster", "gpu_memory", T::quantity, "", "memory as the device reports it (nvidia-smi)", Q::bytes, {}, 1, 1e15},
    {"cluster", "peak_flops", T::flops_table, "", "dense peak per dtype: { bf16 = \"989 TFLOP/s\", ... } (fp32, tf32, bf16, fp16, fp8, fp4 (NVFP4 GEMMs, training.precision = \"fp4\"); fp6, the block-scaled MXFP6 peak, is listed by `trainledger gpus`, not planned)", Q::flops},
    {"cluster", "memory_bandwidth", T::quantity, "", "HBM bandwidth", Q::bandwidth, {}, 0, 0, true},
    {"cluster", "gpu_sms", T::integer, "", "streaming multiprocessors of the GPU (AMD: compute units), from its vendor's architecture documents; GPU presets set it. An NCCL collective that overlaps compute runs one CTA per channel (cluster.nccl_channels), each holding an SM the compute kernels then lack (docs/formulas.md#nccl-contention); 0 or none: not known, no such slowdown", Q::count, {}, 0, 4096},
    {"cluster", "nodes", T::integer, "", "nodes; default: enough for tp × pp × cp × dp, else 1", Q::count, {}, 1, 1000000},
    {"cluster", "gpus_per_node", T::integer, "8", "GPUs per node", Q::count, {}, 1, 1024},
    {"cluster", "nvlink_domain", T::integer, "", "GPUs joined by one NVLink fabric, a whole number of nodes: a group inside it communicates at the intra-node rates, also across trays (GB200/GB300 NVL72: 72 GPUs in 18 trays of 4, as NVIDIA's rack specifications give it; the GPU preset gb200-186gb sets it with gpus_per_node 4). A job larger than one domain is placed in equal segments, the most nodes that divide its nodes and fit a domain (Megatron-Bridge's GB200 launcher: sbatch --segment; 64 trays: segments of 16); default: gpus_per_node", Q::count, {}, 1, 1000000},
    {"cluster", "leaf_nodes", T::integer, "", "nodes under one leaf of the fabric (a scalable unit: the nodes whose NICs share leaf switches, e.g. 32 in a rail-optimized DGX SuperPOD unit, 4 behind one top-of-rack switch in a fat tree); a group with members under several leaves crosses the spine; default: every node under one leaf (one non-blocking tier)", Q::count, {}, 1, 1000000},
    {"cluster", "oversubscription", T::number, "1", "the leaves' downlink over uplink capacity (2 for 2:1): the traffic of a group that leaves its leaf shares uplinks of 1/oversubscription of the NICs' rate; with leaf_nodes", Q::count, {}, 1, 1000},
    {"cluster", "intra_node_bandwidth", T::quantity, "", "achievable busbw per GPU inside a node (nccl-tests convention)", Q::bandwidth, {}, 0, 0, true},
    {"cluster", "intra_node_gather_bandwidth", T::quantity, "", "achievable busbw of all-gather, reduce-scatter and all-to-all inside a node, where it differs from all-reduce's (NVLink SHARP speeds up all-reduce only); default: intra_node_bandwidth", Q::bandwidth, {}, 0, 0, true},
    {"cluster", "intra_node_latency", T::quantity, "\"8 us\"", "per-step latency inside a node", Q::duration},
    {"cluster", "inter_node_bandwidth", T::quantity, "", "achievable busbw across nodes per GPU: its share of the node's NICs; a group with r members in a node moves r × this, up to the intra-node busbw (NCCL spreads its channels over the NICs)", Q::bandwidth, {}, 0, 0, true},
    {"cluster", "inter_node_latency", T::quantity, "\"20 us\"", "per-step latency across nodes", Q::duration},
    {"cluster", "intra_node_simple_latency", T::quantity, "", "per-step latency inside a node of NCCL's bandwidth protocol (Simple) where it exceeds intra_node_latency: a collective then takes the faster of LL (intra_node_latency, at half the busbw: NCCL's tuning model, src/graph/tuning.cc) and Simple (this latency, the full busbw), the ramp by which mid-size messages reach the busbw (calibrate import fits it); default: intra_node_latency, one protocol", Q::duration},
    {"cluster", "inter_node_simple_latency", T::quantity, "", "the same across nodes: per-step latency of NCCL's Simple protocol where it exceeds inter_node_latency; default: inter_node_latency, one protocol", Q::duration},
    {"cluster", "intra_node_ll_share", T::number, "0.5", "with intra_node_simple_latency: the share of the busbw the low-latency protocol reaches inside a node (NCCL's LL: 0.5, 4 data bytes in each 8-byte line; calibrate import fits it to the sweep's mid-size messages)", Q::count, {}, 0, 1, true},
    {"cluster", "inter_node_ll_share", T::number, "0.5", "with inter_node_simple_latency: the same across nodes", Q::count, {}, 0, 1, true},
    {"cluster", "cuda_context", T::quantity, "\"1 GiB\"", "CUDA context and the kernels a training process loads, per GPU (assumed: about 1-1.5 GiB measured on A100/H100 under PyTorch; GPU presets set it)", Q::bytes},
    {"cluster", "nccl_channels", T::integer, "16", "NCCL channels per communicator (assumed): their buffers (overhead.nccl) and the SMs an overlapped collective holds beside the compute, one per channel (docs/formulas.md#nccl-contention)", Q::count, {}, 1, 64},
    {"cluster", "nccl_buffer", T::quantity, "\"10 MiB\"", "NCCL buffers per connection per channel, all protocols (assumed)", Q::bytes},
    {"cluster", "cublas_workspace", T::quantity, "\"32 MiB\"", "cuBLAS workspace per GPU", Q::bytes},
    {"cluster", "matmul_efficiency", T::number, "0.7", "achieved share of the dense peak FLOP/s in GEMMs (assumed; GPU presets set it per generation)", Q::count, {}, 0, 1, true},
    {"cluster", "activation_factor", T::number, "1", "the activations a layer saves, measured, over the ledger's (calibrate compare --replica writes it from a GPU replica's memory per layer where forward or backward peaks: the stack's own kernels and conventions); it scales the activations item", Q::count, {}, 0, 10, true},
    {"cluster", "fp8_matmul_ratio", T::number, "1", "fp8 GEMMs reach this fraction of the share of their (twice as high) peak that bf16 GEMMs reach of theirs; calibrate probe measures it on the plan's shapes (one H200 at Llama 3.1 8B's, 2,048 tokens: 0.85, 1,415 against 829 TFLOP/s). Default 1: NVIDIA's FP8 runs at larger shapes reach their bf16 share (tests/reference/time: 0.85 would make them 7 % slower than measured)", Q::count, {}, 0, 1, true},
    {"cluster", "fused_attention_efficiency", T::number, "", "the same for Transformer Engine's cuDNN fused attention, the kernel Megatron-LM runs: under framework megatron it replaces a GPU preset's attention_efficiency (Hopper presets: 0.6, FlashAttention-3-class: 60-75 % of the peak forward, Shah et al. 2024); default: none (attention_efficiency)", Q::count, {}, 0, 1, true},
    {"cluster", "attention_efficiency", T::number, "", "achieved share of the 16-bit dense peak in flash attention kernels, on the FLOPs they execute (causal: the unmasked half); GPU presets set it from FlashAttention's published rates; default: matmul_efficiency", Q::count, {}, 0, 1, true},
    {"cluster", "memory_efficiency", T::number, "0.72", "achieved share of HBM bandwidth in element-wise kernels (fitted on torch.compile's measured gain, docs/formulas.md#compute)", Q::count, {}, 0, 1, true},
    {"cluster", "op_overhead", T::quantity, "\"20 us\"", "host time of one eager PyTorch op dispatched from Python (Python, autograd recording, the ATen dispatcher, the kernel launch); a step whose kernels are shorter waits for the host (docs/formulas.md#dispatch; assumed: PyTorch's eager Llama 2 7B decodes at 25.5 tokens/s on an A100, about 23 µs per op, gpt-fast)", Q::duration, {}, 0, 0.01},
    {"cluster", "launch_overhead", T::quantity, "\"5 us\"", "host time of a kernel launched without Python op dispatch: the autograd engine's backward nodes, torch.compile's generated code, a foreach chunk (assumed: cudaLaunchKernel and the C++ dispatcher, a few µs)", Q::duration, {}, 0, 0.01},
    {"cluster", "fragmentation", T::number, "", "allocator reserve (reserved over allocated) as a share of activations, logits and temporaries (assumed); default: 0.3 for PyTorch's caching allocator as it comes, 0.1 with training.expandable_segments", Q::count, {}, 0, 1},
    {"cluster", "pcie_bandwidth", T::quantity, "\"25 GB/s\"", "achievable bandwidth between a GPU and host memory, each direction (offload); default: PCIe 4.0 x16 (31.5 GB/s line rate); GPU presets set it", Q::bandwidth, {}, 0, 0, true},
    {"cluster", "pageable_bandwidth", T::quantity, "\"1.9 GB/s\"", "achievable rate of a copy between a GPU and pageable host memory, each direction: tensor.to(\"cpu\") and back, per tensor, blocking, through the driver's staging buffer (the RL frameworks' offloads: rl.offload_copy); default: the median of three measurements on x86 hosts: PyTorch PR #138018 (A100, 1.4 GB/s device to pageable host), NeMo-RL PR #1404 (removing one optimizer offload and reload per step saved about 12 s on Qwen3-30B-A3B: 11.5 GB per GPU under NeMo-RL's 32-GPU recipe, out and back, about 1.9 GB/s) and SGLang PR #32032 (module.to(\"cpu\") on H200, about 2.8 GB/s); unmeasured on Grace hosts (GH200, GB200)", Q::bandwidth, {}, 0, 0, true},
    {"cluster", "host_memory_bandwidth", T::quantity, "\"200 GB/s\"", "achievable DRAM bandwidth of a node, shared by its ranks' host optimizer steps (offload; assumed: about half of two sockets' 8 DDR4-3200 channels)", Q::bandwidth, {}, 0, 0, true},
    {"cluster", "host_memory", T::quantity, "", "host memory per node (for the host verdict)", Q::bytes, {}, 0, 1e18, true},
    {"cluster", "host_process_memory", T::quantity, "\"3 GiB\"", "host memory per rank for the training process and its libraries (assumed)", Q::bytes},
    // [checkpoint]
    {"checkpoint", "storage_bandwidth", T::quantity, "\"2 GB/s\"", "aggregate checkpoint write bandwidth", Q::bandwidth, {}, 0, 0, true},
    {"checkpoint", "restart_time", T::quantity, "\"5 min\"", "time to restart after a failure", Q::duration},
    {"checkpoint", "gpu_failure_rate", T::quantity, "\"1.97e-5 /h\"", "interruptions per GPU per hour, all causes (GPU, host, network, storage); default: Llama 3's fleet, 419 unexpected interruptions in 54 days on 16,384 GPUs (Dubey et al. 2024, §3.3.4)", Q::rate},
    {"checkpoint", "node_failure_rate", T::quantity, "\"0 /h\"", "interruptions per node per hour from host, network and storage, when gpu_failure_rate counts GPU faults only (the cluster's rate is gpus × gpu_failure_rate + nodes × node_failure_rate)", Q::rate},
    {"checkpoint", "interval", T::quantity, "", "time between checkpoints as planned (the report also gives the optimum)", Q::duration, {}, 0, 0, true},
    {"checkpoint", "format", T::choice, "\"sharded\"", "sharded (every rank writes its part) or gathered (one rank collects the full state)", Q::count, {"sharded", "gathered"}},
    // [rl]: RL post-training (docs/rl.md). The plan's [model], [training] and [parallel] are the
    // actor's training layout; these keys add the rollout engine, the other roles and the batch.
    {"rl", "algorithm", T::choice, "\"grpo\"", "the algorithm, which sets the roles: grpo, rloo and dapo (actor, reference unless rl.reference = false, rule reward unless rl.reward_model), ppo (adds a critic of the actor's architecture, trained beside it), dpo (offline pairs: no rollout, a frozen reference)", Q::count, {"grpo", "ppo", "dapo", "rloo", "dpo"}},
    {"rl", "prompts", T::integer, "", "prompts per step (verl data.train_batch_size, OpenRLHF rollout_batch_size); dpo: preference pairs per step", Q::count, {}, 1, 1e9},
    {"rl", "samples_per_prompt", T::integer, "", "responses sampled per prompt (verl actor_rollout_ref.rollout.n); default 8 for grpo, rloo and dapo, 1 for ppo, 2 for dpo (chosen and rejected)", Q::count, {}, 1, 100000},
    {"rl", "prompt_length", T::integer, "1024", "longest prompt in tokens (verl data.max_prompt_length): memory is sized for it", Q::count, {}, 1, 1e8},
    {"rl", "response_length", T::integer, "2048", "longest response in tokens (verl data.max_response_length): memory and the decode tail are sized for it", Q::count, {}, 1, 1e8},
    {"rl", "mean_prompt_length", T::number, "", "mean prompt length in tokens (default: prompt_length): the step time scales with it", Q::count, {}, 1, 1e8},
    {"rl", "mean_response_length", T::number, "", "mean response length in tokens (verl response_length/mean; default: half of response_length): the step time scales with it", Q::count, {}, 1, 1e8},
    {"rl", "mini_batch_prompts", T::integer, "", "prompts per optimizer step (verl ppo_mini_batch_size; default: rl.prompts, one optimizer step per epoch)", Q::count, {}, 1, 1e9},
    {"rl", "epochs", T::integer, "1", "passes over each step's samples (verl ppo_epochs)", Q::count, {}, 1, 1000},
    {"rl", "placement", T::choice, "\"colocated\"", "colocated (rollout and training take turns on the same GPUs; verl's hybrid engine) or split (rl.rollout_gpus more GPUs of the same kind generate while [cluster] trains)", Q::count, {"colocated", "split"}},
    {"rl", "rollout_gpus", T::integer, "0", "split placement: GPUs that generate, beside the [cluster] GPUs that train", Q::count, {}, 0, 1e7},
    {"rl", "off_policy", T::boolean, "false", "split placement: generation of step n + 1 overlaps training on step n (one-step off-policy: verl recipe/one_step_off_policy, NeMo-RL async GRPO); the step is the longer of the two plus the weight sync"},
    {"rl", "engine", T::choice, "\"vllm\"", "rollout engine: vllm (gpu_memory_utilization of the GPU's whole memory) or sglang (mem_fraction_static)", Q::count, {"vllm", "sglang"}},
    {"rl", "rollout_tp", T::integer, "1", "tensor-parallel GPUs per rollout engine (verl rollout.tensor_model_parallel_size); engines = rollout GPUs / rollout_tp", Q::count, {}, 1, 1024},
    {"rl", "memory_fraction", T::number, "0.5", "share of each GPU's memory the engine takes for weights, activations and KV cache (vLLM gpu_memory_utilization, SGLang mem_fraction_static; verl's default 0.5)", Q::count, {}, 0, 1, true},
    {"rl", "max_num_seqs", T::integer, "256", "sequences an engine decodes at once at most (vLLM max_num_seqs; verl's rollout.yaml sets 256, vLLM's own LLM-class default is 1024 on GPUs of 70 GiB or more, 256 below)", Q::count, {}, 1, 1e7},
    {"rl", "max_batched_tokens", T::integer, "8192", "tokens an engine step processes at most (vLLM max_num_batched_tokens): sizes its activation workspace and its prefill chunks", Q::count, {}, 1, 1e9},
    {"rl", "kv_dtype", T::choice, "\"bf16\"", "KV cache dtype of the engine (vLLM kv_cache_dtype)", Q::count, {"bf16", "fp16", "fp8"}},
    {"rl", "cuda_graphs", T::boolean, "true", "the engine captures decode steps as CUDA graphs (verl rollout.enforce_eager = false): one launch per step, and a graph pool beside the budget"},
    {"rl", "sleep", T::choice, "\"discard\"", "colocated: what the engine does while training runs: discard (vLLM sleep level 2: weights and KV cache freed, the weights synced again from the trainer; verl with vLLM 0.8.5 or later), offload (level 1: weights to pinned host memory and back, KV cache freed; OpenRLHF, verl on older vLLM) or none (stays resident); CUDA graphs, NCCL buffers and the context stay in every case", Q::count, {"offload", "discard", "none"}},
    {"rl", "offload_params", T::boolean, "false", "colocated: the trainer's parameters and gradients go to host memory while the engine generates (verl actor.fsdp_config.param_offload)"},
    {"rl", "offload_optimizer", T::boolean, "false", "colocated: the trainer's optimizer state goes to host memory while the engine generates (verl actor.fsdp_config.optimizer_offload)"},
    {"rl", "offload_copy", T::choice, "\"pageable\"", "colocated: how the trainer state rl.offload_params / rl.offload_optimizer move is copied to the host and back each step: pageable (tensor.to(\"cpu\") at cluster.pageable_bandwidth: verl fsdp_utils offload_fsdp_model_to_cpu / offload_fsdp_optimizer), pinned_weights (the weights through pinned buffers at cluster.pcie_bandwidth, the optimizer state pageable: NeMo-RL's Megatron policy worker, move_model and move_optimizer) or pinned (everything through pinned buffers: OpenRLHF offload_deepspeed_states, DeepSpeed offload_states pin_memory=True)", Q::count, {"pageable", "pinned_weights", "pinned"}},
    {"rl", "decode_efficiency", T::number, "", "share of the GPU's HBM rate an engine's decode step reaches, reading the weights and the batch's KV cache (paged attention, small-batch GEMMs, the sampler and the scheduler's gaps included); default: cluster.memory_efficiency", Q::count, {}, 0, 1, true},
    {"rl", "async_scheduling", T::boolean, "true", "the engine schedules step n + 1 while step n runs on the GPUs, hiding its host work (vLLM async_scheduling: the default since vLLM PR #27614, vLLM 0.12; vLLM 0.11 and older, and SGLang without its overlap scheduler, run the host work between steps: rl.step_overhead)"},
    {"rl", "step_overhead", T::quantity, "\"4 ms\"", "without async_scheduling, the host time of each engine step that the GPUs wait for: the scheduler, input preparation, the sampled tokens' copy to the host and output processing (vLLM RFC #6854: about 4 ms of idle GPU per decode step in its profile, 5-13 ms in its measurements)", Q::duration, {}, 0, 10},
    {"rl", "generation_rounds", T::number, "1", "generation batches per step: DAPO's dynamic sampling generates again until enough groups have rewards that differ (the mean of verl's train/num_gen_batches; verl algorithm.filter_groups.max_num_gen_batches and NeMo-RL dynamic_sampling_max_gen_batches cap it); each round prefills and decodes the step's prompts again", Q::count, {}, 1, 1000},
    {"rl", "sync_bucket", T::quantity, "\"2048 MiB\"", "colocated weight sync: the buffer the trainer packs gathered tensors into for the engine, held on both sides while a bucket loads (verl rollout.checkpoint_engine.update_weights_bucket_megabytes; 0: tensors handed over one at a time, verl's older sharding managers)", Q::bytes, {}, 0, 1e15},
    {"rl", "reference", T::boolean, "true", "a frozen reference policy (the actor's architecture) computes log-probs for the KL term; dapo runs without one unless this is set"},
    {"rl", "reward_model", T::boolean, "false", "a reward model of the actor's architecture scores the responses (else a rule or a remote service: no GPU time)"},
    {"rl", "frozen_weights", T::choice, "\"resident\"", "where the frozen models' weights (reference, reward model) live between their passes: resident (on the training GPUs through every phase; verl's ref.fsdp_config.param_offload = false), offload (host memory, loaded beside the actor's for their pass; verl's param_offload = true) or swap (host memory, copied into the actor's parameters for their pass while the actor's wait on the host: NeMo-RL's use_reference_model)", Q::count, {"resident", "offload", "swap"}},
    {"rl", "old_log_probs", T::boolean, "true", "the actor's old log-prob pass runs on the training layout before training; false: the engine's sampling log-probs stand in and the pass (its memory phase and its time) is skipped (verl actor.use_rollout_log_probs, the fully-async recipe's async_training.use_rollout_log_probs; TRL without vLLM when gradient_accumulation_steps is a multiple of steps_per_generation × num_iterations)"},
    {"rl", "log_prob_entropy", T::boolean, "true", "the actor's old log-prob pass also computes the full-vocabulary entropy, 6 B per logit instead of 2 (verl dp_actor compute_log_prob calculate_entropy=True; TRL computes it only in the loss: false)"},
    {"rl", "response_logits_only", T::boolean, "false", "the log-prob passes keep the logits of the response's tokens only, not of the whole sequence (TRL's logits_to_keep: true; verl's padding-free forward: false)"},
    {"rl", "log_prob_micro_batch", T::integer, "", "sequences per forward of the log-prob passes (verl log_prob_micro_batch_size_per_gpu; default: training.micro_batch)", Q::count, {}, 1, 1e7},
    {"import", "deepspeed", T::text, "", "a DeepSpeed JSON config to import, relative to the plan file and inside its folder (docs/config.md#importing-training-configs)"},
    {"import", "megatron", T::text, "", "a Megatron-LM launch script or argument list to import, as above"},
    {"import", "torchtitan", T::text, "", "a torchtitan TOML job config to import, as above"},
    {"import", "nemo_rl", T::text, "", "a NeMo-RL YAML config (a recipe of examples/configs and the parents its defaults: key names, inside the plan's folder) to import into [rl], [training], [parallel] and [cluster], as above (docs/rl.md#importing)"},
    {"import", "openrlhf", T::text, "", "an OpenRLHF launch script (python3 -m openrlhf.cli.train_ppo_ray with its --flags, classic or dotted names) to import into [rl], [training], [parallel] and [cluster], as above (docs/rl.md#importing)"},
    {"import", "trl", T::text, "", "a TRL GRPO run to import into [rl], [training], [parallel] and [cluster]: a launch script (trl grpo, or accelerate launch / torchrun of a GRPO script, with its trl vllm-serve; the --config recipe, the accelerate config and the Python script it names are read inside the plan's folder), a TrlParser recipe (.yaml) or a Python script's GRPOConfig(...) (.py), as above (docs/rl.md#importing)"},
    {"import", "verl", T::text, "", "a verl launch script (python3 -m verl.trainer.main_ppo with its key=value overrides) to import into [rl], [training], [parallel] and [cluster], as above (docs/rl.md#importing)"},
  };
}
// clang-format on

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

const std::vector<KeySpec>& key_table() {
  static const std::vector<KeySpec> table = build_table();
  return table;
}

const std::vector<std::string_view>& section_names() {
  static const std::vector<std::string_view> names = {
      "model", "training", "parallel", "cluster", "checkpoint", "rl", "import"};
  return names;
}

const KeySpec* find_key(std::string_view section, std::string_view name) {
  for (const KeySpec& k : key_table())
    if (k.section == section && k.name == name) return &k;
  return nullptr;
}

std::string key_in_message(std::string_view message) {
  const auto word_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  // A message about a whole section starts with its name ("parallel: tp × pp × cp = ...").
  for (std::string_view s : section_names())
    if (message.size() > s.size() && message.substr(0, s.size()) == s && message[s.size()] == ':')
      return std::string(s);
  std::size_t i = 0;
  while (i < message.size()) {
    // A word starts where the previous character is not part of one.
    if (!word_char(message[i]) || (i > 0 && (word_char(message[i - 1]) || message[i - 1] == '.'))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < message.size() && (word_char(message[end]) || message[end] == '.')) ++end;
    std::string_view word = message.substr(i, end - i);
    while (!word.empty() && word.back() == '.') word.remove_suffix(1);  // a sentence's full stop
    const std::size_t dot = word.find('.');
    if (dot != std::string_view::npos && dot + 1 < word.size()) {
      const std::string_view section = word.substr(0, dot);
      for (std::string_view s : section_names())
        if (s == section) return std::string(word);
    }
    i = end;
  }
  return {};
}

double key_max(const std::string& full_name) {
  const auto dot = full_name.find('.');
  if (dot == std::string::npos) return 0;
  const KeySpec* k = find_key(std::string_view(full_name).substr(0, dot),
                              std::string_view(full_name).substr(dot + 1));
  return k ? k->max : 0;
}

std::string type_description(const KeySpec& k) {
  switch (k.type) {
    case KeyType::integer:
      return "an integer";
    case KeyType::number:
      return "a number";
    case KeyType::boolean:
      return "true or false";
    case KeyType::text:
      return "a string";
    case KeyType::choice:
    case KeyType::choice_list: {
      std::string s = k.type == KeyType::choice ? "one of " : "a list of ";
      for (std::size_t i = 0; i < k.choices.size(); ++i)
        s += (i ? ", \"" : "\"") + std::string(k.choices[i]) + "\"";
      return s;
    }
    case KeyType::quantity:
      return "a string with a unit, e.g. " + std::string(example_quantity(k.quantity));
    case KeyType::count:
      return "a number or a string like \"7B\" or \"15T\"";
    case KeyType::int_list:
      return "a list of integers";
    case KeyType::flops_table:
      return "a table of FLOP/s per dtype, e.g. { bf16 = \"989 TFLOP/s\" }";
    case KeyType::zero_stage:
      return "0, 1, 2, 3 or \"fsdp\"";
  }
  return "?";
}

std::string fold(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '-' || ch == '_' || ch == '.' || ch == ' ' || ch == '/') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return out;
}

std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates) {
  // Distance between the folded forms first (case and separators do not count: "llama-3-8b"
  // is one edit from "llama-3.1-8b", two from "llama-2-7b"), the raw distance to break ties.
  std::optional<std::string> best;
  int best_score = 0;
  const std::string folded = fold(word);
  const int limit = std::max<int>(2, static_cast<int>(folded.size()) / 3);
  for (const std::string& c : candidates) {
    const int d = edit_distance(folded, fold(c));
    const int score = 1000 * d + edit_distance(word, c);
    if (d <= limit && (!best || score < best_score)) {
      best = c;
      best_score = score;
    }
  }
  return best;
}

}  // namespace trainledger::config
