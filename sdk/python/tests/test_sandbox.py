"""The Python SDK against a real gateway (GLASSROOM_URL, GLASSROOM_API_KEY)."""

import asyncio
import base64
import io
import os
import re
import tempfile
import threading
import unittest
from datetime import datetime

from glassroom import (AsyncSandbox, AuthenticationException, EntryInfo, Execution, ExecutionError, FileType,
                       InvalidArgumentException, NextInput, NotFoundException, OutputMessage, Result, Sandbox,
                       TimeoutException, UserExpression)


class SandboxTest(unittest.TestCase):
    sbx: Sandbox

    @classmethod
    def setUpClass(cls) -> None:
        cls.sbx = Sandbox(envs={"GREETING": "hej"}, timeout=300)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sbx.kill()

    def test_state_text_and_results(self) -> None:
        self.sbx.run_code("x = 41")
        x = self.sbx.run_code("x + 1")
        self.assertIsInstance(x, Execution)
        self.assertEqual(x.text, "42")
        self.assertTrue(x.results[0].is_main_result)
        self.assertEqual(x.results[0].formats(), ["text"])
        self.assertIsNone(x.error)
        self.assertGreater(x.execution_count or 0, 0)
        self.assertEqual(self.sbx.run_code("'quoted'").text, "quoted")  # as E2B
        self.assertEqual(self.sbx.run_code("import os; os.environ['GREETING']").text, "hej")
        self.assertIsNone(self.sbx.run_code("y = 1").text)

    def test_envs_and_cwd_of_one_execution(self) -> None:
        self.sbx.files.make_dir("sub")
        show = "import os, subprocess\nprint(os.environ.get('GREETING'), os.environ.get('ONCE'), os.getcwd())\n" \
               "print(subprocess.run(['sh', '-c', 'echo \"$GREETING $ONCE $PWD\"'], capture_output=True, text=True).stdout, end='')"
        envs = {"GREETING": "once", "ONCE": "it's"}
        want = "once it's /home/user/sub\nonce it's /home/user/sub\n"
        self.assertEqual("".join(self.sbx.run_code(show, envs=envs, cwd="sub").logs.stdout), want)
        seen = []
        self.sbx.run_code(show, envs=envs, cwd="/workspace/sub", on_stdout=lambda m: seen.append(m.line))
        self.assertEqual("".join(seen), want)
        self.assertEqual("".join(self.sbx.run_code(show).logs.stdout), "hej None /home/user\nhej  /home/user\n")
        with self.assertRaises(InvalidArgumentException) as cm:
            self.sbx.run_code(show, envs={"LD_PRELOAD": "x"})
        self.assertIn("LD_PRELOAD", str(cm.exception))
        x = self.sbx.run_code(show, cwd="no/such/dir")
        assert x.error is not None
        self.assertEqual(x.error.name, "SettingsError")
        self.assertIn("no such directory", x.error.value)

    def test_logs_are_chunks(self) -> None:
        x = self.sbx.run_code("import sys, time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.05)\n"
                              "print('oops', file=sys.stderr)")
        self.assertGreaterEqual(len(x.logs.stdout), 2)
        self.assertEqual("".join(x.logs.stdout), "0\n1\n2\n")
        self.assertEqual(x.logs.stderr, ["oops\n"])

    def test_error(self) -> None:
        x = self.sbx.run_code("def f():\n    return 1/0\nf()")
        assert x.error is not None
        self.assertIsInstance(x.error, ExecutionError)
        self.assertEqual((x.error.name, x.error.value), ("ZeroDivisionError", "division by zero"))
        self.assertIsInstance(x.error.traceback, str)
        self.assertIn("return 1/0", re.sub(r"\x1b\[[0-9;]*m", "", x.error.traceback))  # ANSI colours, as Jupyter sends
        self.assertEqual(x.status, "error")

    def test_rich_results(self) -> None:
        x = self.sbx.run_code("import matplotlib.pyplot as plt\nfrom IPython.display import display, HTML, JSON\n"
                              "plt.plot([1, 2, 3]); plt.show()\ndisplay(HTML('<b>bold</b>'))\ndisplay(JSON({'k': 1}))\n{'a': 1}")
        png, html, js, main = x.results
        self.assertIn("png", png.formats())
        self.assertTrue(base64.b64decode(png.png or "").startswith(b"\x89PNG"))
        self.assertFalse(png.is_main_result)
        self.assertEqual(html.html, "<b>bold</b>")
        self.assertEqual(js.json, {"k": 1})
        self.assertTrue(main.is_main_result)
        self.assertEqual(x.text, "{'a': 1}")
        self.assertEqual(png["png"], png.png)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "plot.png")
            png.save_png(path)
            with open(path, "rb") as f:
                self.assertEqual(f.read(4), b"\x89PNG")
            with self.assertRaises(ValueError):
                html.save_png(path)

    def test_callbacks_stream(self) -> None:
        stdout, stderr, results, errors = [], [], [], []

        def on_stdout(m: OutputMessage) -> None:
            stdout.append(m)
            if m.line.startswith("waiting"):
                # Only a streamed chunk can get here while the code waits for this file.
                self.sbx.files.write("go", "1")

        x = self.sbx.run_code(
            "import os, sys, time\nprint('waiting', flush=True)\nfor _ in range(300):\n"
            "    if os.path.exists('go'): break\n    time.sleep(0.1)\nelse:\n    print('not streamed')\n"
            "print('warn', file=sys.stderr)\n7 * 6",
            on_stdout=on_stdout, on_stderr=stderr.append, on_result=results.append, on_error=errors.append)
        self.assertEqual([m.line for m in stdout], ["waiting\n"])
        self.assertIsInstance(stdout[0].timestamp, int)
        self.assertTrue(stderr[0].error)
        self.assertEqual(results[0].text, "42")
        self.assertEqual(x.text, "42")
        self.assertEqual(x.logs.stdout, ["waiting\n"])
        self.assertEqual([f.path for f in x.files], ["go"])
        rest = self.sbx.run_code("open('rest.txt', 'w').write('abc')")
        self.assertEqual([(f.path, f.size, f.change) for f in rest.files], [("rest.txt", 3, "created")])
        x = self.sbx.run_code("raise ValueError('bad')", on_error=errors.append)
        self.assertEqual(errors[0].name, "ValueError")
        self.assertIs(errors[0], x.error)

    def test_user_expressions(self) -> None:
        # Over REST (no callbacks) and over the WebSocket (a callback).
        for streamed in (False, True):
            with self.subTest(streamed=streamed):
                seen: list = []
                kw = {"on_stdout": seen.append} if streamed else {}
                x = self.sbx.run_code("ue = 6\nprint('ran')", user_expressions={"twice": "ue * 2", "bad": "1/0", "s": "'a'"},
                                      **kw)
                self.assertEqual(x.logs.stdout, ["ran\n"])
                self.assertEqual(set(x.user_expressions), {"twice", "bad", "s"})
                ok = x.user_expressions["twice"]
                self.assertIsInstance(ok, UserExpression)
                self.assertEqual((ok.status, ok.text, ok.data, ok.error), ("ok", "12", {"text/plain": "12"}, None))
                self.assertEqual(x.user_expressions["s"].text, "'a'")  # the repr, quotes kept
                bad = x.user_expressions["bad"]
                self.assertEqual((bad.status, bad.text, bad.data), ("error", None, {}))
                assert bad.error is not None
                self.assertEqual((bad.error.name, bad.error.value), ("ZeroDivisionError", "division by zero"))
                self.assertIn("ZeroDivisionError", bad.error.traceback)
                self.assertIsNone(x.error)  # an expression's error is not the execution's
                self.assertEqual(len(seen), 1 if streamed else 0)
                # ipykernel evaluates them only after code that succeeded.
                y = self.sbx.run_code("raise KeyError('k')", user_expressions={"v": "ue"}, **kw)
                self.assertEqual(y.error.name if y.error else None, "KeyError")
                self.assertEqual(y.user_expressions, {})
                self.assertEqual(self.sbx.run_code("ue", **kw).user_expressions, {})
                with self.assertRaises(InvalidArgumentException):
                    self.sbx.run_code("1", user_expressions={"": "1"}, **kw)  # the gateway's bounds
        with self.assertRaises(InvalidArgumentException):
            self.sbx.run_code("1", user_expressions={"n": 1})  # type: ignore[dict-item]

    def test_pages_and_next_input(self) -> None:
        self.sbx.files.write("loadme.py", "print('loaded')\n")
        for streamed in (False, True):
            with self.subTest(streamed=streamed):
                kw = {"on_stdout": lambda m: None} if streamed else {}
                x = self.sbx.run_code("len?", **kw)
                self.assertEqual(len(x.pages), 1)
                self.assertIsInstance(x.pages[0], Result)
                self.assertIn("Return the number of items", x.pages[0].text or "")
                self.assertEqual((x.results, x.error, x.next_input, x.exit_requested), ([], None, None, False))
                x = self.sbx.run_code("%load loadme.py", **kw)
                assert x.next_input is not None
                self.assertIsInstance(x.next_input, NextInput)
                self.assertIn("print('loaded')", x.next_input.text)
                self.assertTrue(x.next_input.replace)  # %load replaces the cell it ran in
                self.assertEqual((x.pages, x.results, x.error), ([], [], None))
                x = self.sbx.run_code("1 + 1", **kw)
                self.assertEqual((x.pages, x.next_input, x.exit_requested), ([], None, False))

    def test_exit_requested(self) -> None:
        with Sandbox() as s:  # its own: exit() asks the front end to end the kernel
            self.assertTrue(s.run_code("exit()").exit_requested)
            self.assertTrue(s.run_code("exit()", on_stdout=lambda m: None).exit_requested)

    def test_timeout_raises_with_partial_output(self) -> None:
        with self.assertRaises(TimeoutException) as cm:
            self.sbx.run_code("print('before', flush=True)\nimport time\ntime.sleep(30)", timeout=1)
        self.assertEqual(cm.exception.execution.logs.stdout, ["before\n"])
        self.assertEqual(self.sbx.run_code("1 + 1").text, "2")

    def test_interrupt(self) -> None:
        started = threading.Event()
        out = []
        t = threading.Thread(target=lambda: out.append(self.sbx.run_code(
            "import time\nprint('s', flush=True)\ntime.sleep(60)", on_stdout=lambda m: started.set())))
        t.start()
        self.assertTrue(started.wait(30))
        self.sbx.interrupt()
        t.join(30)
        self.assertEqual(out[0].error.name, "KeyboardInterrupt")
        self.assertEqual(out[0].status, "interrupted")

    def test_files(self) -> None:
        f = self.sbx.files
        info = f.write("data/in.csv", "a,b\n1,2\n")
        self.assertEqual((info.path, info.name, info.type, info.size), ("data/in.csv", "in.csv", FileType.FILE, 8))
        f.write("/workspace/data/raw.bin", bytes(range(256)))
        self.assertEqual(f.write("/home/user/data/abs.txt", "abs").path, "data/abs.txt")
        f.write("data/streamed.txt", io.BytesIO(b"x" * 200000))
        self.assertEqual(self.sbx.run_code("import pandas as pd\nint(pd.read_csv('data/in.csv').b.sum())").text, "2")
        self.assertEqual(f.read("data/in.csv"), "a,b\n1,2\n")
        self.assertEqual(f.read("data/raw.bin", format="bytes"), bytearray(range(256)))
        with f.read("data/streamed.txt", format="stream") as s:
            self.assertEqual(sum(len(c) for c in s), 200000)
        names = {e.path: e for e in f.list("data")}
        self.assertEqual(set(names), {"data/in.csv", "data/raw.bin", "data/streamed.txt", "data/abs.txt"})
        self.assertIsInstance(names["data/in.csv"], EntryInfo)
        self.assertIsInstance(names["data/in.csv"].modified_time, datetime)
        self.assertIn("data/in.csv", {e.path for e in f.list(".", depth=2)})
        self.assertTrue(f.exists("data/in.csv"))
        self.assertTrue(f.exists("data"))
        self.assertFalse(f.exists("data/nope"))
        self.assertTrue(f.make_dir("made/deep"))
        self.assertFalse(f.make_dir("made/deep"))
        self.assertEqual(f.get_info("made/deep").type, FileType.DIR)
        f.remove("data")
        self.assertFalse(f.exists("data/in.csv"))
        with self.assertRaises(NotFoundException):
            f.read("data/in.csv")
        with self.assertRaises(InvalidArgumentException):
            f.write("/etc/passwd", "x")
        with self.assertRaises(InvalidArgumentException):
            f.write("../escape", "x")

    def test_info_timeout_connect(self) -> None:
        self.sbx.set_timeout(123)
        info = self.sbx.get_info()
        self.assertEqual((info.sandbox_id, info.idle_timeout_s), (self.sbx.sandbox_id, 123))
        self.assertLess(info.started_at, info.end_at)
        self.assertTrue(self.sbx.is_running())
        self.assertEqual(Sandbox.get_info(self.sbx.sandbox_id).sandbox_id, self.sbx.sandbox_id)
        self.sbx.run_code("shared = 'yes'")
        other = Sandbox.connect(self.sbx.sandbox_id)
        self.assertEqual(other.run_code("shared").text, "yes")
        self.assertIn(self.sbx.sandbox_id, {s.sandbox_id for s in Sandbox.list()})
        with self.assertRaises(NotFoundException):
            Sandbox.connect("no-such-session-0000")

    def test_restart(self) -> None:
        self.sbx.run_code("gone = 1")
        self.sbx.files.write("kept.txt", "k")
        self.sbx.restart()
        x = self.sbx.run_code("gone")
        self.assertEqual(x.error.name if x.error else None, "NameError")
        self.assertTrue(self.sbx.files.exists("kept.txt"))


