"""glassroom.e2b (E2B's code-interpreter SDK names and behaviour) against a
real gateway (GLASSROOM_URL; the key from GLASSROOM_API_KEY, or E2B_API_KEY)."""

import asyncio
import os
import threading
import unittest
from unittest import mock

from glassroom.e2b import (AsyncSandbox, BarChart, ChartType, Context, EntryInfo, FileNotFoundException, FileType,
                           InvalidArgumentException, LineChart, Result, Sandbox, SandboxNotFoundException,
                           TimeoutException)

CHART_CODE = """
import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [4, 5, 6], label="s")
plt.title("Growth")
plt.show()
"""


class E2BSyncTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sbx = Sandbox.create(timeout=120)
        self.addCleanup(lambda: Sandbox.kill(self.sbx.sandbox_id))

    def test_e2b_api_key_fallback(self) -> None:
        env = dict(os.environ)
        env["E2B_API_KEY"] = env.pop("GLASSROOM_API_KEY", env.get("E2B_API_KEY", ""))
        with mock.patch.dict(os.environ, env, clear=True):
            s = Sandbox.connect(self.sbx.sandbox_id)
            self.assertEqual(s.run_code("6 * 7").text, "42")

    def test_chart_and_data(self) -> None:
        x = self.sbx.run_code(CHART_CODE)
        self.assertIsInstance(x.results[0], Result)
        chart = x.results[0].chart
        self.assertIsInstance(chart, LineChart)
        self.assertEqual((chart.type, chart.title), (ChartType.LINE, "Growth"))
        self.assertEqual(chart.elements[0].points, [(1, 4), (2, 5), (3, 6)])
        self.assertIn("chart", x.results[0].formats())
        x = self.sbx.run_code("import matplotlib.pyplot as plt\nplt.bar(['a', 'b'], [3, 5])\nplt.show()")
        self.assertIsInstance(x.results[0].chart, BarChart)
        self.assertEqual([(e.label, e.value) for e in x.results[0].chart.elements], [("a", 3), ("b", 5)])
        x = self.sbx.run_code("import pandas as pd\npd.DataFrame({'a': [1, 2, 3]})")
        self.assertEqual(x.results[0].data, {"a": [1, 2, 3]})
        self.assertNotIn("application/vnd.glassroom.dataframe+json", x.results[0].formats())

    def test_callbacks_get_e2b_results(self) -> None:
        seen = []
        x = self.sbx.run_code(CHART_CODE, on_result=seen.append, on_stdout=lambda m: None)
        self.assertIs(seen[0], x.results[0])
        self.assertIsInstance(seen[0].chart, LineChart)

    def test_language_and_context_exclusive(self) -> None:
        ctx = self.sbx.create_code_context()
        self.assertIsInstance(ctx, Context)
        self.assertEqual((ctx.language, ctx.cwd), ("python", "/home/user"))
        with self.assertRaisesRegex(InvalidArgumentException, "not both"):
            self.sbx.run_code("1", language="python", context=ctx)
        self.sbx.run_code("y = 5", context=ctx)
        self.assertEqual(self.sbx.run_code("y", context=ctx).text, "5")
        self.assertIn(ctx.id, [c.id for c in self.sbx.list_code_contexts()])

    def test_execution_timeout(self) -> None:
        with self.assertRaisesRegex(TimeoutException, "Execution timed out"):
            self.sbx.run_code("import time; time.sleep(30)", timeout=2)

    def test_killed_during_run_code(self) -> None:
        t = threading.Timer(1.5, self.sbx.kill)
        t.start()
        self.addCleanup(t.cancel)
        with self.assertRaisesRegex(TimeoutException, "sandbox was killed while the request was in progress"):
            self.sbx.run_code("import time; time.sleep(120)")
        self.assertFalse(self.sbx.is_running())
        self.assertFalse(Sandbox.kill(self.sbx.sandbox_id))
        with self.assertRaises(SandboxNotFoundException):
            Sandbox.connect(self.sbx.sandbox_id)

    def test_files_absolute_paths(self) -> None:
        f = self.sbx.files
        w = f.write("/home/user/d/x.txt", "hi")
        self.assertEqual((w.path, w.name, w.type), ("/home/user/d/x.txt", "x.txt", FileType.FILE))
        self.assertEqual(self.sbx.run_code("open('d/x.txt').read()").text, "hi")
        self.assertEqual(f.read("/home/user/d/x.txt", format="bytes"), bytearray(b"hi"))
        f.write_files([{"path": "/home/user/d/e/y.txt", "data": b"yo"}])
        paths = [e.path for e in f.list("/home/user/d", depth=2)]
        self.assertEqual(sorted(paths), ["/home/user/d/e", "/home/user/d/e/y.txt", "/home/user/d/x.txt"])
        info = f.get_info("/home/user/d/x.txt")
        self.assertIsInstance(info, EntryInfo)
        self.assertEqual((info.size, info.path), (2, "/home/user/d/x.txt"))
        self.assertTrue(f.make_dir("/home/user/m"))
        self.assertFalse(f.make_dir("/home/user/m"))
        self.assertTrue(f.exists("/home/user/m"))
        f.remove("/home/user/m")
        self.assertFalse(f.exists("/home/user/m"))
        with self.assertRaises(FileNotFoundException):
            f.read("/home/user/nope.txt")
        with self.assertRaises(InvalidArgumentException):
            f.read("/etc/passwd")

    def test_commands(self) -> None:
        r = self.sbx.commands.run("echo $FOO", envs={"FOO": "bar"})
        self.assertEqual(r.stdout, "bar\n")

    def test_info_and_class_methods(self) -> None:
        info = Sandbox.get_info(self.sbx.sandbox_id)
        self.assertEqual(info.sandbox_id, self.sbx.sandbox_id)
        self.assertEqual(str(info.state), "running")
        self.assertTrue(self.sbx.is_running())
        self.assertIs(self.sbx.connect(), self.sbx)


class E2BAsyncTest(unittest.IsolatedAsyncioTestCase):
    async def test_async(self) -> None:
        sbx = await AsyncSandbox.create(timeout=120)
        try:
            got = []

            async def on_result(r: Result) -> None:
                got.append(r)
            x = await sbx.run_code(CHART_CODE, on_result=on_result)
            self.assertIsInstance(got[0].chart, LineChart)
            self.assertIs(x.results[0], got[0])
            x = await sbx.run_code("import os; os.getenv('A')", envs={"A": "b"})
            self.assertEqual(x.text, "b")
            await sbx.files.write("/home/user/q.txt", "q")
            self.assertEqual(await sbx.files.read("/home/user/q.txt"), "q")
            self.assertTrue(await sbx.is_running())
            again = await AsyncSandbox.connect(sbx.sandbox_id)
            self.assertEqual((await again.run_code("1 + 1")).text, "2")
            ctx = await sbx.create_code_context()
            self.assertIn(ctx.id, [c.id for c in await sbx.list_code_contexts()])
            with self.assertRaisesRegex(TimeoutException, "Execution timed out"):
                await sbx.run_code("import time; time.sleep(30)", timeout=2)
            killer = asyncio.get_running_loop().call_later(1.5, lambda: asyncio.ensure_future(AsyncSandbox.kill(sbx.sandbox_id)))
            try:
                with self.assertRaisesRegex(TimeoutException, "killed while the request was in progress"):
                    await sbx.run_code("import time; time.sleep(120)")
            finally:
                killer.cancel()
            self.assertFalse(await sbx.is_running())
        finally:
            await AsyncSandbox.kill(sbx.sandbox_id)


if __name__ == "__main__":
    unittest.main()
