#!/usr/bin/env python3
"""An independent PyTorch reference for the logit lens and activation patching on encoders and
vision transformers (core/models/run_analyses.h), for the tests.

Usage: encoder_analysis_reference.py JOBS.json  ->  one JSON array on stdout, one result per job.
JOBS.json: {"folder": DIR, "jobs": [{"kind": ..., ...}, ...]} with kinds
  lens    ids                         -> {"logits": [L+1][n][V]}: the MLM head on every hidden state
  patch   clean, corrupt (ids, or .npy paths of preprocessed pixels [3, S, S] for a ViT),
          what heads|resid|heads-by-position, position (encoders), answer, wrong (-1: none)
          -> {"effect": matrix, "clean": m_clean, "corrupt": m_corrupt}
          m = logit(answer) - logit(wrong) (logit(answer) alone when wrong = -1), read from the MLM
          logits at `position` (encoders) or the label logits (ViT)

The models are built as torch.nn modules in float64 with TransformerLens-style hook points
(nn.Identity modules: blocks.l.hook_resid_pre, blocks.l.attn.hook_z, hook_resid_final), and
every intervention is a register_forward_hook, as a TransformerLens user writes it: a head's z
([n, H, d_h], before the output projection) or a row of the stream entering block l replaced by
the clean run's. The equations are Hugging Face's BertForMaskedLM / RobertaForMaskedLM /
DistilBertForMaskedLM and ViTForImageClassification / DeiTForImageClassificationWithTeacher in
eval mode; only the safetensors reader and the small helpers (layer_norm, act, linear) come from
encoder_reference.py, which shares no code with attnscope either. The lens is the convention
attnscope states for BERT: hidden_states[l] (output_hidden_states; post-LN, so no further norm)
through the whole MLM head. Exit 3 when torch is missing, so that the caller can skip.
"""
import json
import math
import os
import sys

try:
    import torch
    from torch import nn
except ImportError:
    sys.exit(3)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from encoder_reference import act, layer_norm, linear, norm_params, prefix, read_npy, read_safetensors  # noqa: E402


class HookPoint(nn.Identity):
    pass


class Block(nn.Module):
    """One encoder block: post-LN (BERT family, names of `names`) or pre-LN (ViT)."""

    def __init__(self, t, names, heads, eps, activation, pre_norm):
        super().__init__()
        self.t, self.names, self.H, self.eps, self.activation, self.pre = t, names, heads, eps, activation, pre_norm
        self.hook_resid_pre = HookPoint()
        self.hook_z = HookPoint()

    def ln(self, x, key):
        return layer_norm(x, *norm_params(self.t, self.names[key]), self.eps)

    def forward(self, x):
        t, nm = self.t, self.names
        n, e = x.shape
        d = e // self.H
        x = self.hook_resid_pre(x)
        y = self.ln(x, "norm1") if self.pre else x
        q, k, v = [linear(t, nm[key], y).reshape(n, self.H, d).transpose(0, 1) for key in ("q", "k", "v")]
        pattern = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)  # [H, n, n]
        z = self.hook_z((pattern @ v).transpose(0, 1))  # [n, H, d]
        attn_out = linear(t, nm["out"], z.reshape(n, e))
        if self.pre:
            x = x + attn_out
            return x + linear(t, nm["down"], act(self.activation, linear(t, nm["up"], self.ln(x, "norm2"))))
        a = self.ln(attn_out + x, "norm1")
        return self.ln(linear(t, nm["down"], act(self.activation, linear(t, nm["up"], a))) + a, "norm2")


