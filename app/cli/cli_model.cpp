// The `model` command (see cli_model.h):
//   1 parse the options (syntax only), 2 load the model folder (config, tokenizer, weights),
//   3 tokenize (invalid UTF-8 is replaced and reported), 4 check the sizes, 5 run the
//   forward pass, 6 write OUT.npz and OUT.tokens.json atomically, 7 print the prediction.
#include "app/cli/cli_model.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "app/cli/cli.h"
#include "app/cli/cli_common.h"
#include "app/cli/options.h"
#include "core/models/transformer.h"
#include "formats/files.h"
#include "formats/models/model_folder.h"
#include "formats/npy.h"
#include "formats/npz.h"

namespace attn::app {
namespace {

namespace fs = std::filesystem;
using cli::fail;
using cli::optionError;

// Largest attention tensor we write: the .npz reader of the attention views inflates at most
// this much by default, so a bigger file could not be opened again.
constexpr std::uint64_t kMaxAttentionBytes = io::kNpzDefaultMaxUncompressed;
constexpr int kMaxPredict = 1000;

struct ModelRequest {
  std::string folder;
  std::string text;
  std::vector<int> ids;    // --ids: run these instead of tokenizing --text
  bool hasIds = false;
  bool bos = false;        // --bos given
  // 1 --bos, 0 --no-bos, -1 neither: a --text gets the BOS its tokenizer's post-processor
  // puts first (Tokenizer::addsBos()); --ids are run as given.
  int bosChoice = -1;
  std::string outPath;     // empty: no files
  std::string tokensPath;  // OUT.tokens.json next to OUT.npz
  int predict = 0;         // 0: no prediction
  bool help = false;
};

// "15496,995" -> ids (each 0..2^31-1; the model checks them against vocab_size).
Expected<std::vector<int>> parseIds(const std::string& text) {
  std::vector<int> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    auto id = parseIntStrict(item, 0, std::numeric_limits<int>::max());
    if (!id) {
      return Error{"", "", "item " + std::to_string(ids.size() + 1) + " " + cli::inQuotes(item) +
                               " is not a token id (comma-separated integers >= 0)"};
    }
    ids.push_back(*id);
    start = comma + 1;
  }
  return ids;
}

// The options of `model`, declared once.
cli::Command modelCommand(ModelRequest& request) {
  cli::Command command;
  command.name = "model";
  command.column = 20;
  command.usage = R"(usage: attnscope model DIR (--text TEXT | --ids I,J,...) [--bos | --no-bos]
                         [--out OUT.npz] [--predict K]

Runs a decoder model on the CPU, offline. DIR is a Hugging Face folder: config.json
(model_type gpt2, llama, mistral, qwen2 or gpt_neox; every size and option is read from
it), model.safetensors or model.safetensors.index.json with its shards (F32, F16 or BF16),
and its tokenizer: tokenizer.json, else tokenizer.model (SentencePiece), else vocab.json +
merges.txt (see docs/models.md). A Hugging Face cache folder works: models--ORG--NAME/
snapshots/HASH/.
)";
  command.options = {
      cli::textOption("--text", "TEXT",
                      "the input text (any UTF-8; invalid bytes become U+FFFD, with a warning;\n"
                      "a TEXT that starts with \"--\" is given as --text=TEXT); needs the\n"
                      "folder's tokenizer; special tokens typed in it (<|endoftext|>, <s>) are\n"
                      "one token each",
                      request.text),
      cli::customOption("--ids", "I,J,...", "run these token ids instead of a text (any family)",
                        [&request](const std::string& v) -> Status {
                          Expected<std::vector<int>> list = parseIds(v);
                          if (!list) return list.error();
                          request.ids = std::move(list).value();
                          request.hasIds = true;
                          return Ok{};
                        }),
      cli::flagOption("--bos",
                      "put the BOS token first: the tokenizer's, else config.json's bos_token_id\n"
                      "(default for --text: as the tokenizer's post-processor does, e.g. <s> for\n"
                      "Llama; for --ids: not)",
                      request.bos),
      cli::customOption("--no-bos", "", "do not put it first", nullptr),
      // Checked after parsing (checkOutputPath: .npz, the folder).
      cli::customOption("--out", "OUT.npz",
                        "write the arrays\n"
                        "  attention  float32 [layers, heads, n, n]  (row = query, causal)\n"
                        "  token_ids  int64 [n]\n"
                        "and the side file OUT.tokens.json: each token's decoded text, a JSON\n"
                        "list (\" world\", \"\\n\"; a token holding part of a UTF-8 character is \"�\")",
                        nullptr),
      cli::intOption("--predict", "K", 1, kMaxPredict,
                     "print the K most probable next tokens as JSON on stdout (1..1000):\n"
                     "{\"model_type\", \"heads_kv\", \"tokens\": n,\n"
                     " \"next\": [{\"id\", \"text\", \"probability\", \"logit\"}, ...]}\n"
                     "(\"text\" is null without a tokenizer)",
                     request.predict),
  };
  command.notes = R"(At least one of --out and --predict is needed. The text may have at most n_positions
tokens (1024 for GPT-2). Errors (exit 2) name the file and the tensor or field: a missing
tensor, a wrong shape, an unsupported dtype, offsets outside the file, a header too big.
)";
  return command;
}

