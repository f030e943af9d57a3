"""The tiny random-init configurations measured by hf_blocks.py (issue 14 item 4), one group per block kind.

Every case is a Transformers `model_type` with config keyword arguments small enough to run in seconds on CPU, and
the (batch, seq) points it is measured at (2–3 per model so that a rule's dependence on b and s shows), plus one
AMP-bf16 point. Dimensions shared by all: hidden 256, 4 heads, vocab 2048 (small, so that blocks, not logits,
dominate), random init with seed 0, dropout 0.
"""
from __future__ import annotations

H, HEADS, VOCAB = 256, 4, 2048
POINTS = [(1, 128), (2, 128), (1, 256), (2, 256)]
AMP_POINT = (2, 128)

MLA_COMMON = dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, moe_intermediate_size=128,
                  num_hidden_layers=3, num_attention_heads=HEADS, num_key_value_heads=HEADS, kv_lora_rank=64,
                  qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, n_routed_experts=8,
                  num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
                  max_position_embeddings=1024, tie_word_embeddings=False, attention_dropout=0.0,
                  rope_scaling=None)

GROUPS = {
    # Multi-head latent attention (DeepSeek-V3 / V2-Lite layout): layer 0 dense MLP, layers 1-2 MoE (8 routed
    # experts, top-2, 1 shared expert).
    "mla": [
        dict(name="deepseek_v3-qlora96", model_type="deepseek_v3", cls="DeepseekV3ForCausalLM", attn="sdpa",
             kw=dict(MLA_COMMON, q_lora_rank=96)),
        dict(name="deepseek_v3-qlora_none", model_type="deepseek_v3", cls="DeepseekV3ForCausalLM", attn="sdpa",
             kw=dict(MLA_COMMON, q_lora_rank=None)),
    ],
    # Sliding-window attention: window 64, shorter than the 128/256-token points; s=32 shows a sequence shorter
    # than the window.
    "sliding": [
        dict(name="gemma3_text-3local1global", model_type="gemma3_text", cls="Gemma3ForCausalLM", attn="sdpa",
             points=POINTS + [(1, 32)],
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, num_hidden_layers=4,
                     num_attention_heads=HEADS, num_key_value_heads=2, head_dim=64, sliding_window=64,
                     layer_types=["sliding_attention"] * 3 + ["full_attention"], max_position_embeddings=1024,
                     query_pre_attn_scalar=64, attention_dropout=0.0)),
        dict(name="mistral-window64", model_type="mistral", cls="MistralForCausalLM", attn="sdpa", amp=False,
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, num_hidden_layers=4,
                     num_attention_heads=HEADS, num_key_value_heads=2, head_dim=64, sliding_window=64,
                     max_position_embeddings=1024, tie_word_embeddings=False, attention_dropout=0.0)),
        # gpt-oss: alternating sliding/full layers, attention sinks (eager: the class sets _supports_sdpa False),
        # 4 experts top-2 with biases and the clamped SwiGLU; random fp32 weights (no MXFP4).
        dict(name="gpt_oss-sinks", model_type="gpt_oss", cls="GptOssForCausalLM", attn="eager",
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=256, num_hidden_layers=4,
                     num_attention_heads=HEADS, num_key_value_heads=2, head_dim=64, sliding_window=64,
                     layer_types=["sliding_attention", "full_attention"] * 2, num_local_experts=4,
                     num_experts_per_tok=2, max_position_embeddings=1024, tie_word_embeddings=False,
                     attention_dropout=0.0, rope_scaling=None)),
    ],
    "moe": [
        dict(name="qwen3_moe-e8k2", model_type="qwen3_moe", cls="Qwen3MoeForCausalLM", attn="sdpa",
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, moe_intermediate_size=128,
                     num_hidden_layers=4, num_attention_heads=HEADS, num_key_value_heads=2, head_dim=64,
                     num_experts=8, num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[],
                     norm_topk_prob=True, max_position_embeddings=1024, tie_word_embeddings=False,
                     attention_dropout=0.0)),
        # the same model with Transformers' per-expert loop (experts_implementation="eager") instead of the
        # default grouped_mm path, at one point
        dict(name="qwen3_moe-e8k2-eager_experts", model_type="qwen3_moe", cls="Qwen3MoeForCausalLM", attn="sdpa",
             experts="eager", points=[(2, 128)], amp=False,
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, moe_intermediate_size=128,
                     num_hidden_layers=4, num_attention_heads=HEADS, num_key_value_heads=2, head_dim=64,
                     num_experts=8, num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[],
                     norm_topk_prob=True, max_position_embeddings=1024, tie_word_embeddings=False,
                     attention_dropout=0.0)),
        dict(name="mixtral-e8k2", model_type="mixtral", cls="MixtralForCausalLM", attn="sdpa", amp=False,
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=256, num_hidden_layers=4,
                     num_attention_heads=HEADS, num_key_value_heads=2, head_dim=64, num_local_experts=8,
                     num_experts_per_tok=2, max_position_embeddings=1024, tie_word_embeddings=False,
                     attention_dropout=0.0, sliding_window=None)),
    ],
    # Mamba-2 (torch path: no mamba_ssm / causal_conv1d on CPU) and hybrids.
    "ssm": [
        dict(name="mamba2-d256", model_type="mamba2", cls="Mamba2ForCausalLM", attn=None,
             kw=dict(vocab_size=VOCAB, hidden_size=H, num_hidden_layers=4, state_size=64, expand=2, head_dim=64,
                     num_heads=8, n_groups=1, conv_kernel=4, chunk_size=64, tie_word_embeddings=False,
                     use_cache=True)),
        # the same mixer with chunk, head and state sizes all different (64 = 64 = 64 above cannot tell them
        # apart in a formula): chunk 32, head_dim 16 (32 heads), state 8, 2 groups
        dict(name="mamba2-d256-L32-hd16-N8-g2", model_type="mamba2", cls="Mamba2ForCausalLM", attn=None,
             points=[(1, 128), (2, 128), (1, 256)], amp=False,
             kw=dict(vocab_size=VOCAB, hidden_size=H, num_hidden_layers=2, state_size=8, expand=2, head_dim=16,
                     num_heads=32, n_groups=2, conv_kernel=4, chunk_size=32, tie_word_embeddings=False,
                     use_cache=True)),
        # Nemotron-H pattern M * M - (Mamba-2, attention, Mamba-2, MLP)
        dict(name="nemotron_h-M*M-", model_type="nemotron_h", cls="NemotronHForCausalLM", attn="sdpa", amp=False,
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, hybrid_override_pattern="M*M-",
                     num_hidden_layers=4, num_attention_heads=HEADS, num_key_value_heads=2, head_dim=64,
                     mamba_num_heads=8, mamba_head_dim=64, ssm_state_size=64, n_groups=1, conv_kernel=4,
                     expand=2, chunk_size=64, mamba_hidden_act="silu", tie_word_embeddings=False,
                     max_position_embeddings=1024, attention_dropout=0.0)),
        # Qwen3-Next: 3 gated-DeltaNet layers : 1 gated full-attention layer, MoE MLPs (torch chunked path)
        dict(name="qwen3_next-3linear1full", model_type="qwen3_next", cls="Qwen3NextForCausalLM", attn="sdpa",
             amp=False,
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, moe_intermediate_size=128,
                     shared_expert_intermediate_size=128, num_hidden_layers=4, num_attention_heads=HEADS,
                     num_key_value_heads=2, head_dim=64, linear_num_value_heads=4, linear_num_key_heads=2,
                     linear_key_head_dim=64, linear_value_head_dim=64, linear_conv_kernel_dim=4, num_experts=8,
                     num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[], full_attention_interval=4,
                     max_position_embeddings=1024, tie_word_embeddings=False, attention_dropout=0.0)),
        # gated DeltaNet dimensions all different: key head 32, value head 48, 2 key / 4 value heads
        dict(name="qwen3_next-dk32-dv48", model_type="qwen3_next", cls="Qwen3NextForCausalLM", attn="sdpa",
             points=[(1, 128), (2, 128), (1, 256)], amp=False,
             kw=dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=512, moe_intermediate_size=128,
                     shared_expert_intermediate_size=128, num_hidden_layers=4, num_attention_heads=HEADS,
                     num_key_value_heads=2, head_dim=64, linear_num_value_heads=4, linear_num_key_heads=2,
                     linear_key_head_dim=32, linear_value_head_dim=48, linear_conv_kernel_dim=4, num_experts=8,
                     num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[], full_attention_interval=4,
                     max_position_embeddings=1024, tie_word_embeddings=False, attention_dropout=0.0)),
    ],
    # Encoder-decoder: seq is the encoder length; the decoder gets seq // 2 tokens (T5) or 32 (Whisper).
    "encdec": [
        dict(name="t5-d256", model_type="t5", cls="T5ForConditionalGeneration", attn=None, encdec="t5",
             kw=dict(vocab_size=VOCAB, d_model=H, d_kv=64, d_ff=512, num_layers=4, num_decoder_layers=4,
                     num_heads=HEADS, dropout_rate=0.0, feed_forward_proj="relu", decoder_start_token_id=0,
                     pad_token_id=0, eos_token_id=1)),
        # T5 v1.1 / flan-t5: gated-GELU feed-forward (`T5DenseGatedActDense`), untied head (no d_model^-0.5 scale;
        # the head gets its own parameter: `untie_head`, hf_blocks.build).
        dict(name="t5-gated-d256", model_type="t5", cls="T5ForConditionalGeneration", attn=None, encdec="t5",
             points=[(1, 128), (2, 128)], untie_head=True,
             kw=dict(vocab_size=VOCAB, d_model=H, d_kv=64, d_ff=512, num_layers=4, num_decoder_layers=4,
                     num_heads=HEADS, dropout_rate=0.0, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                     decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)),
        # Whisper: encoder length = max_source_positions (input features 2x that, conv stride 2); seq below is
        # the encoder length, so each point has its own max_source_positions
        dict(name="whisper-d256", model_type="whisper", cls="WhisperForConditionalGeneration", attn="sdpa",
             encdec="whisper", points=POINTS,
             kw=dict(vocab_size=VOCAB, d_model=H, encoder_layers=2, decoder_layers=2, encoder_attention_heads=HEADS,
                     decoder_attention_heads=HEADS, encoder_ffn_dim=1024, decoder_ffn_dim=1024, num_mel_bins=80,
                     max_target_positions=256, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                     decoder_start_token_id=1, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                     suppress_tokens=None, begin_suppress_tokens=None)),
    ],
}

WHISPER_DEC = 32


def expand():
    """Every (group, case, batch, seq, dtype_mode) to run."""
    out = []
    for group, cases in GROUPS.items():
        for c in cases:
            for b, s in c.get("points", POINTS):
                out.append((group, c, b, s, "fp32"))
            if c.get("amp", True):
                out.append((group, c, AMP_POINT[0], AMP_POINT[1], "amp_bf16"))
    return out


def case_name(group, c, b, s, mode):
    return f"{c['name']}_b{b}_s{s}_{mode}_adamw"
