# open-r1's GRPO on Python problems (README.md, "Training models" with code rewards),
# huggingface/open-r1 1416fa0cf21595d2083b399a2a0bbddd7f6e9563: the vLLM server on GPU 0,
# training on the other seven.
CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model Qwen/Qwen2.5-1.5B-Instruct

CUDA_VISIBLE_DEVICES=1,2,3,4,5,6,7 ACCELERATE_LOG_LEVEL=info \
    accelerate launch --config_file recipes/accelerate_configs/zero2.yaml --num_processes=7 \
    src/open_r1/grpo.py --config recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo_code.yaml
