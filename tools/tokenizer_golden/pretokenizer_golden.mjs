// Golden ids from Hugging Face's tokenizers.js (@huggingface/tokenizers) for the fixtures of
// pretokenizer_fixtures.py, over every corpus string: without the post-processor's special
// tokens ("ids") and with them ("with_special"). Run in tests/data/tokenizers with the
// package installed outside the repository:
//   node ../../../tools/tokenizer_golden/pretokenizer_golden.mjs pretok_smollm ... > pretokenizer_golden.json
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "fs";
const corpus = JSON.parse(fs.readFileSync("corpus.json", "utf8"));
const out = { library: "@huggingface/tokenizers", fixtures: {} };
for (const name of process.argv.slice(2)) {
  const t = new Tokenizer(JSON.parse(fs.readFileSync(name + ".tokenizer.json", "utf8")), {});
  const ids = corpus.map((s) => t.encode(s, { add_special_tokens: false }).ids);
  const withSpecial = corpus.map((s) => t.encode(s).ids);
  out.fixtures[name] = { ids };
  // only where the post-processor adds tokens (the template fixture)
  if (JSON.stringify(ids) !== JSON.stringify(withSpecial)) out.fixtures[name].with_special = withSpecial;
}
console.log(JSON.stringify(out));
