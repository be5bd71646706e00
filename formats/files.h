// The ONE way attnscope writes a file (scenario save, autosave, heatmap export, `compute
// --out`, screenshots), the one PNG encoder and writer, the one capped reader of a whole
// file, and the one way an error gets its file name. No GL, no UI.
//
// writeFileAtomic() rules, in the order they are checked:
//   1 Symlinks are followed (up to 40 hops, relative links against the link's folder), so a
//     symlink stays a symlink and the file it points to is updated. A dangling link creates
//     the file it names.
//   2 A directory is refused ("is a directory").
//   3 A FIFO or a character device (a named pipe, /dev/null, a terminal), and anything
//     reached through procfs (/dev/stdout, /dev/fd/N, /proc/self/fd/N, even when it is a
//     regular file behind a shell redirect), is opened and written into directly, as Unix
//     tools do; it is never replaced. Block devices and sockets are refused, and so is a
//     new file directly in /dev (a typo such as /dev/nul must not become a regular file).
//   4 An existing regular file without a write bit is refused ("is read-only"). As root every
//     file is writable by access(), so root goes by the mode bits: any write bit allows it.
//   5 Otherwise the bytes go to a temporary file in the target's folder, named
//     ".<name>.attnscope-tmp-<pid>-<random>", which is fsync'ed, given the old file's mode
//     (and owner and group, where allowed), renamed over the target, and then the folder is
//     fsync'ed. After a kill -9 at any moment the target is the old or the new file, never a
//     mix; only the temporary can be left behind, and cleanStaleTemporaries() removes it.
//   Every error names the file and the problem (with the system's errno text).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/types.h"

namespace attn::io {

struct Image;  // formats/image.h: width x height RGB pixels, row 0 at the top

// Writes `bytes` to `path` by the rules above. Also removes stale temporaries of this same
// target left by a killed writer (see cleanStaleTemporaries).
Status writeFileAtomic(const std::string& path, std::string_view bytes);

// Streaming form for large outputs: `produce` is called once and hands each chunk to
// `write` (which returns an error Status once writing failed; `produce` should then stop
// and return it). Same rules; the target is only replaced when `produce` returns Ok. An
// exception from `produce` passes through after the temporary is removed.
using ChunkWriter = std::function<Status(std::string_view chunk)>;
Status writeFileStreamed(const std::string& path,
                         const std::function<Status(const ChunkWriter& write)>& produce);

// How writeFileAtomic treats an existing file of this st_mode (from stat, after following
// symlinks). Public so tests can check the device path without touching a real device.
enum class WriteMethod { Replace, InPlace, Refuse };
WriteMethod writeMethodFor(mode_t mode);

// True when `name` (a file name, no folder) has the form of one of our temporaries:
// ".<target>.attnscope-tmp-<pid>-<hex>". Sets *pid to the writer's process id.
bool isTemporaryName(std::string_view name, pid_t* pid = nullptr);

// Removes the temporaries in `dir` that a writer left behind: only names for which
// isTemporaryName() holds, only regular files (never a symlink or folder), and only when
// the writer's process no longer exists (kill(pid, 0) fails with ESRCH), so a save running
// right now in another attnscope is never disturbed. Returns how many were removed; errors
// are ignored (cleaning is best effort). Called by the window at start for the autosave and
// document folders, and by every writeFileAtomic() for its own target's temporaries.
// (A writer in another PID namespace sharing the folder would look dead; documented in
// docs/files.md.)
int cleanStaleTemporaries(const std::string& dir);

// True when both paths name the same existing file (same device and inode after following
// symlinks), so hard links and "./x" vs "x" count too. False if either does not exist.
bool sameFile(const std::string& a, const std::string& b);

// The one PNG encoder (stb_image_write), used by heatmap exports and window screenshots:
// 8-bit RGB, row 0 at the top. Errors when the image is empty or its size does not match.
Expected<std::string> encodePng(const Image& image);
// The same encoder for 8-bit RGBA pixels (width*height*4 bytes, row 0 at the top; alpha 0 =
// transparent), for the application icon (tools/gen_icon.cpp). Same errors.
Expected<std::string> encodePngRgba(int width, int height, const std::vector<std::uint8_t>& rgba);

// encodePng + writeFileAtomic: every PNG attnscope writes (exports, grids, overlays,
// screenshots) goes through here. Errors name `path`.
Status writePng(const Image& image, const std::string& path);

// ---------------------------------------------------------------------------------------
// Reading and naming
// ---------------------------------------------------------------------------------------

// Reads a whole file if it is a regular file of at most `maxBytes` (vocab.json, merges.txt,
// config.json, the recent-files list). Errors name the file: "cannot open: <errno text>",
// "not a regular file", "is N bytes, more than the limit of M", "read error", "grew past the
// size limit while reading".
Expected<std::string> readCapped(const std::string& path, std::size_t maxBytes);

// The error with `path` as its file when it names none yet (an error from a layer that does
// not know the file, such as the PNG encoder or a style check). The one spelling of
// `if (error.file.empty()) error.file = path`.
Error withFile(Error error, const std::string& path);

// The system's text for an errno value ("No such file or directory"), for messages.
std::string systemMessage(int error);

// The file name's extension in lower case, with its dot: "a/B.PNG" -> ".png", "x" -> "".
// How a path picks its format (heatmap exports, grids, overlays).
std::string lowerExtension(const std::string& path);

// `text` as a file-name part: ASCII letters and digits in lower case, every other run of
// bytes one '_', none at either end; `fallback` when nothing is left.
// "Decoder state (Luong)" -> "decoder_state_luong"; "" -> fallback. The one rule for the
// names the window proposes (scenario files, screenshots, heatmap exports).
std::string fileSlug(std::string_view text, std::string_view fallback);

}  // namespace attn::io