class LifecycleTest(unittest.TestCase):
    def test_context_manager_and_kill_by_id(self) -> None:
        with Sandbox.create() as s:
            self.assertEqual(s.run_code("1 + 1").text, "2")
        self.assertFalse(s.is_running())
        s2 = Sandbox()
        self.assertTrue(Sandbox.kill(s2.sandbox_id))
        self.assertFalse(Sandbox.kill(s2.sandbox_id))
        self.assertFalse(s2.close())

    def test_bad_key_and_missing_key(self) -> None:
        with self.assertRaises(AuthenticationException):
            Sandbox(api_key="wrong-key-0123456789")
        saved = os.environ.pop("GLASSROOM_API_KEY")
        try:
            with self.assertRaises(InvalidArgumentException):
                Sandbox()
        finally:
            os.environ["GLASSROOM_API_KEY"] = saved
        with Sandbox() as s:
            with self.assertRaises(InvalidArgumentException):
                s.run_code("1", language="cobol")

    def test_result_model(self) -> None:
        r = Result({"text/plain": "x", "image/png": "AAAA", "application/x-thing": {"a": 1}}, is_main_result=True)
        self.assertEqual(r.formats(), ["text", "png", "application/x-thing"])
        self.assertEqual(r.extra, {"application/x-thing": {"a": 1}})
        self.assertEqual(r.raw["image/png"], "AAAA")