class Model(nn.Module):
    def __init__(self, folder):
        super().__init__()
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        t = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.cfg, self.t, self.mt = cfg, t, cfg["model_type"]
        mt = self.mt
        self.vision = mt in ("vit", "deit")
        if self.vision:
            self.p = (mt + ".") if mt + ".embeddings.cls_token" in t else ""
            self.eps = cfg.get("layer_norm_eps", 1e-12)
            L, H, activation = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg.get("hidden_act", "gelu")
            layer = lambda l: {
                "q": f"encoder.layer.{l}.attention.attention.query", "k": f"encoder.layer.{l}.attention.attention.key",
                "v": f"encoder.layer.{l}.attention.attention.value", "out": f"encoder.layer.{l}.attention.output.dense",
                "norm1": f"encoder.layer.{l}.layernorm_before", "norm2": f"encoder.layer.{l}.layernorm_after",
                "up": f"encoder.layer.{l}.intermediate.dense", "down": f"encoder.layer.{l}.output.dense"}
        elif mt == "distilbert":
            self.p = prefix(t, "distilbert")
            self.eps = 1e-12
            L, H, activation = cfg["n_layers"], cfg["n_heads"], cfg.get("activation", "gelu")
            layer = lambda l: {
                "q": f"transformer.layer.{l}.attention.q_lin", "k": f"transformer.layer.{l}.attention.k_lin",
                "v": f"transformer.layer.{l}.attention.v_lin", "out": f"transformer.layer.{l}.attention.out_lin",
                "norm1": f"transformer.layer.{l}.sa_layer_norm", "norm2": f"transformer.layer.{l}.output_layer_norm",
                "up": f"transformer.layer.{l}.ffn.lin1", "down": f"transformer.layer.{l}.ffn.lin2"}
        else:  # bert, roberta
            self.p = prefix(t, "roberta" if mt == "roberta" else "bert")
            self.eps = cfg.get("layer_norm_eps", 1e-12)
            L, H, activation = cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg.get("hidden_act", "gelu")
            layer = lambda l: {
                "q": f"encoder.layer.{l}.attention.self.query", "k": f"encoder.layer.{l}.attention.self.key",
                "v": f"encoder.layer.{l}.attention.self.value", "out": f"encoder.layer.{l}.attention.output.dense",
                "norm1": f"encoder.layer.{l}.attention.output.LayerNorm", "norm2": f"encoder.layer.{l}.output.LayerNorm",
                "up": f"encoder.layer.{l}.intermediate.dense", "down": f"encoder.layer.{l}.output.dense"}
        self.L, self.H, self.activation = L, H, activation
        names = lambda l: {key: self.p + value for key, value in layer(l).items()}
        self.blocks = nn.ModuleList([Block(t, names(l), H, self.eps, activation, self.vision) for l in range(L)])
        self.hook_resid_final = HookPoint()

    # -- the embeddings
    def embed(self, inputs):
        t, p = self.t, self.p
        if self.vision:
            e = self.cfg["hidden_size"]
            w, b = t[p + "embeddings.patch_embeddings.projection.weight"], t[p + "embeddings.patch_embeddings.projection.bias"]
            patches = torch.nn.functional.conv2d(inputs.unsqueeze(0), w, b, stride=self.cfg["patch_size"])
            tokens = [t[p + "embeddings.cls_token"].reshape(1, e)]
            if self.mt == "deit":
                tokens.append(t[p + "embeddings.distillation_token"].reshape(1, e))
            x = torch.cat(tokens + [patches.flatten(2).transpose(1, 2)[0]], 0)
            return x + t[p + "embeddings.position_embeddings"].reshape(-1, e)
        ids, n = inputs, len(inputs)
        if self.mt == "roberta":  # create_position_ids_from_input_ids
            pad = self.cfg.get("pad_token_id", 1)
            mask = torch.tensor([1 if i != pad else 0 for i in ids])
            pos = (torch.cumsum(mask, 0) * mask + pad).tolist()
        else:
            pos = list(range(n))
        x = t[p + "embeddings.word_embeddings.weight"][ids] + t[p + "embeddings.position_embeddings.weight"][pos]
        if self.mt != "distilbert":
            x = x + t[p + "embeddings.token_type_embeddings.weight"][[0] * n]
        return layer_norm(x, *norm_params(t, p + "embeddings.LayerNorm"), self.eps)

    # -- the heads on the stream after the last block
    def mlm(self, x):
        """The whole masked-LM head on rows x [m, E] -> [m, V]."""
        t, p = self.t, self.p
        word = t[p + "embeddings.word_embeddings.weight"]
        if self.mt == "distilbert":
            y = act(self.activation, linear(t, "vocab_transform", x))
            y = layer_norm(y, t["vocab_layer_norm.weight"], t["vocab_layer_norm.bias"], self.eps)
            return y @ t.get("vocab_projector.weight", word).T + t["vocab_projector.bias"]
        if self.mt == "roberta":
            y = act("gelu", linear(t, "lm_head.dense", x))  # RobertaLMHead: erf-GELU always
            y = layer_norm(y, t["lm_head.layer_norm.weight"], t["lm_head.layer_norm.bias"], self.eps)
            return y @ t.get("lm_head.decoder.weight", word).T + t["lm_head.bias"]
        y = act(self.activation, linear(t, "cls.predictions.transform.dense", x))
        y = layer_norm(y, *norm_params(t, "cls.predictions.transform.LayerNorm"), self.eps)
        return y @ t.get("cls.predictions.decoder.weight", word).T + t["cls.predictions.bias"]

    def classify(self, x):
        t, p = self.t, self.p
        h = layer_norm(x, t[p + "layernorm.weight"], t[p + "layernorm.bias"], self.eps)
        if "cls_classifier.weight" in t:
            return (linear(t, "cls_classifier", h[0]) + linear(t, "distillation_classifier", h[1])) / 2
        return linear(t, "classifier", h[0])

    def forward(self, inputs):
        """The stream after the last block (hook_resid_final), [n, E]."""
        x = self.embed(inputs)
        for block in self.blocks:
            x = block(x)
        return self.hook_resid_final(x)

    def hook_points(self):
        out = {}
        for l, b in enumerate(self.blocks):
            out[f"blocks.{l}.hook_resid_pre"] = b.hook_resid_pre
            out[f"blocks.{l}.attn.hook_z"] = b.hook_z
        out["hook_resid_final"] = self.hook_resid_final
        return out

    def resid_name(self, l):
        return "hook_resid_final" if l == self.L else f"blocks.{l}.hook_resid_pre"

    def run_with_hooks(self, inputs, fwd_hooks):
        """fwd_hooks: [(name, fn(activation) -> activation or None)], as TransformerLens."""
        points = self.hook_points()
        handles = [points[name].register_forward_hook(lambda m, i, o, fn=fn: fn(o)) for name, fn in fwd_hooks]
        try:
            return self(inputs)
        finally:
            for h in handles:
                h.remove()

    def run_with_cache(self, inputs):
        cache = {}

        def keep(name):
            def fn(x):
                cache[name] = x.detach().clone()
            return fn

        last = self.run_with_hooks(inputs, [(name, keep(name)) for name in self.hook_points()])
        return last, cache


