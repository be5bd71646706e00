# A byte-level BPE trained on train.txt (GPT-2 pre-tokenisation), written as three
# tokenizer.json variants: gpt2 (ByteLevel regex), llama3 (Split + ByteLevel), qwen2 (NFC +
# Split + ByteLevel). Training quality is irrelevant: the fixtures only need real merges.
import json, regex, collections
def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]; n = 0
    for b in range(256):
        if b not in bs: bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, map(chr, cs)))
B = bytes_to_unicode()
GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
text = open("train.txt").read()
words = collections.Counter(tuple(B[b] for b in w.encode()) for w in regex.findall(GPT2, text))
vocab = {B[b]: i for i, b in enumerate(sorted(B))}
vocab = {}
for b in range(256): vocab[B[b]] = len(vocab)
merges = []
for step in range(700):
    pairs = collections.Counter()
    for w, c in words.items():
        for a, b in zip(w, w[1:]): pairs[(a, b)] += c
    if not pairs: break
    best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
    merges.append(best); vocab[best[0] + best[1]] = len(vocab)
    nw = collections.Counter()
    for w, c in words.items():
        out = []; i = 0
        while i < len(w):
            if i + 1 < len(w) and (w[i], w[i + 1]) == best: out.append(w[i] + w[i + 1]); i += 2
            else: out.append(w[i]); i += 1
        nw[tuple(out)] += c
    words = nw
def tok(added, pre, normalizer=None, post=None):
    v = dict(vocab)
    at = []
    for name in added:
        v[name] = len(v)
        at.append({"id": v[name], "content": name, "single_word": False, "lstrip": False,
                   "rstrip": False, "normalized": False, "special": True})
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": at,
            "normalizer": normalizer, "pre_tokenizer": pre,
            "post_processor": post or {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": v, "merges": [a + " " + b for a, b in merges]}}
def split(pattern):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
gpt2 = tok(["<|endoftext|>"], {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True})
llama3 = tok(["<|begin_of_text|>", "<|end_of_text|>"], split(LLAMA3), post={
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [len(vocab)], "tokens": ["<|begin_of_text|>"]}}})
llama3["model"]["ignore_merges"] = True
qwen2 = tok(["<|endoftext|>", "<|im_start|>", "<|im_end|>"], split(QWEN2), normalizer={"type": "NFC"})
for name, t in [("bytelevel_gpt2", gpt2), ("bytelevel_llama3", llama3), ("bytelevel_qwen2", qwen2)]:
    json.dump(t, open(name + ".tokenizer.json", "w"), ensure_ascii=False)
print(len(vocab), len(merges))
