"""files.edit against a real gateway (GLASSROOM_URL, GLASSROOM_API_KEY)."""

import asyncio
import unittest

from glassroom import AsyncSandbox, ConflictException, EditResult, InvalidArgumentException, NotFoundException, Sandbox


class EditTest(unittest.TestCase):
    sbx: Sandbox

    @classmethod
    def setUpClass(cls) -> None:
        cls.sbx = Sandbox(timeout=300)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sbx.kill()

    def test_commands(self) -> None:
        files = self.sbx.files
        r = files.edit("lib/calc.py", "create", file_text="def f(x):\n    return x + 1\n")
        self.assertIsInstance(r, EditResult)
        self.assertEqual((r.path, r.created, r.lines), ("lib/calc.py", True, 2))
        r = files.edit("/workspace/lib/calc.py", "str_replace", old_str="x + 1", new_str="x * 2")
        self.assertIn("     2\t    return x * 2\n", r.text)
        files.edit("lib/calc.py", "insert", insert_line=0, new_str="# doubles")
        r = files.edit("lib/calc.py", "view", view_range=(1, 1))
        self.assertEqual((r.text, r.lines, r.start_line, r.end_line), ("     1\t# doubles\n", 3, 1, 1))
        self.assertEqual(self.sbx.run_code("import sys; sys.path.insert(0, 'lib'); import calc; calc.f(21)").text, "42")

    def test_refusals_change_nothing(self) -> None:
        files = self.sbx.files
        files.write("dup.txt", "a = 1\nb = 2\na = 1\n")
        with self.assertRaises(ConflictException) as cm:
            files.edit("dup.txt", "str_replace", old_str="a = 1", new_str="a = 3")
        self.assertEqual(cm.exception.code, "multiple_matches")
        self.assertIn("2 matches, at lines 1 and 3", cm.exception.message)
        with self.assertRaises(ConflictException) as cm:
            files.edit("dup.txt", "str_replace", old_str="c = 1", new_str="c = 3")
        self.assertEqual(cm.exception.code, "no_match")
        self.assertEqual(files.read("dup.txt"), "a = 1\nb = 2\na = 1\n")
        with self.assertRaises(InvalidArgumentException):
            files.edit("dup.txt", "insert", insert_line=9, new_str="x")
        with self.assertRaises(InvalidArgumentException):
            files.edit("dup.txt", "undo_edit")
        with self.assertRaises(InvalidArgumentException):
            files.edit("dup.txt", "view", view_range=[1])
        with self.assertRaises(NotFoundException):
            files.edit("missing.txt", "view")

    def test_async(self) -> None:
        async def go() -> EditResult:
            sbx = await AsyncSandbox.create(timeout=120)
            try:
                await sbx.files.edit("a.txt", "create", file_text="one\n")
                return await sbx.files.edit("a.txt", "insert", insert_line=1, new_str="two")
            finally:
                await sbx.kill()
        r = asyncio.run(go())
        self.assertEqual((r.lines, r.text), (2, "     1\tone\n     2\ttwo\n"))


if __name__ == "__main__":
    unittest.main()
