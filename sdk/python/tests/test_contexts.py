"""Code contexts and languages against a real gateway (GLASSROOM_URL,
GLASSROOM_API_KEY): E2B's create_code_context, list_code_contexts,
remove_code_context, restart_code_context and run_code(language=...,
context=...). A language the gateway has not installed is skipped, or fails
when CI=true."""

import asyncio
import os
import threading
import unittest
from typing import List

from glassroom import (WORKSPACE, AsyncSandbox, Context, InvalidArgumentException, NotFoundException, OutputMessage,
                       Sandbox)

# Code that prints 42 in each language, under its canonical name and an alias E2B uses.
PRINT42 = {
    "r": ("r", 'cat(6 * 7, "\\n", sep = "")'),
    "javascript": ("js", "console.log(6 * 7)"),
    "typescript": ("ts", "const n: number = 6 * 7\nconsole.log(n)"),
    "bash": ("bash", "echo $((6 * 7))"),
    "java": ("jshell", "System.out.println(6 * 7);"),
}


def installed(sbx: Sandbox) -> List[str]:
    return [str(k["name"]) for k in sbx._conn.call("GET", "/v1/kernels")["kernels"]]


class ContextTest(unittest.TestCase):
    sbx: Sandbox

    @classmethod
    def setUpClass(cls) -> None:
        cls.sbx = Sandbox(timeout=300)
        cls.installed = installed(cls.sbx)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sbx.kill()

    def need(self, lang: str) -> None:
        if lang in self.installed:
            return
        msg = f"the {lang} kernel is not installed on this gateway (installed: {self.installed})"
        if os.environ.get("CI") == "true":
            self.fail(msg)
        self.skipTest(msg)

    def test_python_contexts(self) -> None:
        sbx = self.sbx
        sbx.run_code("x = 'first'")
        ctx = sbx.create_code_context(cwd=WORKSPACE + "/sub")
        self.assertIsInstance(ctx, Context)
        self.assertTrue(ctx.id.startswith("python3-"), ctx)
        self.assertEqual((ctx.language, ctx.cwd, ctx.default), ("python3", "/home/user/sub", False))
        self.assertEqual(sbx.run_code("import os\nos.getcwd()", context=ctx).text, "/home/user/sub")
        gone = sbx.run_code("x", context=ctx)
        self.assertEqual(gone.error.name if gone.error else None, "NameError")
        sbx.run_code("x = 'second'", context=ctx.id)
        self.assertEqual(sbx.run_code("x").text, "first")
        self.assertEqual(sbx.run_code("x", language="python").text, "first")
        self.assertEqual(sbx.run_code("x", context="default").text, "first")
        seen: List[str] = []
        self.assertEqual(sbx.run_code("print(x)\nx", context=ctx, on_stdout=lambda m: seen.append(m.line)).text, "second")
        self.assertEqual(seen, ["second\n"])  # Result.text drops a str's quotes, as E2B's does
        listed = sbx.list_code_contexts()
        self.assertEqual(listed[0].id, "default")
        self.assertTrue(listed[0].default)
        self.assertEqual(listed[0].cwd, WORKSPACE)
        self.assertIn(ctx.id, [c.id for c in listed])

        sbx.restart_code_context(ctx)
        gone = sbx.run_code("x", context=ctx)
        self.assertEqual(gone.error.name if gone.error else None, "NameError")
        self.assertEqual(sbx.run_code("x").text, "first")

        sbx.remove_code_context(ctx.id)
        self.assertNotIn(ctx.id, [c.id for c in sbx.list_code_contexts()])
        with self.assertRaises(NotFoundException):
            sbx.run_code("1", context=ctx)
        with self.assertRaises(InvalidArgumentException):
            sbx.remove_code_context("default")
        with self.assertRaises(InvalidArgumentException):
            sbx.run_code("1", context=Context("default", "python3", WORKSPACE), language="bash")

    def test_interrupt_one_context(self) -> None:
        ctx = self.sbx.create_code_context()
        started = threading.Event()
        out = []
        t = threading.Thread(target=lambda: out.append(self.sbx.run_code(
            "import time\nprint('s', flush=True)\ntime.sleep(60)", context=ctx, on_stdout=lambda m: started.set())))
        t.start()
        self.assertTrue(started.wait(60))
        # The first context runs beside the busy one.
        self.assertEqual(self.sbx.run_code("6 * 7", timeout=20).text, "42")
        self.sbx.interrupt(context=ctx)
        t.join(30)
        self.assertEqual(out[0].error.name, "KeyboardInterrupt")
        self.sbx.remove_code_context(ctx)

    def test_errors(self) -> None:
        with self.assertRaises(InvalidArgumentException):
            self.sbx.run_code("1", language="cobol")
        with self.assertRaises(InvalidArgumentException) as cm:
            self.sbx.create_code_context(language="cobol")
        self.assertIn('unknown language "cobol"', str(cm.exception))
        with self.assertRaises(InvalidArgumentException):
            self.sbx.create_code_context(cwd="/etc")
        with self.assertRaises(InvalidArgumentException):
            self.sbx.run_code("1", context="")
        with self.assertRaises(InvalidArgumentException):
            Sandbox(language="cobol")

    def test_workspace_is_home_user(self) -> None:
        self.assertEqual(WORKSPACE, "/home/user")
        self.sbx.files.write("/home/user/where.txt", "here")
        self.assertEqual(self.sbx.files.read("/workspace/where.txt"), "here")
        self.assertEqual(self.sbx.files.read("where.txt"), "here")
        x = self.sbx.run_code("import os\n(os.getcwd(), os.environ['HOME'], open('/workspace/where.txt').read())")
        self.assertEqual(x.text, "('/home/user', '/home/user', 'here')")

    def test_languages(self) -> None:
        for lang, (alias, code) in PRINT42.items():
            with self.subTest(lang):
                self.need(lang)
                # In the sandbox's default context of that language, by name and by alias.
                x = self.sbx.run_code(code, language=lang)
                self.assertEqual((x.error, "".join(x.logs.stdout)), (None, "42\n"))
                streamed: List[OutputMessage] = []
                x = self.sbx.run_code(code, language=alias, on_stdout=streamed.append)
                self.assertEqual("".join(m.line for m in streamed), "42\n")
                mine = [c for c in self.sbx.list_code_contexts() if c.language == lang]
                self.assertEqual(len(mine), 1)
                self.assertTrue(mine[0].default)
                # A context of its own, and a sandbox whose first context is that language.
                ctx = self.sbx.create_code_context(language=alias)
                self.assertEqual(ctx.language, lang)
                self.assertEqual("".join(self.sbx.run_code(code, context=ctx).logs.stdout), "42\n")
                self.sbx.remove_code_context(ctx)
                with Sandbox(language=lang) as own:
                    self.assertEqual(own.get_info().language, lang)
                    self.assertEqual("".join(own.run_code(code).logs.stdout), "42\n")
                    self.assertEqual("".join(own.run_code("print(6 * 7)", language="python").logs.stdout), "42\n")


class AsyncContextTest(unittest.TestCase):
    def test_async_contexts(self) -> None:
        async def main() -> None:
            async with await AsyncSandbox.create() as sbx:
                ctx = await sbx.create_code_context(language="python")
                await sbx.run_code("v = 'ctx'", context=ctx)
                self.assertEqual((await sbx.run_code("v", context=ctx.id)).text, "ctx")
                first = await sbx.run_code("v")
                self.assertEqual(first.error.name if first.error else None, "NameError")
                self.assertEqual([c.id for c in await sbx.list_code_contexts()], ["default", ctx.id])
                await sbx.restart_code_context(ctx)
                self.assertIsNotNone((await sbx.run_code("v", context=ctx)).error)
                await sbx.interrupt(context=ctx)
                await sbx.remove_code_context(ctx)
                self.assertEqual([c.id for c in await sbx.list_code_contexts()], ["default"])
        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
