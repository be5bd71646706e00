#!/usr/bin/env python3
"""An independent PyTorch reference for attnscope's analyses (core/models/analysis.h), for the tests.

Usage: analysis_reference.py JOBS.json  ->  one JSON array on stdout, one result per job.
JOBS.json: {"folder": DIR, "jobs": [{"kind": ..., ...}, ...]} with kinds
  ablate       ids, heads [[l, h], ...], mode zero|mean, optional dataset [[ids], ...] (mode mean:
               z = its mean over every position of every dataset prompt) -> clean/ablated logits (last), losses
  patch        clean, corrupt, answer, wrong, what heads|resid -> effect matrix, m_clean, m_corrupt
  lens         ids, top, optional scale own|final          -> [L+1][n] top ids and logits
  attribution  ids, answer, wrong                          -> [L][H], metric
  scores       ids, exclude_bos, exclude_current           -> prev, dup, induction, sink, entropy
  repeat       ids (2N), length N                          -> [L][H]

A GPT-2 (Hugging Face GPT2LMHeadModel equations, eval mode) built as torch.nn modules in float64
with TransformerLens-style hook points (nn.Identity modules: blocks.l.hook_resid_pre, hook_pattern,
hook_z, ln_final.hook_scale), and every intervention made by register_forward_hook, as a
TransformerLens user writes it. It shares no code with attnscope; the head-detector templates follow
transformer_lens/head_detector.py (tril, roll). Exit 3 when torch is missing, so that the caller can skip.
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
from hf_reference import read_checkpoint  # noqa: E402  (the safetensors reader only)


class HookPoint(nn.Identity):
    pass


class Block(nn.Module):
    def __init__(self, w, p, H, E, eps):
        super().__init__()
        self.w, self.p, self.H, self.E, self.eps = w, p, H, E, eps
        self.hook_resid_pre = HookPoint()
        self.hook_pattern = HookPoint()
        self.hook_z = HookPoint()

    def ln(self, x, name):
        return torch.nn.functional.layer_norm(x, (self.E,), self.w[self.p + name + ".weight"],
                                              self.w[self.p + name + ".bias"], self.eps)

    def forward(self, x):
        w, p, H, E = self.w, self.p, self.H, self.E
        n, d = x.shape[0], E // H
        x = self.hook_resid_pre(x)
        qkv = self.ln(x, "ln_1") @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = [t.reshape(n, H, d).transpose(0, 1) for t in qkv.split(E, dim=-1)]
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        scores = scores.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
        pattern = self.hook_pattern(torch.softmax(scores, dim=-1))  # [H, n, n]
        z = self.hook_z((pattern @ v).transpose(0, 1))  # [n, H, d]
        x = x + z.reshape(n, E) @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = self.ln(x, "ln_2") @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        h = 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
        return x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]


class FinalNorm(nn.Module):
    def __init__(self, weight, bias, eps):
        super().__init__()
        self.weight, self.bias, self.eps = weight, bias, eps
        self.hook_scale = HookPoint()

    def forward(self, x):
        x = x - x.mean(-1, keepdim=True)
        scale = self.hook_scale((x.pow(2).mean(-1, keepdim=True) + self.eps).sqrt())
        return x / scale * self.weight + self.bias


class Gpt2(nn.Module):
    def __init__(self, folder):
        super().__init__()
        with open(os.path.join(folder, "config.json")) as f:
            cfg = json.load(f)
        w = read_checkpoint(folder)
        p = "transformer." if "transformer.wte.weight" in w else ""
        self.H, self.E, self.L = cfg["n_head"], cfg["n_embd"], cfg["n_layer"]
        eps = cfg.get("layer_norm_epsilon", 1e-5)
        self.wte, self.wpe = w[p + "wte.weight"], w[p + "wpe.weight"]
        self.W_O = [w[f"{p}h.{l}.attn.c_proj.weight"] for l in range(self.L)]  # [E, E], rows = z dims
        self.blocks = nn.ModuleList([Block(w, f"{p}h.{l}.", self.H, self.E, eps) for l in range(self.L)])
        self.hook_resid_final = HookPoint()
        self.ln_final = FinalNorm(w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps)
        self.W_U = self.wte.T  # tied: [E, V]

    def forward(self, ids):
        x = self.wte[torch.tensor(ids)] + self.wpe[: len(ids)]
        for block in self.blocks:
            x = block(x)
        return self.ln_final(self.hook_resid_final(x)) @ self.W_U  # [n, V]

    def hook_points(self):
        out = {}
        for l, b in enumerate(self.blocks):
            out[f"blocks.{l}.hook_resid_pre"] = b.hook_resid_pre
            out[f"blocks.{l}.attn.hook_pattern"] = b.hook_pattern
            out[f"blocks.{l}.attn.hook_z"] = b.hook_z
        out["hook_resid_final"] = self.hook_resid_final
        out["ln_final.hook_scale"] = self.ln_final.hook_scale
        return out

    def run_with_hooks(self, ids, fwd_hooks):
        """fwd_hooks: [(name, fn(activation) -> activation or None)], as TransformerLens."""
        points = self.hook_points()
        handles = [points[name].register_forward_hook(lambda m, i, o, fn=fn: fn(o)) for name, fn in fwd_hooks]
        try:
            with torch.no_grad():
                return self(ids)
        finally:
            for h in handles:
                h.remove()

    def run_with_cache(self, ids):
        cache = {}

        def keep(name):
            def fn(t):
                cache[name] = t.clone()
            return fn

        logits = self.run_with_hooks(ids, [(name, keep(name)) for name in self.hook_points()])
        return logits, cache

    def resid(self, cache, l):
        """The stream numbered l: blocks.l.hook_resid_pre, hook_resid_final for l = L."""
        return cache["hook_resid_final"] if l == self.L else cache[f"blocks.{l}.hook_resid_pre"]

    def resid_name(self, l):
        return "hook_resid_final" if l == self.L else f"blocks.{l}.hook_resid_pre"


def loss(logits, ids):
    logp = torch.log_softmax(logits[:-1], dim=-1)
    return float(-logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].mean())


def dataset_mean_z(model, dataset):
    """cache["blocks.l.attn.hook_z"] of every dataset prompt, averaged over prompts and positions."""
    sums, count = None, 0
    for ids in dataset:
        _, cache = model.run_with_cache(ids)
        z = [cache[f"blocks.{l}.attn.hook_z"].sum(0) for l in range(model.L)]  # [H, d]
        sums = z if sums is None else [a + b for a, b in zip(sums, z)]
        count += len(ids)
    return [s / count for s in sums]


def ablate(model, job):
    ids = job["ids"]
    clean = model.run_with_hooks(ids, [])
    means = dataset_mean_z(model, job["dataset"]) if "dataset" in job else None
    hooks = []
    for l, h in job["heads"]:
        def fn(z, l=l, h=h):
            z = z.clone()
            if job["mode"] == "zero":
                z[:, h] = 0
            elif means is not None:
                z[:, h] = means[l][h]
            else:
                z[:, h] = z[:, h].mean(0, keepdim=True)
            return z
        hooks.append((f"blocks.{l}.attn.hook_z", fn))
    ablated = model.run_with_hooks(ids, hooks)
    return {"clean": clean[-1].tolist(), "ablated": ablated[-1].tolist(),
            "clean_loss": loss(clean, ids), "ablated_loss": loss(ablated, ids)}


def patch(model, job):
    a, b = job["answer"], job["wrong"]
    metric = lambda logits: float(logits[-1, a] - logits[-1, b])
    clean_logits, cache = model.run_with_cache(job["clean"])
    m_clean = metric(clean_logits)
    m_corrupt = metric(model.run_with_hooks(job["corrupt"], []))
    n = len(job["clean"])
    out = []
    if job["what"] == "heads":
        for l in range(model.L):
            row = []
            for h in range(model.H):
                def fn(z, l=l, h=h):
                    z = z.clone()
                    z[:, h] = cache[f"blocks.{l}.attn.hook_z"][:, h]
                    return z
                m = metric(model.run_with_hooks(job["corrupt"], [(f"blocks.{l}.attn.hook_z", fn)]))
                row.append((m - m_corrupt) / (m_clean - m_corrupt))
            out.append(row)
    else:
        for l in range(model.L + 1):
            row = []
            for pos in range(n):
                def fn(x, l=l, pos=pos):
                    x = x.clone()
                    x[pos] = model.resid(cache, l)[pos]
                    return x
                m = metric(model.run_with_hooks(job["corrupt"], [(model.resid_name(l), fn)]))
                row.append((m - m_corrupt) / (m_clean - m_corrupt))
            out.append(row)
    return {"effect": out, "clean": m_clean, "corrupt": m_corrupt}


def lens(model, job):
    _, cache = model.run_with_cache(job["ids"])
    ids, logits = [], []
    for l in range(model.L + 1):
        with torch.no_grad():
            x = model.resid(cache, l)
            if job.get("scale") == "final":
                # accumulated_resid(apply_ln=True) on a fold_ln model: centred, divided by
                # ln_final.hook_scale of the final stream, then the folded weight and bias
                x = (x - x.mean(-1, keepdim=True)) / cache["ln_final.hook_scale"]
                lens_logits = (x * model.ln_final.weight + model.ln_final.bias) @ model.W_U
            else:
                lens_logits = model.ln_final(x) @ model.W_U  # [n, V]
        top = torch.topk(lens_logits, job["top"], dim=-1)
        ids.append(top.indices.tolist())
        logits.append(top.values.tolist())
    return {"ids": ids, "logits": logits}


def attribution(model, job):
    """stack_head_results + apply_ln_to_stack (pos_slice = -1) + logit diff directions."""
    ids, a, b = job["ids"], job["answer"], job["wrong"]
    logits, cache = model.run_with_cache(ids)
    d = model.E // model.H
    stack = []
    for l in range(model.L):
        z = cache[f"blocks.{l}.attn.hook_z"][-1]  # [H, d]
        W_O = model.W_O[l].reshape(model.H, d, model.E)
        stack.append(torch.einsum("hd,hde->he", z, W_O))
    stack = torch.stack(stack)  # [L, H, E]
    stack = stack - stack.mean(-1, keepdim=True)
    stack = stack / cache["ln_final.hook_scale"][-1]
    direction = (model.W_U[:, a] - model.W_U[:, b]) * model.ln_final.weight
    return {"heads": (stack @ direction).tolist(), "metric": float(logits[-1, a] - logits[-1, b])}


def templates(tokens):
    n = len(tokens)
    t = torch.tensor(tokens)
    prev = torch.zeros(n, n)
    prev[1:, :-1] = torch.eye(n - 1)
    prev = torch.tril(prev)
    eq = (t.repeat(n, 1) == t.repeat(n, 1).T).int()
    eq.fill_diagonal_(0)
    dup = torch.tril(eq.float())
    shifted = torch.roll(dup, shifts=1, dims=1)
    induction = torch.tril(torch.cat((torch.zeros(n, 1), shifted[:, 1:]), dim=1))
    return {"prev": prev, "dup": dup, "induction": induction}


def scores(model, job):
    _, cache = model.run_with_cache(job["ids"])
    out = {name: [] for name in ("prev", "dup", "induction", "sink", "entropy")}
    tmpl = templates(job["ids"])
    for l in range(model.L):
        pattern = cache[f"blocks.{l}.attn.hook_pattern"]  # [H, n, n]
        for name in ("prev", "dup", "induction"):
            row = []
            for h in range(model.H):
                a = pattern[h].clone()
                if job["exclude_bos"]:
                    a[:, 0] = 0
                if job["exclude_current"]:
                    a.fill_diagonal_(0)
                row.append(float((a * tmpl[name].double()).sum() / a.sum()))
            out[name].append(row)
        out["sink"].append(pattern[:, :, 0].mean(-1).tolist())
        plogp = torch.where(pattern > 0, pattern * torch.log(pattern), torch.zeros_like(pattern))
        out["entropy"].append((-plogp.sum(-1)).mean(-1).tolist())
    return out


def repeat(model, job):
    _, cache = model.run_with_cache(job["ids"])
    N = job["length"]
    return [[float(cache[f"blocks.{l}.attn.hook_pattern"][h].diagonal(1 - N).mean()) for h in range(model.H)]
            for l in range(model.L)]


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    model = Gpt2(spec["folder"])
    kinds = {"ablate": ablate, "patch": patch, "lens": lens, "attribution": attribution,
             "scores": scores, "repeat": repeat}
    json.dump([kinds[job["kind"]](model, job) for job in spec["jobs"]], sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
