#!/usr/bin/env python3
"""An independent WordPiece tokenizer for the tests, written from the Hugging Face tokenizers
library's BertNormalizer, BertPreTokenizer and WordPiece model (Rust), with Python's
unicodedata: it shares no code with attnscope.

Usage: wordpiece_reference.py TOKENIZER.json STRINGS.json -> one JSON list of id lists on
stdout, each [CLS] ... [SEP] as the TemplateProcessing post-processor puts them.
"""
import json
import sys
import unicodedata


def is_whitespace(c):
    # Rust's char::is_whitespace (White_Space), and \t \n \r
    return c in "\t\n\r" or c in (
        "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680\u2000\u2001\u2002\u2003"
        "\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


def is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c).startswith("C")


def is_chinese(c):
    cp = ord(c)
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B920 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def is_punct(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def normalize(text, n):
    if n is None:
        return text
    out = []
    for c in text:
        if n.get("clean_text", True):
            if ord(c) == 0 or ord(c) == 0xFFFD or is_control(c):
                continue
            if is_whitespace(c):
                c = " "
        if n.get("handle_chinese_chars", True) and is_chinese(c):
            out += [" ", c, " "]
        else:
            out.append(c)
    text = "".join(out)
    lowercase = n.get("lowercase", True)
    strip = n.get("strip_accents")
    if strip is None:
        strip = lowercase
    if strip:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    if lowercase:
        # each character's own lower case (no final-sigma context, as Rust's char::to_lowercase)
        text = "".join(c.lower() for c in text)
    return text


def pre_tokenize(text):
    words, word = [], ""
    for c in text:
        if is_whitespace(c):
            if word:
                words.append(word)
            word = ""
        elif is_punct(c):
            if word:
                words.append(word)
            words.append(c)
            word = ""
        else:
            word += c
    if word:
        words.append(word)
    return words


def wordpiece(word, vocab, model):
    unk = vocab[model.get("unk_token", "[UNK]")]
    prefix = model.get("continuing_subword_prefix", "##")
    if len(word) > model.get("max_input_chars_per_word", 100):
        return [unk]
    out, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while start < end:
            piece = (prefix if start > 0 else "") + word[start:end]
            if piece in vocab:
                found = vocab[piece]
                break
            end -= 1
        if found is None:
            return [unk]
        out.append(found)
        start = end
    return out


def encode(text, tok):
    vocab = tok["model"]["vocab"]
    added = sorted(tok.get("added_tokens", []), key=lambda a: -len(a["content"]))
    ids, i, plain = [], 0, 0

    def run(part):
        for w in pre_tokenize(normalize(part, tok.get("normalizer"))):
            ids.extend(wordpiece(w, vocab, tok["model"]))

    while i < len(text):
        hit = next((a for a in added if text.startswith(a["content"], i)), None)
        if hit is None:
            i += 1
            continue
        run(text[plain:i])
        ids.append(hit["id"])
        i += len(hit["content"])
        plain = i
    run(text[plain:])
    return [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]


def main():
    tok = json.load(open(sys.argv[1], encoding="utf-8"))
    strings = json.load(open(sys.argv[2], encoding="utf-8"))
    print(json.dumps([encode(s, tok) for s in strings]))


if __name__ == "__main__":
    main()
