#!/usr/bin/env bash
# The repository's house rules that a script can check (issue 32; CI runs it first):
#   1. no source file (.cpp, .h, .inc) outside tests/ is over 800 lines;
#   2. every path a comment cites exists: in C++ sources (// and /* */ comments) and in
#      shell, CMake and CI scripts (# comments). A cited path is a word ending in .h, .hpp,
#      .cpp, .inc, .md, .py, .sh, .cmake, .frag or .vert; it exists when it names a tracked
#      file or folder from the repository root, from the citing file's folder, or as the
#      tail of a tracked path ("models/transformer.h"); a bare file name exists when a
#      tracked file has that name. Files of other projects that comments cite on purpose
#      are listed in EXTERNAL below;
#   3. every test file tests/<layer>/test_X.cpp puts its code in `namespace test_X {`: the
#      test programs compile their files in unity batches (CMakeLists.txt, Tests), where two
#      files' anonymous-namespace helpers of one name would clash (docs/ci.md, Fourth pass).
# Prints one line per violation ("FILE:LINE: ...") and exits 1 if there is any.
# Usage: scripts/check-repo.sh   (from anywhere inside the repository; needs git, python3)
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
exec python3 - <<'PY'
import os, re, subprocess, sys

MAX_LINES = 800
# Files of other projects cited by their upstream names.
EXTERNAL = {
    "encoder.py": "openai/gpt-2's src/encoder.py (GPT-2's byte-level BPE)",
    "numpy/lib/format.py": "numpy's .npy format module",
    "cblas.h": "OpenBLAS's C interface header",
    "llama.cpp": "the llama.cpp project",
    "modeling_rope_utils.py": "Hugging Face transformers' RoPE scaling module",
    "ggml.h": "ggml's main header (its ggml_type numbers)",
    "ggml-common.h": "ggml's quantized block layouts",
    "docs/gguf.md": "ggml's GGUF file format specification",
    "gguf.md": "ggml's GGUF file format specification (docs/gguf.md in the ggml repository)",
    "llama-arch.cpp": "llama.cpp's architecture and tensor-name table",
    "llama-vocab.cpp": "llama.cpp's tokenizers",
    "llama-model.cpp": "llama.cpp's model loader (hyperparameters per architecture)",
    "src/llama-vocab.cpp": "llama.cpp's tokenizers",
    "convert_hf_to_gguf.py": "llama.cpp's Hugging Face to GGUF converter",
    "tensor_mapping.py": "gguf-py's tensor-name mapping",
}

files = [f for f in subprocess.check_output(["git", "ls-files"], text=True).split("\n") if f]
tracked = set(files)
folders = {os.path.dirname(f) for f in files}
for d in list(folders):
    while d:
        folders.add(d)
        d = os.path.dirname(d)
names = {os.path.basename(f) for f in files}
problems = []

# 1. Long files.
for f in files:
    if f.startswith("tests/") or not f.endswith((".cpp", ".h", ".inc")):
        continue
    with open(f, encoding="utf-8", errors="replace") as fh:
        n = sum(1 for _ in fh)
    if n > MAX_LINES:
        problems.append(f"{f}:{n}: {n} lines, over {MAX_LINES}: split it by concern (docs/architecture.md)")

# 2. Cited paths.
EXT = r"(?:h|hpp|cpp|inc|md|py|sh|cmake|frag|vert)"
CITE = re.compile(r"(?<![A-Za-z0-9_./:-])((?:\.\./)*[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*\." + EXT + r")(?![A-Za-z0-9_/-])")


def cpp_comments(text):
    """(line, text) of every // and /* */ comment; string and raw-string literals skipped."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line, i = line + 1, i + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text[i:j].count("\n")
            i = j + 2
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            k = text.find("(", i)
            end = text.find(")" + text[i + 2:k] + '"', k)
            end = n if end < 0 else end
            line += text[i:end].count("\n")
            i = end + (k - i)
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def hash_comments(text):
    out = []
    for k, line in enumerate(text.split("\n")):
        m = re.search(r"(?:^|\s)#(?![!]|include)(.*)$", line)
        if m:
            out.append((k + 1, m.group(1)))
    return out


def exists(path, source):
    if path in EXTERNAL or path in tracked or path in folders:
        return True
    if os.path.normpath(os.path.join(os.path.dirname(source), path)) in tracked:
        return True
    if "/" not in path:
        return path in names
    return any(f.endswith("/" + path) for f in files)


for f in files:
    base = os.path.basename(f)
    if f.endswith((".cpp", ".h", ".inc")):
        scan = cpp_comments
    elif f.endswith((".sh", ".cmake")) or base == "CMakeLists.txt" or f.startswith(".ci/"):
        scan = hash_comments
    else:
        continue
    with open(f, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    for line, comment in scan(text):
        for m in CITE.finditer(comment):
            if not exists(m.group(1), f):
                problems.append(f"{f}:{line}: the comment cites {m.group(1)}, which does not exist")

# 3. A namespace of its own in every test file.
for f in files:
    m = re.fullmatch(r"tests/[a-z]+/(test_[A-Za-z0-9_]+)\.cpp", f)
    if not m:
        continue
    with open(f, encoding="utf-8", errors="replace") as fh:
        if not re.search(r"^namespace " + m.group(1) + r" \{", fh.read(), re.M):
            problems.append(f"{f}:1: its code is not in `namespace {m.group(1)} {{` (unity batches: docs/ci.md)")

for p in problems:
    print(p)
if problems:
    print(f"check-repo: {len(problems)} problem(s)", file=sys.stderr)
    sys.exit(1)
print("check-repo: no source file over 800 lines, every path a comment cites exists, every test file in its own namespace")
PY
