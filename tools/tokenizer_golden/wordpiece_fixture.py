#!/usr/bin/env python3
"""Writes the WordPiece test fixture of tests/formats/test_formats_wordpiece.cpp (run once;
its outputs are committed):
  uncased.json  cased.json  nochinese.json   three tokenizer.json files over one vocabulary:
      BertNormalizer as bert-base-uncased (lowercase, strip_accents null), as bert-base-cased
      (no lowercase, accents kept), and lowercase without stripping accents or splitting CJK;
      max_input_chars_per_word = 12 so that long words become [UNK]
  strings.json  the test strings (accents, CJK, kana, punctuation, controls, long words...)
wordpiece_golden.mjs then adds the ids of the Hugging Face tokenizers library (npm
@huggingface/tokenizers) as golden.json."""
import json

words = """the a an and or of to in on at for with by from is was are were be been it he she
they we you i me my your his her its our their this that these those what which who how why
when where cat dog mat sat run running play played playing house car tree fish eat like
hello world big small red blue green good bad new old first last long great little own other
time year people way day man woman child thing life hand part place case week company system
program question work government number night point home water room mother area money story
fact month lot right study book eye job word business issue side kind head far black white
cafe naive resume uber zurich munchen sao paulo jalapeno pinata facade
un know able ment tion ness less ful pre re dis over under out up down new york city
""".split()
subwords = ["##s", "##es", "##ed", "##ing", "##ly", "##er", "##est", "##ness", "##ment",
            "##tion", "##able", "##ful", "##less", "##n", "##d", "##y", "##ie", "##al"]
letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
cased = ["The", "A", "I", "Hello", "World", "New", "York", "Paris", "Café", "Zürich", "Ünter",
         "É", "Straße", "straße", "café", "naïve", "résumé", "Ω", "ω", "Σ", "σ", "ς"]
accented = ["é", "è", "ê", "ü", "ö", "ä", "ñ", "ç", "å", "ø", "ß", "ï", "í", "ó", "ú", "á", "à",
            "##é", "##è", "##ü", "##ö", "##ä", "##ñ", "##ç", "##ß", "##ï"]
digits = [str(d) for d in range(10)] + ["##" + str(d) for d in range(10)] + ["2024", "100", "##00"]
punct = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["¿", "¡", "—", "–", "…", "“", "”", "‘",
         "’", "«", "»", "·", "。", "、", "！", "？", "「", "」", "€", "£", "©", "°"]
cjk = ["中", "国", "人", "你", "好", "的", "日", "本", "大", "学", "生", "我", "是", "天", "气"]
kana = ["こ", "##ん", "##に", "##ち", "##は", "カ", "##タ", "##カ", "##ナ"]
greek_cyr = ["α", "β", "γ", "##β", "##γ", "п", "##р", "##и", "##в", "##е", "##т", "мир"]
special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
vocab = []
for token in special + words + subwords + letters + ["##" + c for c in letters] + cased + \
        accented + digits + punct + cjk + kana + greek_cyr:
    if token not in vocab:
        vocab.append(token)


def tokenizer(lowercase, strip_accents, chinese):
    v = {t: i for i, t in enumerate(vocab)}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": v[t], "content": t, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True} for t in special],
        "normalizer": {"type": "BertNormalizer", "clean_text": True,
                       "handle_chinese_chars": chinese, "strip_accents": strip_accents,
                       "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                           "pair": [],
                           "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [v["[CLS]"]], "tokens": ["[CLS]"]},
                                              "[SEP]": {"id": "[SEP]", "ids": [v["[SEP]"]], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 12, "vocab": v},
    }


strings = [
    "The cat sat on the mat.", "the [MASK] sat on the mat", "Hello, World!", "HELLO WORLD",
    "Café au lait", "naïve résumé", "Zürich München", "São Paulo", "jalapeño piñata",
    "façade", "Straße", "ΣΊΣΥΦΟΣ", "Ωmega ωmega", "İstanbul", "ﬁne ligature", "Å ångström",
    "中国人", "你好世界", "我是学生。", "今天天气很好！", "日本語のテキスト", "こんにちは",
    "カタカナ", "한국어", "Привет, мир!", "αβγ δ", "naïveté", "coöperate", "e\u0301",
    "tab\tseparated\ttext", "new\nline", "carriage\r\nreturn", "zero\u200bwidth",
    "soft\u00adhyphen", "non\u00a0breaking space", "em\u2003space", "ideographic\u3000space",
    "control\u0007bell", "null\u0000char", "replacement\ufffdchar", "private\ue000use",
    "emoji 😀 face", "flags 🇫🇷", "¿Qué tal?", "¡Hola!", "«quoted»", "“curly” ‘quotes’",
    "em—dash en–dash", "ellipsis…", "price: $100 or €50 or £20", "50% off!!!", "a+b=c",
    "x^2 + y^2", "path/to/file.txt", "user@example.com", "https://example.com/a?b=c",
    "C++ and C#", "don't won't can't", "it's he's we're they've I'm", "rock'n'roll",
    "state-of-the-art", "well_known_name", "[CLS] already [SEP]", "[MASK][MASK]",
    "a [MASK] b", "[mask] lower", "[UNK] token", "[PAD]", "supercalifragilistic",
    "pneumonoultramicroscopic", "abcdefghijkl", "abcdefghijklm", "unknowable", "playing",
    "played", "plays", "runner", "greatest", "kindness", "government", "unbelievable",
    "xyzzy", "qwerty", "zzz", "2024-01-01", "3.14159", "1,000,000", "007", "#hashtag",
    "@mention", "   leading spaces", "trailing spaces   ", "", " ", "\t\n", "...", "?!",
    "©2024 Company°", "“", "——", "a\u0300\u0301\u0302", "\u0301start", "Ǆ ǅ ǆ", "ﬀ",
    "Ⅻ roman", "①②③", "ｆｕｌｌｗｉｄｔｈ", "ＡＢＣ", "１２３", "half ｶﾀｶﾅ",
]
base = ["the", "cat", "dog", "house", "play", "running", "New", "York", "café", "中国",
        "hello", "world", "Zürich", "naïve", "über", "résumé", "good", "BAD", "Big", "small"]
tails = [".", "!", "?", ",", "...", " — ", "'s", "-", "ing", "ed"]
for i in range(130):
    a = base[i % len(base)]
    b = base[(i * 7 + 3) % len(base)]
    t = tails[(i * 3) % len(tails)]
    if i % 5 == 0:
        strings.append(f"{a.upper()} {b}{t}")
    elif i % 5 == 1:
        strings.append(f"{a}{b}{t}{a}")
    elif i % 5 == 2:
        strings.append(f"{a} [MASK] {b}{t}")
    elif i % 5 == 3:
        strings.append(f"{a}{'x' * (i % 15)} {b}")
    else:
        strings.append(f"{a}\u4e2d{b} {t}{i}")

json.dump(tokenizer(True, None, True), open("uncased.json", "w"), ensure_ascii=False)
json.dump(tokenizer(False, None, True), open("cased.json", "w"), ensure_ascii=False)
json.dump(tokenizer(True, False, False), open("nochinese.json", "w"), ensure_ascii=False)
json.dump(strings, open("strings.json", "w"), ensure_ascii=False, indent=0)
print(len(vocab), "tokens,", len(strings), "strings")
