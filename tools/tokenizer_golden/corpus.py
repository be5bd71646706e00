# Writes corpus.json: 200+ strings (scripts, emoji, whitespace runs, contractions, numbers,
# special tokens) and train.txt for training the fixtures.
import json, random
base = ["Hello world", "The quick brown fox jumps", "the lazy dog", "I'm", "they're", "we'll",
 "don't", "aren't they?", "won't we.", "I'M SURE THEY'RE", "3.14159", "1969", "600 million", "20:17",
 "1e-5 and 2,718", "12345678901234", "über den Hund", "cœur", "naïve café", "Съешь ещё",
 "我能吞下", "私はガラス", "Γαζέες", "العربية", "हिन्दी", "한국어 텍스트", "emoji 😀🎉 here",
 "👨‍👩‍👧", "𝔘𝔫𝔦", "q @ k.T / sqrt(d)", "softmax(x)", "aaaaaaaaaaaaaaaa", "thethethe", "ab", "a",
 "", " ", "   ", "\t", "x\ty", "double  space", "trailing  ", " leading", "ALL CAPS", "MiXeD cAsE",
 "e\u0301 combining", "\u00a0nbsp", "zero\u200bwidth", "<<>>", "<s", "s>", "line\r\nbreak",
 "\n\n\n", "tab\t\tend", "$100.00!", "#hashtag @user", "https://example.org/a?b=c",
 "C++ and C#", "it's 5 o'clock", "x=1;y=2", "Ünïcödé", "ß and ẞ", "ﬁ ligature", "½ ⅓ ¼"]
out = []
for s in base:
    out += [s, " " + s, s + "  " + s, s + "\n" + s]
out += ["<|endoftext|>", "a<|endoftext|>b", "<s>hi</s>", "<unk><s></s>", "a<unk>b",
        "text <|endoftext|> more <|endoftext|>", "<|im_start|>user\nhi<|im_end|>"]
json.dump(out, open("corpus.json", "w"), ensure_ascii=False)
random.seed(7)
lines = []
for i in range(3000):
    words = " ".join(random.sample(base, 6)).split(" ")
    random.shuffle(words)
    lines.append(" ".join(words))
open("train.txt", "w").write("\n".join(lines) + "\n")
print(len(out))