// Options through the declarations, then the positional DIR and the checks across options.
Expected<ModelRequest> parseModelArgs(std::span<const std::string> args) {
  ModelRequest request;
  Expected<cli::ParsedArgs> parsed = cli::parseCommand(modelCommand(request), args);
  if (!parsed) return parsed.error();
  request.help = parsed->help;
  if (request.help) return request;
  if (parsed->positional.empty()) {
    return Error{"", "", "'model' needs a model folder DIR (see attnscope model --help)"};
  }
  if (parsed->positional.size() > 1) {
    return Error{"", "",
                 "unexpected argument " + cli::inQuotes(parsed->positional[1]) +
                     " for 'model' (only one DIR)"};
  }
  request.folder = parsed->positional[0];
  const bool text = parsed->has("--text"), ids = parsed->has("--ids");
  if (text && ids) return optionError("--ids", "give either --text or --ids, not both");
  if (!text && !ids) return optionError("--text", "missing (give --text TEXT or --ids I,J,...)");
  if (parsed->has("--bos") && parsed->has("--no-bos")) {
    return optionError("--bos", "give either --bos or --no-bos, not both");
  }
  request.bosChoice = parsed->has("--bos") ? 1 : parsed->has("--no-bos") ? 0 : -1;
  Expected<std::string> outPath = cli::checkOutputPath(*parsed, {".npz"}, /*required=*/false);
  if (!outPath) return outPath.error();
  request.outPath = *outPath;
  if (!request.outPath.empty()) {
    // OUT.npz -> OUT.tokens.json in the same folder (the attention views' side-file rule).
    fs::path p(request.outPath);
    request.tokensPath = (p.parent_path() / p.stem()).string() + ".tokens.json";
  }
  if (request.outPath.empty() && request.predict == 0) {
    return optionError("--out", "missing (give --out FILE.npz, --predict K, or both)");
  }
  return request;
}

// A token's text for the files: the tokenizer's decoding, or null without a tokenizer.
nlohmann::json tokenJson(const io::ModelFolder& model, int id) {
  if (!model.tokenizer) return nullptr;
  return model.tokenizer->tokenText(id);
}

// The JSON of --predict: {"model_type", "heads_kv", "tokens": n, "next": [{"id", "text",
// "probability", "logit"}...]}.
std::string predictionJson(const model::Session& session, const io::ModelFolder& model, int k) {
  nlohmann::ordered_json next = nlohmann::ordered_json::array();
  for (const model::TokenProbability& t : session.topK(k)) {
    next.push_back({{"id", t.id},
                    {"text", tokenJson(model, t.id)},
                    {"probability", t.probability},
                    {"logit", t.logit}});
  }
  nlohmann::ordered_json out = {{"model_type", session.config().modelType},
                                {"heads_kv", session.config().nHeadKv},
                                {"tokens", session.size()},
                                {"next", next}};
  return out.dump() + "\n";
}

}  // namespace

cli::CommandInfo modelInfo() {
  ModelRequest request;
  return cli::describe(modelCommand(request));
}

int runModelCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // 1 options
  Expected<ModelRequest> request = parseModelArgs(args);
  if (!request) return fail(err, request.error());
  if (request->help) {
    ModelRequest defaults;
    out << cli::helpText(modelCommand(defaults));
    return 0;
  }

  // 2 the model folder
  Expected<io::ModelFolder> model = io::loadModelFolder(request->folder);
  if (!model) return fail(err, model.error());
  const model::Config& config = model->weights->config;

  // 3 tokens
  io::Tokenizer::Encoding encoding;
  if (request->hasIds) {
    encoding.ids = request->ids;
  } else if (!model->tokenizer) {
    return fail(err, optionError("--text",
                                 "needs a tokenizer, and this " + config.modelType +
                                     " folder has none attnscope reads (" +
                                     (model->tokenizerProblem.empty() ? std::string("no tokenizer.json") : model->tokenizerProblem) + "); give --ids I,J,...",
                                 request->folder));
  } else {
    encoding = model->tokenizer->encode(request->text);
  }
  const bool addBos = request->bosChoice == 1 ||
                      (request->bosChoice == -1 && !request->hasIds && model->tokenizer &&
                       model->tokenizer->addsBos());
  if (addBos) {
    if (model->tokenizer && model->tokenizer->bosId() >= 0) {
      encoding.ids.insert(encoding.ids.begin(), model->tokenizer->bosId());
    } else {
      Expected<int> bos = io::loadBosTokenId((fs::path(request->folder) / "config.json").string());
      if (!bos) return fail(err, bos.error());
      encoding.ids.insert(encoding.ids.begin(), *bos);
    }
  }
  if (!encoding.invalidOffsets.empty()) {
    err << "attnscope: warning: option '--text': " << encoding.invalidOffsets.size()
        << (encoding.invalidOffsets.size() == 1 ? " invalid UTF-8 sequence"
                                                : " invalid UTF-8 sequences")
        << " replaced by U+FFFD (first at byte " << encoding.invalidOffsets.front() << ")\n";
  }
  const auto n = static_cast<std::uint64_t>(encoding.ids.size());
  if (n == 0) return fail(err, optionError("--text", "is empty (no tokens to run)"));

  // 4 sizes, before any work
  if (n > static_cast<std::uint64_t>(config.nPositions)) {
    return fail(
        err,
        optionError("--text", std::to_string(n) + " tokens are more than the model's context of " +
                                  std::to_string(config.nPositions) + " (n_positions)"));
  }
  const std::uint64_t attentionBytes = static_cast<std::uint64_t>(config.nLayer) *
                                       static_cast<std::uint64_t>(config.nHead) * n * n * 4;
  if (!request->outPath.empty() && attentionBytes > kMaxAttentionBytes) {
    return fail(
        err, optionError("--text",
                         std::to_string(n) + " tokens make an attention tensor of " +
                             std::to_string(attentionBytes >> 20) +
                             " MiB, above the 2048 MiB an .npz may hold here; use a shorter text"));
  }

  // 5 forward
  Expected<model::Session> session = model::forward(model->weights, encoding.ids);
  if (!session) {
    Error error = session.error();
    if (error.file.empty()) error.file = request->folder;
    return fail(err, error);
  }

  // 6 files: the attention streams from the session's packed triangles into the archive,
  // one head's n x n block at a time (no [L, H, n, n] tensor in memory)
  if (!request->outPath.empty()) {
    const std::int64_t shape[4] = {config.nLayer, config.nHead, static_cast<std::int64_t>(n),
                                   static_cast<std::int64_t>(n)};
    Expected<std::string> attentionHeader = io::npyHeaderFloat32(shape);
    const std::vector<std::int64_t> ids(encoding.ids.begin(), encoding.ids.end());
    const std::int64_t idShape[1] = {static_cast<std::int64_t>(n)};
    Expected<std::string> idsNpy = io::writeNpyInt64(ids, idShape);
    if (!attentionHeader) return fail(err, attentionHeader.error());
    if (!idsNpy) return fail(err, idsNpy.error());
    const model::Session& run = *session;
    std::vector<io::NpzStreamEntry> entries(2);
    entries[0].name = "attention";
    entries[0].npyHeader = *attentionHeader;
    entries[0].dataBytes = attentionBytes;
    entries[0].produce = [&run, &config, n](const io::ChunkWriter& write) -> Status {
      std::vector<float> block(static_cast<std::size_t>(n * n));
      for (int l = 0; l < config.nLayer; ++l) {
        for (int h = 0; h < config.nHead; ++h) {
          std::fill(block.begin(), block.end(), 0.0f);
          for (std::size_t i = 0; i < n; ++i) {
            const std::span<const float> row = run.attentionRow(l, h, static_cast<int>(i));
            std::copy(row.begin(), row.end(), block.begin() + static_cast<std::ptrdiff_t>(i * n));
          }
          if (Status s = write({reinterpret_cast<const char*>(block.data()), block.size() * 4}); !s)
            return s;
        }
      }
      return Ok{};
    };
    const std::string& idsBytes = *idsNpy;
    const std::size_t idsHeader = idsBytes.size() - n * 8;
    entries[1].name = "token_ids";
    entries[1].npyHeader = idsBytes.substr(0, idsHeader);
    entries[1].dataBytes = n * 8;
    entries[1].produce = [&idsBytes, idsHeader](const io::ChunkWriter& write) {
      return write(std::string_view(idsBytes).substr(idsHeader));
    };

    nlohmann::json tokens = nlohmann::json::array();
    for (int id : encoding.ids) {
      tokens.push_back(model->tokenizer ? nlohmann::json(model->tokenizer->tokenText(id))
                                        : nlohmann::json("#" + std::to_string(id)));
    }
    // Tokens first: the views read OUT.tokens.json next to OUT.npz, and a new .npz must
    // never sit beside an old tokens file of another text.
    if (Status s = io::writeFileAtomic(request->tokensPath, tokens.dump(1) + "\n"); !s) {
      Error error = s.error();
      if (error.file.empty()) error.file = request->tokensPath;
      return fail(err, error);
    }
    if (Status s = io::writeNpzStreamed(request->outPath, entries); !s) {
      Error error = s.error();
      if (error.file.empty()) error.file = request->outPath;
      return fail(err, error);
    }
  }

  // 7 prediction
  if (request->predict > 0) {
    out << predictionJson(*session, *model, request->predict);
    out.flush();
  }
  return 0;
}

