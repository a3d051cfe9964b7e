"""The user guide's example, changed only in its import line, runs as a program."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class GuideExample(unittest.TestCase):
    def test_guide_example(self) -> None:
        from glassroom import Sandbox
        before = {s.sandbox_id for s in Sandbox.list()}
        out = subprocess.run([sys.executable, os.path.join(HERE, "guide_example.py")], capture_output=True,
                             timeout=120, env=os.environ.copy())
        stdout = out.stdout.decode("utf-8")
        self.assertEqual(out.returncode, 0, out.stderr.decode("utf-8", "replace"))
        # print(execution.logs.stdout) prints the list of chunks.
        self.assertIn("均值: 46.57", stdout)
        self.assertIn("标准差: 24.55", stdout)
        self.assertTrue(stdout.startswith("["), stdout)
        # sandbox.close() deleted the session.
        self.assertEqual({s.sandbox_id for s in Sandbox.list()}, before)


if __name__ == "__main__":
    unittest.main()