class AsyncTest(unittest.TestCase):
    def test_async_sandbox(self) -> None:
        async def main() -> None:
            seen = []

            async def on_stdout(m: OutputMessage) -> None:
                await asyncio.sleep(0)
                seen.append(m.line)

            async with await AsyncSandbox.create() as sbx:
                x = await sbx.run_code("print('hi')\n40 + 2", on_stdout=on_stdout, on_result=lambda r: seen.append(r.text))
                self.assertEqual(x.text, "42")
                self.assertEqual(seen, ["hi\n", "42"])
                await sbx.files.write("a.txt", "async")
                self.assertEqual(await sbx.files.read("a.txt"), "async")
                self.assertTrue(await sbx.files.exists("a.txt"))
                self.assertEqual((await sbx.get_info()).sandbox_id, sbx.sandbox_id)
                ue = await sbx.run_code("a = 20", user_expressions={"n": "a + 1"}, on_stdout=on_stdout)
                self.assertEqual(ue.user_expressions["n"].text, "21")
                same = await AsyncSandbox.connect(sbx.sandbox_id)
                self.assertEqual((await same.run_code("x = 1; x")).text, "1")
            self.assertFalse(await sbx.is_running())
        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()


class VolumeTest(unittest.TestCase):
    def test_volume_outlives_its_sandboxes(self) -> None:
        from glassroom import ConflictException, Volume
        import glassroom.e2b as e2b
        import uuid
        name = "t-" + uuid.uuid4().hex[:12]
        try:
            v = Volume.create(name, size_mb=32)
        except Exception as e:  # a gateway that keeps no volumes (not root) says so
            if "no volumes" in str(e):
                self.skipTest(str(e))
            raise
        try:
            self.assertEqual((v.name, v.size_mb), (name, 32))
            self.assertIn(name, [x.name for x in Volume.list()])
            with Sandbox(volumes={name: "/home/user/data"}) as sbx:
                sbx.files.write("/home/user/data/kept.txt", "kept")
                with self.assertRaises(ConflictException):
                    Volume.destroy(name)
            # E2B's spelling: volume_mounts={path: volume}.
            sbx = e2b.Sandbox.create(volume_mounts={"/home/user/again": v})
            try:
                self.assertEqual(sbx.run_code("open('/home/user/again/kept.txt').read()").text, "kept")
            finally:
                sbx.kill()
        finally:
            Volume.destroy(name)
        self.assertFalse(Volume.destroy(name))
