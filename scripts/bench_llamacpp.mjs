// llama.cpp's side of scripts/bench-gguf-vs-llamacpp.sh, through node-llama-cpp 3.21.1 (CPU,
// prebuilt): prefill of N random token ids from an empty cache, then M decode steps of one
// token, on T threads with flash attention off (so that it computes the same softmax
// attention as attnscope). Prints one JSON line: medians over R prefills and the M steps.
// usage: node bench_llamacpp.mjs FILE.gguf N M T R   (run from a folder where
//        `npm i -E node-llama-cpp@3.21.1` was done; never part of the build or the tests)
import {getLlama} from "node-llama-cpp";

const [file, n, m, threads, repeat] = process.argv.slice(2);
const N = Number(n), M = Number(m), T = Number(threads), R = Number(repeat);
const llama = await getLlama({gpu: false, build: "never", logLevel: "error"});
const model = await llama.loadModel({modelPath: file});
const context = await model.createContext({contextSize: N + M + 8, batchSize: N, threads: T, flashAttention: false});
const sequence = context.getSequence();
let seed = 1;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
// ids in [3, vocabulary): past the three control tokens of a SentencePiece vocabulary
const vocabulary = model.tokens.count ?? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length ?? 1000;
const ids = Array.from({length: N + M}, () => 3 + (random() % (vocabulary - 3)));
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const prefill = [];
for (let r = 0; r < R + 1; ++r) {
  await sequence.clearHistory();
  const start = performance.now();
  await sequence.evaluateWithoutGeneratingNewTokens(ids.slice(0, N));
  if (r > 0) prefill.push(performance.now() - start);  // the first run warms up
}
const decode = [];
for (let s = 0; s < M; ++s) {
  const start = performance.now();
  await sequence.evaluateWithoutGeneratingNewTokens([ids[N + s]]);
  decode.push(performance.now() - start);
}
console.log(JSON.stringify({side: "llama.cpp (node-llama-cpp 3.21.1)", tokens: N, threads: T,
                            prefill_median_ms: median(prefill), decode_median_ms: median(decode)}));
await context.dispose();
await model.dispose();
