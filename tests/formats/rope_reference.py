#!/usr/bin/env python3
"""RoPE references for the tests, written from transformers' modeling_rope_utils.py
(_compute_default_rope_parameters, _compute_linear_scaling_rope_parameters,
_compute_dynamic_ntk_parameters, _compute_yarn_parameters, _compute_longrope_parameters,
_compute_llama3_parameters, and RotaryEmbeddingConfigMixin.standardize_rope_params for
where each value comes from). transformers is not installed here; these are its formulas in
float64, sharing no code with attnscope.

Usage:
  rope_reference.py golden                 -> tests/data/rope/golden.json on stdout: for every
                                              case, the config.json keys, the length, the
                                              inverse frequencies and the attention factor
  rope_reference.py forward ID,ID,... DIR [ID,ID,... DIR ...] -> one JSON line per folder:
                                              {"attention": [L][H][n][n], "logits": [V]}
     (llama and gpt_neox folders, every rope type; exit 3 when torch is missing)
"""
import json
import math
import os
import sys


def rope_parameters(cfg):
    """(theta, rope_type, params, partial_rotary_factor) as transformers 5 standardises them."""
    neox = cfg.get("model_type") == "gpt_neox"
    params = dict(cfg.get("rope_scaling") or cfg.get("rope_parameters") or {})
    if neox:
        theta = params.get("rope_theta", cfg.get("rotary_emb_base", cfg.get("rope_theta", 10000.0)))
        partial = params.get("partial_rotary_factor",
                             cfg.get("rotary_pct", cfg.get("partial_rotary_factor", 0.25)))
    else:
        theta = params.get("rope_theta", cfg.get("rope_theta", 10000.0))
        partial = params.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type in ("llama3", "yarn", "longrope"):
        if "original_max_position_embeddings" in cfg:  # Phi-3 keeps it at the top level
            params["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
        else:
            params.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
    return theta, rope_type, params, partial


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def inv_freq_and_attention_factor(cfg, seq_len):
    """transformers' ROPE_INIT_FUNCTIONS[rope_type](config, seq_len=seq_len), in float64, for
    a forward pass over seq_len tokens (dynamic and longrope depend on it)."""
    base, rope_type, p, partial = rope_parameters(cfg)
    dim = int(head_dim(cfg) * partial)
    default = [1.0 / (base ** (i / dim)) for i in range(0, dim, 2)]
    if rope_type == "default":
        return default, 1.0
    if rope_type == "linear":
        return [f / p["factor"] for f in default], 1.0
    if rope_type == "dynamic":
        max_pos = cfg["max_position_embeddings"]
        factor = p["factor"]
        seq = max(seq_len, max_pos)
        base = base * ((factor * seq / max_pos) - (factor - 1)) ** (dim / (dim - 2))
        return [1.0 / (base ** (i / dim)) for i in range(0, dim, 2)], 1.0
    if rope_type == "yarn":
        factor = p.get("factor")
        original = p["original_max_position_embeddings"]
        if factor is None:
            factor = cfg["max_position_embeddings"] / original
        attention_factor = p.get("attention_factor")
        mscale, mscale_all_dim = p.get("mscale"), p.get("mscale_all_dim")

        def get_mscale(scale, m=1):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if attention_factor is None:
            if mscale and mscale_all_dim:
                attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
            else:
                attention_factor = get_mscale(factor)
        beta_fast = p.get("beta_fast") or 32
        beta_slow = p.get("beta_slow") or 1

        def correction_dim(rotations):
            return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if p.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        out = []
        for i, extrapolation in enumerate(default):
            ramp = min(max((i - low) / (high - low), 0.0), 1.0)
            extrapolation_factor = 1 - ramp
            interpolation = extrapolation / factor
            out.append(interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor)
        return out, attention_factor
    if rope_type == "longrope":
        original = p["original_max_position_embeddings"]
        factor = p.get("factor")
        if factor is None:
            factor = cfg["max_position_embeddings"] / original
        attention_factor = p.get("attention_factor")
        if attention_factor is None:
            attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        ext = p["long_factor"] if seq_len and seq_len > original else p["short_factor"]
        return [1.0 / (e * base ** (i / dim)) for e, i in zip(ext, range(0, dim, 2))], attention_factor
    if rope_type == "llama3":
        factor, low_ff, high_ff = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
        old_context = p["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old_context / low_ff, old_context / high_ff
        out = []
        for f in default:
            wavelen = 2 * math.pi / f
            g = f / factor if wavelen > low_wavelen else f
            if not (wavelen < high_wavelen) and not (wavelen > low_wavelen):
                smooth = (old_context / wavelen - low_ff) / (high_ff - low_ff)
                g = (1 - smooth) * g / factor + smooth * g
            out.append(g)
        return out, 1.0
    raise ValueError("unknown rope type " + rope_type)


# The cases of tests/data/rope/golden.json: config.json keys (the rope keys and the sizes the
# formulas read) and a sequence length.
def cases():
    small = {"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 256}
    llama31 = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072}
    longrope = {"short_factor": [1.0 + 0.05 * i for i in range(8)],
                "long_factor": [1.0 + 0.75 * i for i in range(8)]}
    out = [
        ("default", dict(small, rope_theta=10000.0), 10),
        ("default_rope_parameters", dict(small, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}), 10),
        ("linear", dict(small, rope_scaling={"type": "linear", "factor": 4.0}), 10),
        ("dynamic_short", dict(small, rope_scaling={"type": "dynamic", "factor": 2.0}), 200),
        ("dynamic_long", dict(small, rope_scaling={"rope_type": "dynamic", "factor": 2.0}), 400),
        ("yarn", dict(small, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                           "original_max_position_embeddings": 64}), 10),
        ("yarn_betas_untruncated", dict(small, rope_theta=50000.0, rope_scaling={
            "rope_type": "yarn", "factor": 8.0, "beta_fast": 16, "beta_slow": 2, "truncate": False,
            "original_max_position_embeddings": 32}), 10),
        ("yarn_mscale", dict(small, rope_scaling={"rope_type": "yarn", "factor": 40.0, "mscale": 0.707,
                                                  "mscale_all_dim": 1.0,
                                                  "original_max_position_embeddings": 4096}), 10),
        ("yarn_attention_factor_from_max", dict(small, rope_parameters={
            "rope_type": "yarn", "rope_theta": 1000000.0, "factor": None, "attention_factor": 1.25,
            "original_max_position_embeddings": 64}), 10),
        ("longrope_short", dict(small, original_max_position_embeddings=128,
                                rope_scaling=dict(longrope, type="longrope")), 100),
        ("longrope_long", dict(small, original_max_position_embeddings=128,
                               rope_scaling=dict(longrope, type="longrope")), 200),
        ("longrope_factor", dict(small, rope_parameters=dict(longrope, rope_type="longrope", factor=4.0,
                                                             original_max_position_embeddings=64)), 100),
        ("llama3_8b", dict(llama31, rope_theta=500000.0, rope_scaling={
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}), 10),
        ("llama3_small", dict(small, rope_parameters={
            "rope_type": "llama3", "rope_theta": 10000.0, "factor": 4.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 200}), 10),
        ("partial_half", dict(small, partial_rotary_factor=0.5, rope_theta=10000.0), 10),
    ]
    return [{"name": n, "config": c, "length": length} for n, c, length in out]


