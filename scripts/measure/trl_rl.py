#!/usr/bin/env python3
"""TRL DPOTrainer and GRPOTrainer: two optimizer steps of the tiny Llama, every phase of the second measured.

    python trl_rl.py --out records.json [--only SUBSTR]

The trainers' own steps run (issue 15 item 4). Phases are set from the outside, never by rewriting a step:

* DPO (trl/trainer/dpo_trainer.py `_compute_loss`): a forward pre-hook on the policy (and on the reference model when
  there is one) starts `forward` when autograd is on and `ref_forward` when it is off (the reference pass runs under
  `torch.no_grad()`; with PEFT it is the policy with its adapters disabled); a forward hook starts `loss`;
  `accelerator.backward` is wrapped to start `backward`; the callbacks on_pre_optimizer_step / on_optimizer_step
  mark `optimizer` and `zero_grad`.
* GRPO (trl/trainer/grpo_trainer.py): `_generate` is wrapped (phase `generation`: HF `generate` with the policy,
  its KV cache and sampling), `_calculate_rewards` (`reward`: the Python reward function),
  `_get_per_token_logps_and_entropies` under no_grad (`ref_logps` when the reference model or the disabled adapters
  score, `old_logps` otherwise) and with grad (`forward`: the training forward); then `loss`, `backward`, `optimizer`
  as for DPO.

Text datasets of random word ids (an in-memory word-level tokenizer with whitespace splitting; nothing downloaded).
Every record carries its sequence counts and lengths as the trainer saw them (`post_training`).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from harness import env_versions, measure_and_write, optimizer_state_bytes, selected, storage_bytes  # noqa: E402
from hf_peft import SHAPE, llama_config  # noqa: E402
from tracker import StorageTracker, profile_peak_delta  # noqa: E402

PACKAGES = ("trl", "transformers", "peft", "accelerate", "datasets", "numpy")
DPO = dict(pairs=2, prompt=64, completion=192)  # 2 prompts, chosen and rejected of 192 tokens (EOS included)
GRPO = dict(batch=4, generations=4, prompt=64, completion=64)  # 4 completions = 1 prompt x 4 generations
LORA = dict(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


def tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.decoders import WordPiece
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast
    # Words "w2" ... and special tokens that no word contains: Transformers matches added (special) tokens
    # inside words before pre-tokenizing, so digit-string specials ("1") would split "17" into "1", "7".
    vocab = {f"w{i}": i for i in range(2, SHAPE["vocab"])} | {"<pad>": 0, "</s>": 1}
    tok = Tokenizer(WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = WhitespaceSplit()
    tok.decoder = WordPiece(prefix="##", cleanup=False)  # joins words with spaces
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<pad>")


def words(g, n):
    return " ".join(f"w{int(i)}" for i in torch.randint(2, SHAPE["vocab"], (n,), generator=g)) + " "


def dataset(case):
    from datasets import Dataset
    g = torch.Generator().manual_seed(1)
    if case["algo"] == "dpo":
        n = DPO["pairs"] * 2
        # chosen/rejected: completion - 1 words; DPOTrainer appends the EOS token (add_eos)
        return Dataset.from_dict(dict(prompt=[words(g, DPO["prompt"]) for _ in range(n)],
                                      chosen=[words(g, DPO["completion"] - 1) for _ in range(n)],
                                      rejected=[words(g, DPO["completion"] - 1) for _ in range(n)]))
    return Dataset.from_dict(dict(prompt=[words(g, GRPO["prompt"]).strip() for _ in range(8)]))


def reward_len(completions, **_):
    """A Python reward: the number of characters of each completion."""
    return [float(len(c)) for c in completions]


def trainer_for(case, model, ds, callbacks, out_dir):
    common = dict(output_dir=out_dir, max_steps=2, report_to="none", save_strategy="no", logging_steps=1,
                  use_cpu=True, bf16=False, fp16=False, optim="adamw_torch", learning_rate=1e-4,
                  lr_scheduler_type="constant", dataloader_num_workers=0, seed=0, gradient_accumulation_steps=1,
                  max_grad_norm=1.0)
    # The trainers load a full fine-tune's reference model from the policy's checkpoint path
    # (`create_model_from_path(get_config_model_id(model.config))`); a random-init policy has none, so the reference
    # is the same weights as a copy made before training (what loading the checkpoint gives).
    import copy

    import trl.trainer.dpo_trainer as dt
    import trl.trainer.grpo_trainer as gt
    initial = copy.deepcopy(model)
    for mod in (dt, gt):
        mod.create_model_from_path = lambda *_a, **_k: copy.deepcopy(initial)
    peft_config = None
    if case["peft"] == "lora":
        from peft import LoraConfig
        peft_config = LoraConfig(**LORA)
    if case["algo"] == "dpo":
        from trl import DPOConfig, DPOTrainer
        args = DPOConfig(per_device_train_batch_size=DPO["pairs"], max_length=1024, **common)
        return DPOTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer(),
                          peft_config=peft_config, callbacks=callbacks)
    from trl import GRPOConfig, GRPOTrainer
    args = GRPOConfig(per_device_train_batch_size=GRPO["batch"], num_generations=GRPO["generations"],
                      max_completion_length=GRPO["completion"], beta=case["beta"], shuffle_dataset=False,
                      generation_kwargs=dict(min_new_tokens=GRPO["completion"]), **common)
    return GRPOTrainer(model=model, reward_funcs=reward_len, args=args, train_dataset=ds,
                       processing_class=tokenizer(), peft_config=peft_config, callbacks=callbacks)


def name_of(case):
    tail = "lora-qv-r8_drop0" if case["peft"] == "lora" else "full"
    if case["algo"] == "dpo":
        return f"trl-dpo-llama-tiny_p{DPO['pairs']}_s{DPO['prompt']}+{DPO['completion']}_fp32_{tail}_adamw_sdpa_ckpt"
    return (f"trl-grpo-llama-tiny_b{GRPO['batch']}_g{GRPO['generations']}_s{GRPO['prompt']}+{GRPO['completion']}"
            f"_beta{case['beta']}_fp32_{tail}_adamw_sdpa_ckpt")


def body_of(m):
    """The decoder stack (LlamaModel) under a policy, a PEFT wrapper or the reference model."""
    m = m.get_base_model() if hasattr(m, "get_base_model") else m
    return m.model


def install_phases(trainer, tr, case, state):
    """Phase marks from hooks and wrappers (module docstring). Each model pass is split at the decoder stack's end:
    `<kind>forward` (the layers) then `<kind>head` (TRL's fused LM head, `add_fused_lm_head`: on CPU its torch
    fallback tiles of N x 32,768 FP32, which a Triton kernel replaces on CUDA); kind is "" (with autograd),
    "ref_" (the reference model or the disabled adapters) or "old_" (GRPO's old-policy log-probs)."""
    ref = getattr(trainer, "ref_model", None)
    models = [trainer.model] + ([ref] if ref is not None else [])

    def kind():
        if torch.is_grad_enabled():
            return ""
        return state.get("kind", "ref_")

    def body_pre(*_):
        if not state.get("generating"):
            tr.set_phase(kind() + "forward")

    def body_post(*_):
        if not state.get("generating"):
            tr.mark("end_" + tr.phase)
            tr.set_phase(kind() + "head")

    def top_post(*_):
        if not state.get("generating"):
            tr.mark("end_" + tr.phase)
            tr.set_phase("loss" if torch.is_grad_enabled() else kind() + "after")
    for m in models:
        body_of(m).register_forward_pre_hook(body_pre)
        body_of(m).register_forward_hook(body_post)
        m.register_forward_hook(top_post)
    if case["algo"] == "grpo":
        def gen_phase(*_a, **_k):
            state["generating"] = True
            return "generation"
        wrap(trainer, "_generate", tr, gen_phase, state, done=lambda: state.update(generating=False))
        wrap(trainer, "_calculate_rewards", tr, lambda *a, **k: "reward", state)

        def logps_phase(model, *a, **k):
            if torch.is_grad_enabled():
                return "forward"
            state["kind"] = "ref_" if (model is ref and ref is not None) or state.get("adapters_off") else "old_"
            return state["kind"] + "forward"
        wrap(trainer, "_get_per_token_logps_and_entropies", tr, logps_phase, state, after="loss")
        if case["peft"] == "lora":  # the reference pass of a PEFT policy runs inside use_adapter(...)
            import trl.trainer.grpo_trainer as gt
            orig = gt.use_adapter

            class Flag:
                def __init__(self, cm):
                    self.cm = cm

                def __enter__(self):
                    state["adapters_off"] = True
                    return self.cm.__enter__()

                def __exit__(self, *e):
                    state["adapters_off"] = False
                    return self.cm.__exit__(*e)
            gt.use_adapter = lambda *a, **k: Flag(orig(*a, **k))
    acc = trainer.accelerator
    orig_backward = acc.backward

    def backward(loss, **kw):
        tr.mark("end_loss")
        tr.set_phase("backward")
        return orig_backward(loss, **kw)
    acc.backward = backward


def wrap(obj, name, tr, phase_of, state, after=None, done=None):
    orig = getattr(obj, name)

    def wrapped(*a, **k):
        phase = phase_of(*a, **k)
        tr.set_phase(phase)
        out = orig(*a, **k)
        if done is not None:
            done()
        tr.mark("end_" + phase)
        tr.set_phase(after or "after_" + phase)
        return out
    setattr(obj, name, wrapped)


def measure(case):
    import trl
    from transformers import LlamaForCausalLM, TrainerCallback
    t_all = time.time()
    torch.manual_seed(0)
    model = LlamaForCausalLM(llama_config("sdpa"))
    tr = StorageTracker()
    res, check, timings, state = {}, {}, {}, {}

    def opt_of():
        opt = state["trainer"].optimizer
        return getattr(opt, "optimizer", opt)

    def classify(m):
        tr.classify_model(m, opt_of())
        ref = getattr(state["trainer"], "ref_model", None)
        if ref is not None:
            tr.label(list(ref.parameters()), "ref_params")
            tr.label(list(ref.buffers()), "ref_buffers")

    class Phases(TrainerCallback):
        def on_step_begin(self, a, st, c, **kw):
            name = f"step{st.global_step + 1}"
            state["name"] = name
            state["t0"] = time.time()
            state["prof"] = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
            state["prof"].__enter__()
            tr.begin_region(name)
            classify(kw["model"])
            tr.mark("start")

        def on_pre_optimizer_step(self, a, st, c, **kw):
            classify(kw["model"])
            tr.mark("end_backward")
            tr.set_phase("optimizer")

        def on_optimizer_step(self, a, st, c, **kw):
            classify(kw["model"])
            tr.mark("end_optimizer")
            tr.set_phase("zero_grad")

        def on_step_end(self, a, st, c, **kw):
            tr.mark("end_step")
            r = tr.end_region()
            state["prof"].__exit__(None, None, None)
            name = state["name"]
            timings[name] = round(time.time() - state["t0"], 2)
            ap, n = profile_peak_delta(state["prof"])
            check[name] = dict(allocator_peak_delta=ap, tracker_peak_delta=r["peak_total"] - r["start_total"],
                               diff_bytes=ap - (r["peak_total"] - r["start_total"]), n_alloc_events=n)
            res[name] = r

    trainer = trainer_for(case, model, dataset(case), [Phases()], tempfile.mkdtemp(prefix="trl-rl-"))
    state["trainer"] = trainer
    install_phases(trainer, tr, case, state)
    shapes = {}
    orig_cl = trainer.compute_loss

    def compute_loss(m, inputs, *a, **k):
        shapes.update({k2: list(v.shape) for k2, v in inputs.items() if isinstance(v, torch.Tensor)})
        return orig_cl(m, inputs, *a, **k)
    trainer.compute_loss = compute_loss
    with tr:
        trainer.train()
    m = trainer.model
    named = dict(m.named_parameters())
    n_params = sum(p.numel() for p in named.values())
    n_emb = sum(p.numel() for n, p in named.items() if "embed_tokens" in n)
    n_head = sum(p.numel() for n, p in named.items() if "lm_head" in n)
    ref = getattr(trainer, "ref_model", None)
    a = trainer.args
    settings = dict(trainer=type(trainer).__name__, peft=case["peft"], max_steps=2,
                    per_device_train_batch_size=a.per_device_train_batch_size, optim="adamw_torch", max_grad_norm=1.0,
                    use_cpu=True, gradient_checkpointing=bool(a.gradient_checkpointing),
                    gradient_checkpointing_kwargs=a.gradient_checkpointing_kwargs,
                    n_params_trainable=sum(p.numel() for p in named.values() if p.requires_grad),
                    ref_model="separate copy" if ref is not None else (
                        "policy with adapters disabled" if case["peft"] == "lora" and (
                            case["algo"] == "dpo" or case.get("beta", 0) != 0) else "none"),
                    ref_param_bytes=storage_bytes(ref.parameters()) if ref is not None else 0,
                    batch_shapes=shapes)
    if case["peft"] == "lora":
        settings.update({k: v for k, v in LORA.items() if k != "task_type"})
    if case["algo"] == "dpo":
        post = dict(algorithm="dpo", pairs=DPO["pairs"], sequences=2 * DPO["pairs"], prompt_tokens=DPO["prompt"],
                    completion_tokens=DPO["completion"], beta=a.beta, loss_type=a.loss_type,
                    precompute_ref_log_probs=a.precompute_ref_log_probs, max_length=a.max_length)
        seq, batch = DPO["prompt"] + DPO["completion"], 2 * DPO["pairs"]
    else:
        post = dict(algorithm="grpo", sequences=GRPO["batch"], num_generations=GRPO["generations"],
                    prompt_tokens=GRPO["prompt"], completion_tokens=GRPO["completion"], beta=a.beta,
                    loss_type=a.loss_type, num_iterations=a.num_iterations,
                    steps_per_generation=a.steps_per_generation, generation="transformers generate",
                    cache_implementation=a.cache_implementation, temperature=a.temperature, use_vllm=a.use_vllm,
                    reward="Python function: len(completion text)")
        seq, batch = GRPO["prompt"] + GRPO["completion"], GRPO["batch"]
    ckpt = bool(a.gradient_checkpointing)
    return dict(
        name=name_of(case),
        config=dict(model="llama-tiny", batch=batch, seq=seq, dtype_mode="fp32", optimizer="adamw", foreach=True,
                    checkpointing=ckpt, attn_impl="sdpa", dropout=False, dropout_kernel="native", inference=False),
        framework=dict(name="trl", version=trl.__version__, settings=settings),
        post_training=post,
        family="llama", n_layers=SHAPE["n_layers"], hidden=SHAPE["hidden"], heads=SHAPE["heads"],
        kv_heads=SHAPE["kv_heads"], head_dim=SHAPE["hidden"] // SHAPE["heads"], ffn=SHAPE["ffn"], vocab=SHAPE["vocab"],
        max_positions=SHAPE["max_positions"], tied_embeddings=False, mlp="swiglu", norm="rmsnorm", dropout_p=0.0,
        dropout_kernel="native", seq=seq, batch=batch, dtype_mode="fp32", param_dtype="float32", optimizer="adamw",
        optimizer_foreach=True, checkpointing=ckpt, checkpointing_kwargs=a.gradient_checkpointing_kwargs,
        attn_impl="sdpa", n_params=n_params, n_params_embeddings=n_emb, n_params_head=n_head,
        n_params_other=n_params - n_emb - n_head, param_bytes=storage_bytes(named.values()),
        optimizer_state_bytes=optimizer_state_bytes(opt_of()), train=res, inference=None,
        attention_ops_seen=dict(tr.op_counts), timings_s=timings, allocator_check=check,
        wall_s=round(time.time() - t_all, 1), env=env_versions(PACKAGES),
        attention_kernel={k: "sdpa_flash_cpu" for k in res},
    )


CASES = (dict(algo="dpo", peft="none"), dict(algo="dpo", peft="lora"),
         dict(algo="grpo", peft="none", beta=0.0), dict(algo="grpo", peft="none", beta=0.04),
         dict(algo="grpo", peft="lora", beta=0.04))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only")
    a = ap.parse_args()
    torch.set_num_threads(2)
    cases = selected(CASES, name_of, a.only)
    measure_and_write(a.out, [(name_of(c), lambda c=c: measure(c)) for c in cases])


if __name__ == "__main__":
    main()
