#!/usr/bin/env python3
"""An independent PyTorch forward pass of a Hugging Face decoder folder, for the tests.

Usage: hf_reference.py ID,ID,... FOLDER [FOLDER ...]  ->  one JSON line per folder on stdout:
  {"attention": [L][H][n][n], "logits": [V]}   (logits after the last token)
(several folders per run, because importing torch takes seconds)

Written from the equations of Hugging Face's modelling code (GPT2LMHeadModel,
LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM, GPTNeoXForCausalLM, and
Qwen3ForCausalLM / Gemma2ForCausalLM / Phi3ForCausalLM from modeling_qwen3, modeling_gemma2
and modeling_phi3) in eval mode,
in float64, with plain torch ops: it does not use `transformers` (not installed) and shares
no code with attnscope. Reads config.json and the safetensors checkpoint (single or sharded
through model.safetensors.index.json; F32 / F16 / BF16) with its own small parser.
Exit 3 when torch is missing, so that the caller can skip.
"""
import json
import math
import os
import struct
import sys

try:
    import torch
except ImportError:  # the C++ test skips on this exit code
    sys.exit(3)

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    start = 8 + length
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[start + begin:start + end])
        t = torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]) if raw else torch.zeros(0)
        out[name] = t.reshape(entry["shape"]).to(torch.float64)
    return out


def read_checkpoint(folder):
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        index = json.load(f)
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        out.update(read_safetensors(os.path.join(folder, shard)))
    return out


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotary(q, k, dims, theta, factor):
    """q [H, n, d], k [H_kv, n, d]: the first `dims` of each head rotated (apply_rotary_pos_emb)."""
    n = q.shape[1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, dims, 2, dtype=torch.float64) / dims))
    t = torch.arange(n, dtype=torch.float64) / factor
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()

    def apply(x):
        rot, rest = x[..., :dims], x[..., dims:]
        return torch.cat((rot * cos + rotate_half(rot) * sin, rest), dim=-1)

    return apply(q), apply(k)


