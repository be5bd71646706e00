"""show() opens the window and returns at once (run under xvfb-run by ctest):
    xvfb-run -a python3 tests/python/test_show.py
The window must still be running 3 s later (it did not fail on the file or the display),
its title must appear among the X windows, and it must close on terminate()."""

import os
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

import attnscope

# The window autosaves its session: into a scratch folder, not the user's.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="attnscope-state-")


def log(window):
    with open(window.log_path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Show(unittest.TestCase):
    def test_show_returns_at_once_and_the_window_runs(self):
        rng = np.random.default_rng(2)
        attention = np.exp(rng.standard_normal((2, 2, 4, 4))).astype(np.float32)
        attention /= attention.sum(axis=-1, keepdims=True)
        start = time.monotonic()
        window = attnscope.show(attention, ["w", "x", "y", "z"], layer=1, head=1)
        returned = time.monotonic() - start
        try:
            self.assertLess(returned, 2.0)
            self.assertIsNone(window.poll())  # still starting: show() did not wait
            deadline = time.monotonic() + 20
            titles = ""
            while time.monotonic() < deadline and "attnscope" not in titles:
                time.sleep(0.5)
                if window.poll() is not None:
                    self.fail(f"the window exited with {window.returncode}: {log(window)}")
                titles = subprocess.run(["xwininfo", "-root", "-tree"], stdout=subprocess.PIPE,
                                        text=True).stdout
            self.assertIn("attnscope", titles)
            time.sleep(2)
            if window.poll() is not None:
                self.fail(f"the window exited with {window.returncode}: {log(window)}")
        finally:
            window.terminate()
            window.wait(timeout=20)
        print(f"show() returned after {returned * 1000:.0f} ms", file=sys.stderr)

    def test_a_head_out_of_range_fails_before_the_window(self):
        window = attnscope.show(np.eye(3, dtype=np.float32), None, layer=0, head=4)
        self.assertEqual(window.wait(timeout=20), 2)
        self.assertIn("head 4 is out of range", log(window))


if __name__ == "__main__":
    unittest.main(verbosity=2)