def lens(model, job):
    _, cache = model.run_with_cache(job["ids"])
    return {"logits": [model.mlm(cache[model.resid_name(l)]).tolist() for l in range(model.L + 1)]}


def patch(model, job):
    if model.vision:
        clean_in, corrupt_in = read_npy(job["clean"]), read_npy(job["corrupt"])
        logits = model.classify
    else:
        clean_in, corrupt_in = job["clean"], job["corrupt"]
        logits = lambda last: model.mlm(last[job["position"]:job["position"] + 1])[0]
    a, b = job["answer"], job["wrong"]
    metric = lambda last: float(logits(last)[a] - (logits(last)[b] if b >= 0 else 0.0))
    clean_last, cache = model.run_with_cache(clean_in)
    m_clean = metric(clean_last)
    m_corrupt = metric(model.run_with_hooks(corrupt_in, []))
    n = cache["hook_resid_final"].shape[0]
    effect = lambda hooks: (metric(model.run_with_hooks(corrupt_in, hooks)) - m_corrupt) / (m_clean - m_corrupt)

    def z_hook(l, h, pos=None):
        def fn(z):
            z = z.clone()
            rows = slice(None) if pos is None else slice(pos, pos + 1)
            z[rows, h] = cache[f"blocks.{l}.attn.hook_z"][rows, h]
            return z
        return [(f"blocks.{l}.attn.hook_z", fn)]

    def resid_hook(l, pos):
        def fn(x):
            x = x.clone()
            x[pos] = cache[model.resid_name(l)][pos]
            return x
        return [(model.resid_name(l), fn)]

    what = job["what"]
    if what == "heads":
        out = [[effect(z_hook(l, h)) for h in range(model.H)] for l in range(model.L)]
    elif what == "heads-by-position":
        out = [[effect(z_hook(l, h, pos)) for pos in range(n)] for l in range(model.L) for h in range(model.H)]
    else:
        out = [[effect(resid_hook(l, pos)) for pos in range(n)] for l in range(model.L + 1)]
    return {"effect": out, "clean": m_clean, "corrupt": m_corrupt}


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    model = Model(spec["folder"])
    results = []
    with torch.no_grad():
        for job in spec["jobs"]:
            results.append({"lens": lens, "patch": patch}[job["kind"]](model, job))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
