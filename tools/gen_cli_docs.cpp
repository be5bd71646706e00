// Writes attnscope's man page and bash completion from the CLI's option declarations
// (app/cli/options.h, commandDeclarations()), so that `--help`, the man page and the
// completion have one source. It links the headless CLI and runs it in-process for the help
// texts. CMake runs it after building (cmake/install.cmake):
//   build/gen_cli_docs VERSION OUT_DIR
// writes OUT_DIR/attnscope.1 and OUT_DIR/attnscope.bash.
//
// What it uses:
//   `attnscope --help` (in-process): the "usage:" block (SYNOPSIS), the "commands:" block
//   (each line "  NAME  description", continuation lines indented deeper) for the one-line
//   summaries, and the rest (exit status).
//   `attnscope help NAME`: printed whole under COMMANDS.
//   commandDeclarations(): each command's options for the completion; the "--model"
//   pseudo-command's options are those of the window itself.
#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/cli.h"
#include "formats/files.h"

namespace {

struct Command {
  std::string name, summary, help;
  std::vector<std::string> options;
};

// Runs the CLI in-process on `args` and returns what it printed; exits on failure.
std::string capture(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = attn::app::runCli(args, out, err, nullptr);
  if (code != 0) {
    std::string joined;
    for (const std::string& a : args) joined += " " + a;
    std::fprintf(stderr, "gen_cli_docs: 'attnscope%s' failed: %s\n", joined.c_str(),
                 err.str().c_str());
    std::exit(2);
  }
  return out.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines of the block that starts after the line `header` and ends at the next line that
// is empty or not indented.
std::vector<std::string> block(const std::vector<std::string>& all, const std::string& header) {
  std::vector<std::string> out;
  auto it = std::find(all.begin(), all.end(), header);
  if (it == all.end()) return out;
  for (++it; it != all.end() && !it->empty() && (*it)[0] == ' '; ++it) out.push_back(*it);
  return out;
}

// roff: a backslash is \e; a line starting with . or ' must not be read as a request.
std::string roffLine(const std::string& line) {
  std::string out;
  for (char c : line) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string verbatim(const std::vector<std::string>& text) {
  std::string out = ".nf\n";
  for (const std::string& line : text) out += line.empty() ? ".sp\n" : roffLine(line) + "\n";
  return out + ".fi\n";
}

std::string manPage(const std::string& version, const std::vector<std::string>& mainHelp,
                    const std::vector<Command>& commands) {
  std::string title = mainHelp.empty() ? "attnscope" : mainHelp[0];
  const auto dash = title.find(" - ");
  const std::string summary = dash == std::string::npos ? title : title.substr(dash + 3);
  std::string man;
  man += ".TH ATTNSCOPE 1 \"\" \"attnscope " + version + "\" \"User Commands\"\n";
  man += ".SH NAME\nattnscope \\- " + roffLine(summary) + "\n";
  man += ".SH SYNOPSIS\n" + verbatim(block(mainHelp, "usage:"));
  man += ".SH DESCRIPTION\n";
  man += "attnscope shows how attention works: heatmaps of scores, weights and context "
         "vectors, attention files saved from models (.npy, .npz), GPT\\-2 runs, images and "
         "training. Without a command it opens the window; with one it runs headless.\n";
  man += ".SS Commands\n";
  for (const Command& c : commands) man += ".TP\n.B " + c.name + "\n" + roffLine(c.summary) + "\n";
  // What --help says after the commands (exit codes ...).
  auto after = std::find(mainHelp.begin(), mainHelp.end(), "commands:");
  if (after != mainHelp.end()) {
    while (after != mainHelp.end() && !after->empty()) ++after;
    std::vector<std::string> rest(after, mainHelp.end());
    while (!rest.empty() && rest.front().empty()) rest.erase(rest.begin());
    if (!rest.empty()) man += ".SS Exit status\n" + verbatim(rest);
  }
  man += ".SH COMMANDS\nEach section is what \\fBattnscope help\\fR \\fICOMMAND\\fR prints.\n";
  for (const Command& c : commands) man += ".SS " + c.name + "\n" + verbatim(lines(c.help));
  man += ".SH ENVIRONMENT\n.TP\n.B ATTNSCOPE_DATA_DIR\n"
         "The folder holding scenarios/ (the presets), images/ and shaders/. By default "
         "attnscope looks next to its executable: \\fI../share/attnscope\\fR for an install, "
         "the source tree's assets/ for a build folder.\n"
         ".TP\n.B XDG_STATE_HOME\nThe autosave is "
         "\\fI$XDG_STATE_HOME/attnscope/autosave.json\\fR (default "
         "\\fI~/.local/state/attnscope/autosave.json\\fR).\n";
  man += ".SH FILES\n.TP\n.I <prefix>/share/attnscope/scenarios/\nthe presets (read-only "
         "templates: Save As writes elsewhere)\n";
  man += ".SH SEE ALSO\nThe documentation in the source tree: README.md and docs/.\n";
  return man;
}

std::string completion(const std::vector<Command>& commands,
                       const std::vector<std::string>& mainOptions) {
  std::string names;
  for (const Command& c : commands) names += (names.empty() ? "" : " ") + c.name;
  std::string top = names + " help";
  for (const std::string& o : mainOptions) top += " " + o;
  std::string script =
      "# bash completion for attnscope, generated by tools/gen_cli_docs.cpp from the help\n"
      "# texts of `attnscope --help` and `attnscope help COMMAND`.\n"
      "_attnscope() {\n"
      "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" opts\n"
      "  COMPREPLY=()\n"
      "  if [[ $COMP_CWORD -eq 1 ]]; then\n"
      "    if [[ $cur == -* || -z $cur ]]; then\n"
      "      COMPREPLY=($(compgen -W \"" + top + "\" -- \"$cur\"))\n"
      "    fi\n"
      "    if [[ $cur != -* ]]; then\n"
      "      COMPREPLY+=($(compgen -W \"" + names + " help\" -- \"$cur\"))\n"
      "      COMPREPLY+=($(compgen -f -X '!*.@(json|npy|npz|png|jpg|jpeg|bmp)' -- \"$cur\"))\n"
      "      COMPREPLY+=($(compgen -d -- \"$cur\"))\n"
      "    fi\n"
      "    return 0\n"
      "  fi\n"
      "  case \"${COMP_WORDS[1]}\" in\n";
  for (const Command& c : commands) {
    std::string opts;
    for (const std::string& o : c.options) opts += (opts.empty() ? "" : " ") + o;
    script += "    " + c.name + ") opts=\"" + opts + "\" ;;\n";
  }
  script += "    help) COMPREPLY=($(compgen -W \"" + names +
            "\" -- \"$cur\")); return 0 ;;\n"
            "    *) opts=\"\" ;;\n"
            "  esac\n"
            "  if [[ $cur == -* ]]; then\n"
            "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
            "  else\n"
            "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
            "  fi\n"
            "  return 0\n"
            "}\n"
            "shopt -s extglob\n"
            "complete -o filenames -F _attnscope attnscope\n";
  return script;
}

bool write(const std::string& path, const std::string& text) {
  if (attn::Status written = attn::io::writeFileAtomic(path, text); !written) {
    std::fprintf(stderr, "gen_cli_docs: %s: %s\n", path.c_str(), written.error().message().c_str());
    return false;
  }
  return true;
}

// "  NAME  text": the command's name and summary, else nullopt (a continuation line).
bool commandEntry(const std::string& line, std::string& name, std::string& summary) {
  if (line.size() < 3 || line[0] != ' ' || line[1] != ' ' || line[2] == ' ') return false;
  const std::size_t end = line.find_first_not_of("abcdefghijklmnopqrstuvwxyz", 2);
  if (end == std::string::npos || end == 2 || line.compare(end, 2, "  ") != 0) return false;
  name = line.substr(2, end - 2);
  summary = line.substr(line.find_first_not_of(' ', end));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gen_cli_docs VERSION OUT_DIR\n");
    return 2;
  }
  const std::string version = argv[1], folder = argv[2];
  const std::vector<std::string> mainHelp = lines(capture({"--help"}));
  const std::vector<attn::app::cli::CommandInfo> declared = attn::app::commandDeclarations();

  // 1 the commands and their one-line summaries ("  NAME  text", continuations deeper)
  std::vector<Command> commands;
  for (const std::string& line : block(mainHelp, "commands:")) {
    std::string name, summary;
    if (commandEntry(line, name, summary)) {
      commands.push_back({name, summary, "", {}});
    } else if (!commands.empty()) {
      const std::size_t text = line.find_first_not_of(' ');
      if (text == std::string::npos) continue;
      commands.back().summary.append(1, ' ').append(line, text, std::string::npos);
    }
  }
  if (commands.empty()) {
    std::fprintf(stderr, "gen_cli_docs: `attnscope --help` lists no commands\n");
    return 2;
  }
  // 2 each command's help, and its declared options
  std::set<std::string> top = {"--help", "--version"};
  for (const attn::app::cli::CommandInfo& info : declared) {
    if (info.name == "--model") {  // the window's own options
      top.insert("--model");
      for (const auto& option : info.options) top.insert(option.name);
    }
  }
  for (Command& c : commands) {
    c.help = capture({"help", c.name});
    auto info = std::find_if(declared.begin(), declared.end(),
                             [&](const attn::app::cli::CommandInfo& i) { return i.name == c.name; });
    if (info == declared.end()) {
      std::fprintf(stderr, "gen_cli_docs: `attnscope --help` lists '%s', which declares no options\n",
                   c.name.c_str());
      return 2;
    }
    c.options = {"--help", "-h"};
    for (const auto& option : info->options) c.options.push_back(option.name);
    std::sort(c.options.begin(), c.options.end());
  }
  const bool ok = write(folder + "/attnscope.1", manPage(version, mainHelp, commands)) &&
                  write(folder + "/attnscope.bash",
                        completion(commands, {top.begin(), top.end()}));
  if (ok) {
    std::printf("gen_cli_docs: %zu commands -> %s/attnscope.1, %s/attnscope.bash\n",
                commands.size(), folder.c_str(), folder.c_str());
  }
  return ok ? 0 : 2;
}
