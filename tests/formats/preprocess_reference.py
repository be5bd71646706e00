#!/usr/bin/env python3
"""The image processors' preprocessing with PIL, for the tests (as Hugging Face's
ViTImageProcessor / DeiTImageProcessor run it: PIL's Image.resize on the 8-bit RGB picture,
the centre crop, image * rescale_factor in float64 then float32, (x - mean) / std).

Usage:
  preprocess_reference.py jpeg IN.png OUT.jpg QUALITY        writes a JPEG with PIL
  preprocess_reference.py run IMAGE W H RESAMPLE CROP_W CROP_H MEAN,MEAN,MEAN STD,STD,STD
      -> JSON list of the C x h x w floats (CROP_W = 0: no crop)
Exit 3 when PIL or numpy is missing (the C++ test skips).
"""
import json
import sys

try:
    import numpy as np
    from PIL import Image
except ImportError:
    sys.exit(3)


def main():
    if sys.argv[1] == "jpeg":
        Image.open(sys.argv[2]).convert("RGB").save(sys.argv[3], quality=int(sys.argv[4]))
        return
    path, w, h, resample, cw, ch = sys.argv[2], *map(int, sys.argv[3:8])
    mean = np.array([float(v) for v in sys.argv[8].split(",")], dtype=np.float32)
    std = np.array([float(v) for v in sys.argv[9].split(",")], dtype=np.float32)
    image = Image.open(path).convert("RGB").resize((w, h), resample=resample, reducing_gap=None)
    pixels = np.asarray(image)
    if cw > 0:  # transformers.image_transforms.center_crop
        top, left = (pixels.shape[0] - ch) // 2, (pixels.shape[1] - cw) // 2
        pixels = pixels[top:top + ch, left:left + cw]
    x = (pixels.astype(np.float64) * (1 / 255)).astype(np.float32)
    x = (x - mean) / std
    print(json.dumps(x.transpose(2, 0, 1).astype(np.float64).ravel().tolist()))


if __name__ == "__main__":
    main()
