// llama.cpp's own answers for the GGUF files the tests write (tests/support/gguf_golden_files.h),
// through node-llama-cpp 3.21.1 on the CPU: token ids of the tokenizer files over
// tests/data/tokenizers/corpus.json plus strings with typed special tokens, and the
// next-token probabilities of the model files after ggufgolden::evaluatedIds().
// Usage (see README.md): node golden.mjs DIR CORPUS.json > tests/data/gguf/golden.json
import {getLlama} from "node-llama-cpp";
import fs from "node:fs";
import path from "node:path";

const [dir, corpusPath] = process.argv.slice(2);
const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
const specials = {
  tok_spm: ["<s>hello</s> world", "a<unk>b", "<s> <s>", "x</s>", "hello<s>world"],
  tok_gpt2: ["hi<|endoftext|>there", "<|endoftext|>", " <|endoftext|> a", "a<|endoftext|><|endoftext|>b"],
  tok_qwen2: ["<|im_start|>user\nhi<|im_end|>", "<|endoftext|>x", "a <|im_start|> b", "<|im_end|><|im_start|>"],
};
const evaluatedIds = [1, 5, 77, 200, 13, 290, 260, 42, 7, 150];

const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const out = {generator: "node-llama-cpp 3.21.1 (llama.cpp CPU build, 2 threads, flash attention off)",
             evaluated_ids: evaluatedIds, tokenizers: {}, models: {}};
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".gguf")).sort()) {
  const name = path.basename(file, ".gguf");
  const model = await llama.loadModel({modelPath: path.join(dir, file)});
  if (name.startsWith("tok_")) {
    const strings = [...corpus, ...specials[name]];
    out.tokenizers[name] = strings.map((text) => ({text, ids: Array.from(model.tokenize(text, true))}));
  } else {
    const context = await model.createContext({contextSize: 64, threads: 2, flashAttention: false});
    const sequence = context.getSequence();
    const evaluation = sequence.evaluateWithMetadata(evaluatedIds, {probabilities: true});
    for await (const item of evaluation) {  // the first item: the distribution after the ids
      const probabilities = new Array(model.tokens.count ?? 300).fill(0);
      for (const [token, p] of item.probabilities.entries()) probabilities[token] = p;
      out.models[name] = probabilities;
      break;
    }
    await context.dispose();
  }
  await model.dispose();
}
process.stdout.write(JSON.stringify(out) + "\n");
