#!/usr/bin/env python3
"""A second, independent formulation of the Hugging Face tokenizers pipeline for BPE with
byte_fallback and the "▁" metaspace (Llama 2, Mistral, TinyLlama), written from the library's
documented algorithm, standard library only. It shares no code with
formats/tokenizers/metaspace_bpe.cpp: merges here are applied by rescanning the whole word for
the lowest-ranked adjacent pair (leftmost on ties) after every merge, instead of a priority
queue; added tokens are found with a regex alternation instead of a scan.

Usage:
  metaspace_reference.py convert VOCAB_TSV OUT_JSON legacy|metaspace
      Writes a tokenizer.json from spm_export_vocab's "piece<TAB>score" lines the way the
      transformers converter does for Llama: vocab = piece -> line number, merges = every
      split of a piece into two pieces, ordered by the piece's score (highest first); <unk>,
      <s>, </s> as special added tokens, TemplateProcessing "<s> $A". legacy: normalizer
      Prepend "▁" + Replace " " -> "▁", no pre-tokenizer; metaspace: Metaspace pre-tokenizer
      with prepend_scheme "first", split false, no normalizer.
  metaspace_reference.py encode TOKENIZER_JSON STRINGS_JSON
      Prints one JSON array: the ids of every string of the STRINGS_JSON array.
"""
import json
import re
import sys

SPACE = "\u2581"


def convert(vocab_tsv, out_json, style):
    pieces, scores = [], []
    with open(vocab_tsv, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            piece, score = line.rsplit("\t", 1)
            pieces.append(piece)
            scores.append(float(score))
    vocab = {p: i for i, p in enumerate(pieces)}
    merges = []
    for i, piece in enumerate(pieces):
        local = []
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                local.append((left, right, scores[i]))
        local.sort(key=lambda m: (vocab[m[0]], vocab[m[1]]))
        merges.extend(local)
    merges.sort(key=lambda m: m[2], reverse=True)  # stable: ties keep the piece order
    added = [{"id": vocab[t], "content": t, "special": True, "single_word": False,
              "lstrip": False, "rstrip": False, "normalized": False}
             for t in ("<unk>", "<s>", "</s>")]
    tokenizer = {
        "version": "1.0",
        "added_tokens": added,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [vocab["<s>"]], "tokens": ["<s>"]}},
        },
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [l + " " + r for l, r, _ in merges]},
    }
    if style == "legacy":
        tokenizer["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]}
        tokenizer["pre_tokenizer"] = None
    else:
        tokenizer["normalizer"] = None
        tokenizer["pre_tokenizer"] = {"type": "Metaspace", "replacement": SPACE,
                                      "prepend_scheme": "first", "split": False}
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)


class Reference:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            t = json.load(f)
        model = t["model"]
        self.vocab = model["vocab"]
        for a in t.get("added_tokens") or []:
            self.vocab.setdefault(a["content"], a["id"])
        self.rank = {}
        for r, m in enumerate(model["merges"]):
            left, right = m.split(" ") if isinstance(m, str) else m
            self.rank[(left, right)] = r
        self.byte_fallback = model.get("byte_fallback", False)
        self.unk = model.get("unk_token")
        self.fuse_unk = model.get("fuse_unk", False)
        added = sorted((a["content"] for a in t.get("added_tokens") or []), key=len, reverse=True)
        self.added = re.compile("|".join(re.escape(a) for a in added)) if added else None
        norm = t.get("normalizer")
        steps = (norm or {}).get("normalizers", [norm] if norm else [])
        self.legacy = any(s["type"] == "Prepend" for s in steps)
        pre = t.get("pre_tokenizer")
        self.scheme = (pre or {}).get("prepend_scheme", "always")
        self.split = (pre or {}).get("split", True) if pre else False

    def segment_words(self, text, offset):
        if not text:
            return []
        if self.legacy:
            return [SPACE + text.replace(" ", SPACE)]
        s = text.replace(" ", SPACE)
        if not s.startswith(SPACE) and (self.scheme == "always" or
                                        (self.scheme == "first" and offset == 0)):
            s = SPACE + s
        if not self.split:
            return [s]
        return [w for w in re.split("(?=" + SPACE + ")", s) if w]

    def bpe(self, word):
        symbols = []
        for ch in word:
            if ch in self.vocab:
                symbols.append(ch)
            elif self.byte_fallback and all("<0x%02X>" % b in self.vocab
                                            for b in ch.encode("utf-8")):
                symbols.extend("<0x%02X>" % b for b in ch.encode("utf-8"))
            elif self.unk is not None:
                if not (self.fuse_unk and symbols and symbols[-1] is None):
                    symbols.append(None)  # None marks <unk>: it never merges
        while True:
            best = None
            for i in range(len(symbols) - 1):
                if symbols[i] is None or symbols[i + 1] is None:
                    continue
                r = self.rank.get((symbols[i], symbols[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        return [self.vocab[self.unk] if s is None else self.vocab[s] for s in symbols]

    def encode(self, text):
        ids, start = [], 0
        matches = list(self.added.finditer(text)) if self.added else []
        for m in matches:
            for w in self.segment_words(text[start:m.start()], len(text[:start].encode("utf-8"))):
                ids += self.bpe(w)
            ids.append(self.vocab[m.group(0)])
            start = m.end()
        for w in self.segment_words(text[start:], len(text[:start].encode("utf-8"))):
            ids += self.bpe(w)
        return ids


def main():
    if sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "encode":
        ref = Reference(sys.argv[2])
        with open(sys.argv[3], encoding="utf-8") as f:
            strings = json.load(f)
        print(json.dumps([ref.encode(s) for s in strings]))
    else:
        sys.exit("unknown mode " + sys.argv[1])


if __name__ == "__main__":
    main()
