# Byte-level BPE tokenizer.json fixtures for the pre-tokenizers and templates of issue 28:
# SmolLM's shape (Sequence[Digits(individual_digits), ByteLevel]), grouped Digits,
# Punctuation, Whitespace and WhitespaceSplit before a ByteLevel, and a "<s> $A </s>"
# TemplateProcessing. Vocabulary and merges are bytelevel_gpt2's (train_bytelevel.py).
#
# tokenizers.js (@huggingface/tokenizers, the golden library) implements four of these
# steps with JavaScript's ASCII classes where the Rust library (what transformers runs) uses
# Unicode ones: Digits (\d vs char::is_numeric), Whitespace (\w vs Unicode \w), Punctuation
# (runs merged vs each character isolated). For each such fixture a "<name>.rust" twin
# spells the Rust behaviour as a Split with an explicit Unicode regex, which tokenizers.js
# runs exactly; pretokenizer_golden.mjs records the ids of both.
#
#   cd tests/data/tokenizers && python3 ../../../tools/tokenizer_golden/pretokenizer_fixtures.py
import copy
import json

base = json.load(open("bytelevel_gpt2.tokenizer.json"))
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
BYTE_LEVEL_NO_REGEX = dict(BYTE_LEVEL, use_regex=False)
# Rust's classes (pre_tokenizer.cpp spells the same with PCRE2 syntax)
NUMERIC = r"\p{N}"
PUNCTUATION = r"[\p{P}!-/:-@\[-`{-~]"
# Whitespace is the Rust library's Regex(r"\w+|[^\w\s]+") on Oniguruma; tokenizers.js runs a
# Split of that regex with its Oniguruma rewriting of \w and \s (Unicode classes)
WORD_OR_SYMBOLS = r"\w+|[^\w\s]+"


def split(regex, behavior, invert=False):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": invert}


def fixture(pre, added=("<|endoftext|>", "<|im_start|>", "<|im_end|>"), post=None):
    t = copy.deepcopy(base)
    vocab = t["model"]["vocab"]
    t["added_tokens"] = []
    for name in added:
        vocab.setdefault(name, len(vocab))
        t["added_tokens"].append({"id": vocab[name], "content": name, "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False, "special": True})
    t["pre_tokenizer"] = pre
    t["post_processor"] = post or {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                   "use_regex": True}
    return t


def seq(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


smollm_pre = seq({"type": "Digits", "individual_digits": True}, BYTE_LEVEL)
template = {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
             {"SpecialToken": {"id": "</s>", "type_id": 1}}],
}
def eos(pre):
    t = fixture(pre, added=("<|endoftext|>", "<s>", "</s>"), post=copy.deepcopy(template))
    vocab = t["model"]["vocab"]
    t["post_processor"]["special_tokens"] = {k: {"id": k, "ids": [vocab[k]], "tokens": [k]} for k in ("<s>", "</s>")}
    return t


fixtures = {
    "smollm": fixture(smollm_pre),
    "smollm.rust": fixture(seq(split(NUMERIC, "Isolated"), BYTE_LEVEL)),
    "smollm_eos": eos(smollm_pre),
    "smollm_eos.rust": eos(seq(split(NUMERIC, "Isolated"), BYTE_LEVEL)),
    "digits_grouped": fixture(seq({"type": "Digits", "individual_digits": False}, BYTE_LEVEL)),
    "digits_grouped.rust": fixture(seq(split(NUMERIC + "+", "Isolated"), BYTE_LEVEL)),
    "punctuation": fixture(seq({"type": "Punctuation", "behavior": "Isolated"}, BYTE_LEVEL_NO_REGEX)),
    "punctuation.rust": fixture(seq(split(PUNCTUATION, "Isolated"), BYTE_LEVEL_NO_REGEX)),
    "whitespace": fixture(seq({"type": "Whitespace"}, BYTE_LEVEL_NO_REGEX)),
    "whitespace.rust": fixture(seq(split(WORD_OR_SYMBOLS, "Removed", invert=True), BYTE_LEVEL_NO_REGEX)),
    "whitespace_split": fixture(seq({"type": "WhitespaceSplit"}, BYTE_LEVEL)),
    "whitespace_split.rust": fixture(seq(split(r"\p{White_Space}+", "Removed"), BYTE_LEVEL)),
}
for name, t in fixtures.items():
    json.dump(t, open("pretok_" + name + ".tokenizer.json", "w"), ensure_ascii=False)
print(" ".join("pretok_" + n for n in fixtures))