def golden():
    result = []
    for case in cases():
        inv, attention = inv_freq_and_attention_factor(case["config"], case["length"])
        result.append(dict(case, inv_freq=inv, attention_factor=attention))
    json.dump({"source": "tests/formats/rope_reference.py golden", "cases": result}, sys.stdout, indent=1)
    sys.stdout.write("\n")


def forward(ids, folder):
    import torch
    from hf_reference import read_checkpoint  # the safetensors reader only

    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    w = read_checkpoint(folder)
    n = len(ids)
    H, E = cfg["num_attention_heads"], cfg["hidden_size"]
    d = E // H
    neox = cfg["model_type"] == "gpt_neox"
    inv, attention_factor = inv_freq_and_attention_factor(cfg, n)
    dims = 2 * len(inv)
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), torch.tensor(inv, dtype=torch.float64))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos() * attention_factor, emb.sin() * attention_factor

    def rotate_half(x):
        return torch.cat((-x[..., dims // 2:], x[..., :dims // 2]), dim=-1)

    def rotary(x):  # x [heads, n, d]: the first dims rotated (apply_rotary_pos_emb)
        rot, rest = x[..., :dims], x[..., dims:]
        return torch.cat((rot * cos + rotate_half(rot) * sin, rest), dim=-1)

    def attend(q, k, v):
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        return weights, weights @ v

    ids_t = torch.tensor(ids)
    attentions = []
    if neox:
        eps = cfg.get("layer_norm_eps", 1e-5)
        ln = lambda t, name: torch.nn.functional.layer_norm(t, (E,), w[name + ".weight"], w[name + ".bias"], eps)
        lin = lambda t, name: t @ w[name + ".weight"].T + w[name + ".bias"]
        gelu = lambda t: 0.5 * t * (1 + torch.erf(t / math.sqrt(2)))
        x = w["gpt_neox.embed_in.weight"][ids_t]
        for l in range(cfg["num_hidden_layers"]):
            h = f"gpt_neox.layers.{l}."
            qkv = lin(ln(x, h + "input_layernorm"), h + "attention.query_key_value")
            qkv = qkv.reshape(n, H, 3 * d).transpose(0, 1)
            q, k, v = rotary(qkv[..., :d]), rotary(qkv[..., d:2 * d]), qkv[..., 2 * d:]
            weights, ctx = attend(q, k, v)
            attentions.append(weights)
            o = lin(ctx.transpose(0, 1).reshape(n, E), h + "attention.dense")
            m = lin(gelu(lin(ln(x, h + "post_attention_layernorm"), h + "mlp.dense_h_to_4h")), h + "mlp.dense_4h_to_h")
            x = x + o + m  # use_parallel_residual
        x = ln(x, "gpt_neox.final_layer_norm")
        head = w["embed_out.weight"]
    else:
        Hkv = cfg.get("num_key_value_heads") or H
        eps = cfg.get("rms_norm_eps", 1e-6)
        rms = lambda t, name: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * w[name + ".weight"]
        lin = lambda t, name: t @ w[name + ".weight"].T
        x = w["model.embed_tokens.weight"][ids_t]
        for l in range(cfg["num_hidden_layers"]):
            h = f"model.layers.{l}."
            a = rms(x, h + "input_layernorm")
            q = rotary(lin(a, h + "self_attn.q_proj").reshape(n, H, d).transpose(0, 1))
            k = rotary(lin(a, h + "self_attn.k_proj").reshape(n, Hkv, d).transpose(0, 1))
            v = lin(a, h + "self_attn.v_proj").reshape(n, Hkv, d).transpose(0, 1)
            k, v = k.repeat_interleave(H // Hkv, dim=0), v.repeat_interleave(H // Hkv, dim=0)
            weights, ctx = attend(q, k, v)
            attentions.append(weights)
            x = x + lin(ctx.transpose(0, 1).reshape(n, E), h + "self_attn.o_proj")
            a = rms(x, h + "post_attention_layernorm")
            x = x + lin(torch.nn.functional.silu(lin(a, h + "mlp.gate_proj")) * lin(a, h + "mlp.up_proj"),
                        h + "mlp.down_proj")
        x = rms(x, "model.norm")
        head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings", False) else w["lm_head.weight"]
    logits = x[-1] @ head.T
    json.dump({"attention": [a.tolist() for a in attentions], "logits": logits.tolist()}, sys.stdout)
    sys.stdout.write("\n")


def main():
    if sys.argv[1] == "golden":
        golden()
        return
    try:
        import torch  # noqa: F401
    except ImportError:  # the C++ test skips on this exit code
        sys.exit(3)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    args = sys.argv[2:]
    for k in range(0, len(args) - 1, 2):  # pairs: ids, folder (one torch import for all)
        forward([int(s) for s in args[k].split(",")], args[k + 1])


if __name__ == "__main__":
    main()
