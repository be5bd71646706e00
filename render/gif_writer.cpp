// Animated GIF through giflib (see gif_writer.h).
#include "render/gif_writer.h"

#include <gif_lib.h>

#include <cstring>

#include "formats/files.h"

namespace attn::io {

namespace {

int appendBytes(GifFileType* gif, const GifByteType* data, int length) {
  static_cast<std::string*>(gif->UserData)->append(reinterpret_cast<const char*>(data),
                                                   static_cast<size_t>(length));
  return length;
}

std::string gifError(int code) {
  const char* text = GifErrorString(code);
  return text ? text : "unknown giflib error " + std::to_string(code);
}

}  // namespace

Status writeGif(const std::vector<Image>& frames, int delayCentiseconds, const std::string& path) {
  if (frames.empty()) return Error{path, "frames", "no frames to write"};
  const int width = frames.front().width, height = frames.front().height;
  if (width < 1 || height < 1 || width > 65535 || height > 65535)
    return Error{path, "frames", "a GIF frame must be 1..65535 px a side"};
  for (const Image& frame : frames) {
    if (frame.width != width || frame.height != height ||
        frame.rgb.size() != static_cast<size_t>(width) * static_cast<size_t>(height) * 3)
      return Error{path, "frames", "the frames differ in size"};
  }
  if (delayCentiseconds < 1 || delayCentiseconds > 65535)
    return Error{path, "delay", "must be 1..65535 hundredths of a second"};

  std::string bytes;
  int error = 0;
  GifFileType* gif = EGifOpen(&bytes, appendBytes, &error);
  if (!gif) return Error{path, "", "giflib: " + gifError(error)};
  auto fail = [&](const char* what) -> Status {
    const std::string message = std::string("giflib: ") + what + ": " + gifError(gif->Error);
    EGifCloseFile(gif, &error);
    return Error{path, "", message};
  };
  EGifSetGifVersion(gif, true);  // GIF89a: the delays and the loop need it
  if (EGifPutScreenDesc(gif, width, height, 8, 0, nullptr) == GIF_ERROR)
    return fail("screen descriptor");
  // NETSCAPE2.0: loop forever
  const unsigned char loop[3] = {1, 0, 0};
  if (EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
      EGifPutExtensionBlock(gif, 11, "NETSCAPE2.0") == GIF_ERROR ||
      EGifPutExtensionBlock(gif, 3, loop) == GIF_ERROR || EGifPutExtensionTrailer(gif) == GIF_ERROR)
    return fail("loop extension");

  const size_t pixels = static_cast<size_t>(width) * static_cast<size_t>(height);
  std::vector<GifByteType> red(pixels), green(pixels), blue(pixels), indices(pixels);
  for (const Image& frame : frames) {
    for (size_t i = 0; i < pixels; ++i) {
      red[i] = frame.rgb[3 * i];
      green[i] = frame.rgb[3 * i + 1];
      blue[i] = frame.rgb[3 * i + 2];
    }
    int colours = 256;
    GifColorType palette[256];
    std::memset(palette, 0, sizeof palette);
    if (GifQuantizeBuffer(static_cast<unsigned>(width), static_cast<unsigned>(height), &colours,
                          red.data(), green.data(), blue.data(), indices.data(),
                          palette) == GIF_ERROR)
      return fail("quantising a frame");
    ColorMapObject* map = GifMakeMapObject(256, palette);
    // graphics control: no disposal needed (every frame covers the screen), the delay
    const unsigned char control[4] = {0, static_cast<unsigned char>(delayCentiseconds & 0xFF),
                                      static_cast<unsigned char>(delayCentiseconds >> 8), 0};
    const bool ok =
        map && EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, control) != GIF_ERROR &&
        EGifPutImageDesc(gif, 0, 0, width, height, false, map) != GIF_ERROR;
    GifFreeMapObject(map);
    if (!ok) return fail("frame header");
    for (int y = 0; y < height; ++y) {
      if (EGifPutLine(gif, indices.data() + static_cast<size_t>(y) * static_cast<size_t>(width),
                      width) == GIF_ERROR)
        return fail("frame pixels");
    }
  }
  if (EGifCloseFile(gif, &error) == GIF_ERROR) return Error{path, "", "giflib: " + gifError(error)};
  return writeFileAtomic(path, bytes);
}

}  // namespace attn::io
