// Golden ids from Hugging Face's tokenizers.js (@huggingface/tokenizers) for every fixture
// and every corpus string, without the post-processor's special tokens.
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "fs";
const corpus = JSON.parse(fs.readFileSync("corpus.json", "utf8"));
const names = process.argv.slice(2);
const out = { library: "@huggingface/tokenizers", fixtures: {} };
for (const name of names) {
  const tj = JSON.parse(fs.readFileSync(name + ".tokenizer.json", "utf8"));
  const t = new Tokenizer(tj, {});
  out.fixtures[name] = {
    ids: corpus.map((s) => t.encode(s, { add_special_tokens: false }).ids),
    with_special: corpus.slice(0, 8).map((s) => t.encode(s).ids),
  };
}
console.log(JSON.stringify(out));