def attention(q, k, v, window, scaling=None, softcap=None):
    """q [H, n, d], k/v [H, n, d] (KV heads already repeated). Returns weights, context.
    scaling: the score factor (default 1/sqrt(d)); softcap: Gemma 2's tanh capping of the
    scaled scores, before the mask (eager_attention_forward)."""
    n, d = q.shape[1], q.shape[2]
    scores = q @ k.transpose(-1, -2) * (scaling if scaling is not None else 1 / math.sqrt(d))
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(n).unsqueeze(0)
    visible = j <= i
    if window:
        visible = visible & (i - j < window)
    scores = scores.masked_fill(~visible, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights, weights @ v


def newer_families(cfg, w, kind, ids_t, attentions):
    """Qwen3, Gemma 2 and Phi-3. Returns the final-normed states, the head, the final cap."""
    n = ids_t.shape[0]
    H, E = cfg["num_attention_heads"], cfg["hidden_size"]
    Hkv = cfg.get("num_key_value_heads") or H
    d = cfg.get("head_dim") or E // H
    eps = cfg.get("rms_norm_eps", 1e-5 if kind == "phi3" else 1e-6)
    theta = cfg.get("rope_theta", 10000.0)
    plus_one = kind == "gemma2"  # Gemma2RMSNorm: x / rms * (1 + w)

    def rms(t, name):
        weight = w[name + ".weight"]
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * ((1 + weight) if plus_one else weight)

    def lin(t, name):
        out = t @ w[name + ".weight"].T
        return out + w[name + ".bias"] if name + ".bias" in w else out

    silu = lambda t: t / (1 + torch.exp(-t))
    gelu_tanh = lambda t: 0.5 * t * (1 + torch.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3)))
    x = w["model.embed_tokens.weight"][ids_t]
    if kind == "gemma2":  # normalizer = torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype)
        x = x * torch.tensor(E ** 0.5, dtype=torch.float32).to(torch.float64)
    scaling = cfg.get("query_pre_attn_scalar", 256) ** -0.5 if kind == "gemma2" else None
    softcap = cfg.get("attn_logit_softcapping", 50.0) if kind == "gemma2" else None
    rot = int(d * cfg.get("partial_rotary_factor", 1.0)) if kind == "phi3" else d
    for l in range(cfg["num_hidden_layers"]):
        h = f"model.layers.{l}."
        a = rms(x, h + "input_layernorm")
        if kind == "phi3":  # qkv_proj rows: q | k | v
            qkv = lin(a, h + "self_attn.qkv_proj")
            q, k, v = qkv[:, :H * d], qkv[:, H * d:(H + Hkv) * d], qkv[:, (H + Hkv) * d:]
        else:
            q, k, v = (lin(a, h + "self_attn." + p + "_proj") for p in "qkv")
        q = q.reshape(n, H, d)
        k = k.reshape(n, Hkv, d)
        if kind == "qwen3":  # q_norm / k_norm over head_dim, before the rotary
            q, k = rms(q, h + "self_attn.q_norm"), rms(k, h + "self_attn.k_norm")
        q, k = rotary(q.transpose(0, 1), k.transpose(0, 1), rot, theta, 1.0)
        v = v.reshape(n, Hkv, d).transpose(0, 1)
        k = k.repeat_interleave(H // Hkv, dim=0)
        v = v.repeat_interleave(H // Hkv, dim=0)
        if kind == "gemma2":
            window = cfg.get("sliding_window", 4096) if l % 2 == 0 else 0  # is_sliding on even layers
        else:
            window = (cfg.get("sliding_window") or 0) if kind == "phi3" else 0
        weights, ctx = attention(q, k, v, window, scaling, softcap)
        attentions.append(weights)
        o = lin(ctx.transpose(0, 1).reshape(n, H * d), h + "self_attn.o_proj")
        if kind == "gemma2":
            x = x + rms(o, h + "post_attention_layernorm")
            a = rms(x, h + "pre_feedforward_layernorm")
            m = lin(gelu_tanh(lin(a, h + "mlp.gate_proj")) * lin(a, h + "mlp.up_proj"), h + "mlp.down_proj")
            x = x + rms(m, h + "post_feedforward_layernorm")
            continue
        x = x + o
        a = rms(x, h + "post_attention_layernorm")
        if kind == "phi3":  # gate_up_proj rows: gate | up
            gate, up = lin(a, h + "mlp.gate_up_proj").chunk(2, dim=-1)
            x = x + lin(up * silu(gate), h + "mlp.down_proj")
        else:
            x = x + lin(silu(lin(a, h + "mlp.gate_proj")) * lin(a, h + "mlp.up_proj"), h + "mlp.down_proj")
    x = rms(x, "model.norm")
    tied = cfg.get("tie_word_embeddings", kind == "gemma2")
    head = w["model.embed_tokens.weight"] if tied else w["lm_head.weight"]
    final_cap = cfg.get("final_logit_softcapping", 30.0) if kind == "gemma2" else None
    return x, head, final_cap


def run(folder, ids):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    w = read_checkpoint(folder)
    kind = cfg.get("model_type", "gpt2")
    n = len(ids)
    ids_t = torch.tensor(ids)
    attentions = []

    if kind == "gpt2":
        p = "transformer." if "transformer.wte.weight" in w else ""
        H, E = cfg["n_head"], cfg["n_embd"]
        eps = cfg.get("layer_norm_epsilon", 1e-5)
        x = w[p + "wte.weight"][ids_t] + w[p + "wpe.weight"][:n]
        ln = lambda t, name: torch.nn.functional.layer_norm(t, (E,), w[name + ".weight"], w[name + ".bias"], eps)
        gelu = lambda t: 0.5 * t * (1 + torch.tanh(math.sqrt(2 / math.pi) * (t + 0.044715 * t ** 3)))
        for l in range(cfg["n_layer"]):
            h = f"{p}h.{l}."
            a = ln(x, h + "ln_1")
            qkv = a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"]  # Conv1D
            q, k, v = qkv.split(E, dim=-1)
            heads = lambda t: t.reshape(n, H, E // H).transpose(0, 1)
            weights, ctx = attention(heads(q), heads(k), heads(v), 0)
            attentions.append(weights)
            x = x + ctx.transpose(0, 1).reshape(n, E) @ w[h + "attn.c_proj.weight"] + w[h + "attn.c_proj.bias"]
            m = gelu(ln(x, h + "ln_2") @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"])
            x = x + m @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
        x = ln(x, p + "ln_f")
        head = w[p + "wte.weight"] if cfg.get("tie_word_embeddings", True) else w["lm_head.weight"]

    elif kind == "gpt_neox":
        H, E = cfg["num_attention_heads"], cfg["hidden_size"]
        d = E // H
        dims = int(d * cfg.get("rotary_pct", 0.25))
        theta = cfg.get("rotary_emb_base", cfg.get("rope_theta", 10000))
        eps = cfg.get("layer_norm_eps", 1e-5)
        ln = lambda t, name: torch.nn.functional.layer_norm(t, (E,), w[name + ".weight"], w[name + ".bias"], eps)
        lin = lambda t, name: t @ w[name + ".weight"].T + w[name + ".bias"]
        x = w["gpt_neox.embed_in.weight"][ids_t]
        for l in range(cfg["num_hidden_layers"]):
            h = f"gpt_neox.layers.{l}."
            qkv = lin(ln(x, h + "input_layernorm"), h + "attention.query_key_value")
            qkv = qkv.reshape(n, H, 3 * d).transpose(0, 1)  # [H, n, 3d]
            q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
            q, k = rotary(q, k, dims, theta, 1.0)
            weights, ctx = attention(q, k, v, 0)
            attentions.append(weights)
            o = lin(ctx.transpose(0, 1).reshape(n, E), h + "attention.dense")
            gelu = lambda t: 0.5 * t * (1 + torch.erf(t / math.sqrt(2)))
            mlp = lambda t: lin(gelu(lin(t, h + "mlp.dense_h_to_4h")), h + "mlp.dense_4h_to_h")
            if cfg.get("use_parallel_residual", True):
                x = x + o + mlp(ln(x, h + "post_attention_layernorm"))
            else:
                x = x + o
                x = x + mlp(ln(x, h + "post_attention_layernorm"))
        x = ln(x, "gpt_neox.final_layer_norm")
        head = w["gpt_neox.embed_in.weight"] if cfg.get("tie_word_embeddings", False) else w["embed_out.weight"]

    elif kind in ("llama", "mistral", "qwen2"):
        H, E = cfg["num_attention_heads"], cfg["hidden_size"]
        Hkv = cfg.get("num_key_value_heads") or H
        d = E // H
        eps = cfg.get("rms_norm_eps", 1e-6)
        theta = cfg.get("rope_theta", 10000.0)
        scaling = cfg.get("rope_scaling") or {}
        factor = scaling.get("factor", 1.0) if scaling.get("type", scaling.get("rope_type")) == "linear" else 1.0
        window = cfg.get("sliding_window") if kind == "mistral" else 0

        def rms(t, name):
            return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * w[name + ".weight"]

        def lin(t, name):
            out = t @ w[name + ".weight"].T
            return out + w[name + ".bias"] if name + ".bias" in w else out

        x = w["model.embed_tokens.weight"][ids_t]
        for l in range(cfg["num_hidden_layers"]):
            h = f"model.layers.{l}."
            a = rms(x, h + "input_layernorm")
            q = lin(a, h + "self_attn.q_proj").reshape(n, H, d).transpose(0, 1)
            k = lin(a, h + "self_attn.k_proj").reshape(n, Hkv, d).transpose(0, 1)
            v = lin(a, h + "self_attn.v_proj").reshape(n, Hkv, d).transpose(0, 1)
            q, k = rotary(q, k, d, theta, factor)
            k = k.repeat_interleave(H // Hkv, dim=0)  # repeat_kv
            v = v.repeat_interleave(H // Hkv, dim=0)
            weights, ctx = attention(q, k, v, window)
            attentions.append(weights)
            x = x + lin(ctx.transpose(0, 1).reshape(n, E), h + "self_attn.o_proj")
            a = rms(x, h + "post_attention_layernorm")
            silu = lambda t: t / (1 + torch.exp(-t))
            x = x + lin(silu(lin(a, h + "mlp.gate_proj")) * lin(a, h + "mlp.up_proj"), h + "mlp.down_proj")
        x = rms(x, "model.norm")
        head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    elif kind in ("qwen3", "gemma2", "phi3"):
        x, head, final_cap = newer_families(cfg, w, kind, ids_t, attentions)
    else:
        print(f"unknown model_type {kind}", file=sys.stderr)
        sys.exit(2)

    logits = x[-1] @ head.T
    if kind in ("qwen3", "gemma2", "phi3") and final_cap:
        logits = torch.tanh(logits / final_cap) * final_cap  # Gemma2ForCausalLM
    json.dump({"attention": [a.tolist() for a in attentions], "logits": logits.tolist()}, sys.stdout)
    sys.stdout.write("\n")


def main():
    ids = [int(s) for s in sys.argv[1].split(",")]
    for folder in sys.argv[2:]:
        run(folder, ids)


if __name__ == "__main__":
    main()
