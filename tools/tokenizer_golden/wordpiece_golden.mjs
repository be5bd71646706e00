// Adds golden.json: the ids of the Hugging Face tokenizers library's JavaScript port (npm
// @huggingface/tokenizers) for every string of strings.json under each tokenizer of
// wordpiece_fixture.py. Run once, with the package installed outside the repository:
//   cd /tmp && npm install @huggingface/tokenizers
//   NODE_PATH=/tmp/node_modules node wordpiece_golden.mjs   (in a folder holding the fixtures)
// The tests read the committed golden.json; they never run node or npm.
import { createRequire } from "module";
import fs from "fs";
const require = createRequire(import.meta.url);
const { Tokenizer } = require(process.env.TOKENIZERS_PATH || "@huggingface/tokenizers");

const strings = JSON.parse(fs.readFileSync("strings.json", "utf8"));
const out = { library: "@huggingface/tokenizers", version: process.env.TOKENIZERS_VERSION || "", ids: {} };
for (const name of ["uncased", "cased", "nochinese"]) {
  const json = JSON.parse(fs.readFileSync(name + ".json", "utf8"));
  const tokenizer = new Tokenizer(json, {});
  out.ids[name] = strings.map((s) => Array.from(tokenizer.encode(s).ids));
}
fs.writeFileSync("golden.json", JSON.stringify(out));
