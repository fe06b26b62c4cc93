#!/bin/bash
# Written for the tests: a Llama-3.1-8B-shaped Megatron-LM run with the distributed optimizer
# and Megatron-Core's CPU offload of the optimizer (HybridDeviceOptimizer), and Transformer
# Engine's fused cross-entropy.
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \
    --tensor-model-parallel-size 1 \
    --pipeline-model-parallel-size 1 \
    --use-distributed-optimizer \
    --optimizer-cpu-offload \
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \
    --group-query-attention --num-query-groups 8 --kv-channels 128 \
    --ffn-hidden-size 14336 --swiglu --normalization RMSNorm \
    --untie-embeddings-and-output-weights --disable-bias-linear --vocab-size 128256 \
    --micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --bf16 \
    --cross-entropy-loss-fusion --cross-entropy-fusion-impl te