// =======================================================================================
// The window with a model
// =======================================================================================

namespace {

// The options of `--model DIR`, declared once.
cli::Command modelWindowCommand(GuiLaunch& launch) {
  cli::Command command;
  command.name = "--model";
  command.column = 20;
  command.usage = R"(usage: attnscope --model DIR [--text TEXT]

Opens the window with the GPT-2 model folder DIR loaded (on a worker thread; see
attnscope model --help for the folder) and TEXT typed into the Model panel. The Attention
panel shows every layer's and head's attention as you type, the Model panel the next-token
prediction and the residual-stream norms. A bad folder gives an error notice and the window
opens without a model.
)";
  command.options = {
      cli::textOption("--text", "TEXT", "the text typed into the Model panel", launch.modelText)};
  return command;
}

}  // namespace

cli::CommandInfo modelWindowInfo() {
  GuiLaunch launch;
  return cli::describe(modelWindowCommand(launch));
}

int runModelWindow(std::span<const std::string> args, std::ostream& out, std::ostream& err,
                   const WindowRunner& window) {
  GuiLaunch launch;
  const cli::Command command = modelWindowCommand(launch);
  int exitCode = 0;
  std::optional<cli::ParsedArgs> parsed = cli::parseOrAnswer(command, args, out, err, exitCode);
  if (!parsed) return exitCode;
  if (parsed->positional.size() != 1) {
    return fail(err, Error{"", "", "'--model' needs one model folder DIR (see attnscope --model --help)"});
  }
  launch.modelFolder = parsed->positional[0];
  out.flush();
  return openWindow(window, launch, "'--model'", err);
}

std::vector<cli::Option> modelScreenshotOptions(GuiLaunch& launch, bool& pipeline) {
  return {
      cli::textOption("--model", "DIR", "load the folder and show the Model and Attention panels",
                      launch.modelFolder),
      cli::textOption("--text", "TEXT", "the text typed into the Model panel", launch.modelText),
      cli::flagOption("--pipeline",
                      "open the selected head (--select L,H) in the pipeline: a new\n"
                      "scenario of its real q, k and v",
                      pipeline),
  };
}

Status checkModelScreenshot(const cli::ParsedArgs& parsed, bool pipeline, GuiLaunch& launch) {
  if (!parsed.has("--model")) {
    if (parsed.has("--text")) return optionError("--text", "only applies with --model DIR");
    if (pipeline) return optionError("--pipeline", "only applies with --model DIR");
    return Ok{};
  }
  if (pipeline) {
    if (launch.attention.layer < 0) return optionError("--pipeline", "needs --select LAYER,HEAD");
    launch.modelPipeline = true;
  }
  return Ok{};
}

}  // namespace attn::app
