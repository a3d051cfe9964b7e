"""sbx.commands against a real gateway (GLASSROOM_URL, GLASSROOM_API_KEY)."""

import asyncio
import http.client
import os
import threading
import time
import unittest
import urllib.parse
from typing import List

from glassroom import (AsyncSandbox, CommandExitException, CommandHandle, CommandResult, InvalidArgumentException,
                       NotFoundException, ProcessInfo, Sandbox, TimeoutException)

# Waits, inside the command, for the file "go" in the workspace (at most
# about 30 s), then says whether it came.
WAIT_FOR_GO = ("for i in $(seq 300); do [ -e go ] && break; sleep 0.1; done; "
               "if [ -e go ]; then echo came; else echo 'not streamed'; fi")


class CommandsTest(unittest.TestCase):
    sbx: Sandbox

    @classmethod
    def setUpClass(cls) -> None:
        cls.sbx = Sandbox(envs={"GREETING": "hej"}, timeout=300)
        cls.sbx.run_code("kept = 'state'")

    @classmethod
    def tearDownClass(cls) -> None:
        # No command ever costs the kernel its state.
        try:
            assert cls.sbx.run_code("kept").text == "state"
        finally:
            cls.sbx.kill()

    def test_preview(self) -> None:
        # A server the sandbox runs, reached on the gateway's preview origin
        # (GLASSROOM_PREVIEW_ADDR: where its *.localhost names lead).
        addr = os.environ.get("GLASSROOM_PREVIEW_ADDR")
        if not addr:
            self.skipTest("the gateway serves no previews (GLASSROOM_PREVIEW_ADDR)")
        self.sbx.commands.run("mkdir -p site && echo hi > site/index.html && exec python3 -m http.server -d site 8123",
                              background=True)
        for _ in range(300):
            if any(p.port == 8123 for p in self.sbx.ports()):
                break
            time.sleep(0.1)
        else:
            self.fail("port 8123 never listed: %r" % self.sbx.ports())

        def get(host: str, path: str, headers: dict) -> http.client.HTTPResponse:
            conn = http.client.HTTPConnection(addr, timeout=30)
            conn.request("GET", path, headers={"Host": host, **headers})
            return conn.getresponse()

        r = get(self.sbx.get_host(8123), "/index.html", {})  # the host is its own grant
        self.assertEqual((r.status, r.read()), (200, b"hi\n"))
        p = self.sbx.preview(8123, expires=60)
        link = urllib.parse.urlsplit(p.url)
        r = get(link.netloc, "/index.html", {"Glassroom-Preview-Token": p.token})
        self.assertEqual((r.status, r.read()), (200, b"hi\n"))
        r = get(link.netloc, "/index.html", {})
        self.assertEqual(r.status, 401)

    def test_run(self) -> None:
        r = self.sbx.commands.run("echo hi")
        self.assertIsInstance(r, CommandResult)
        self.assertEqual((r.stdout, r.stderr, r.exit_code, r.error, r.timed_out), ("hi\n", "", 0, None, False))
        self.assertGreater(r.pid, 0)
        r = self.sbx.commands.run("echo out; echo err >&2; printf %s \"$GREETING\"")
        self.assertEqual((r.stdout, r.stderr), ("out\nhej", "err\n"))

    def test_exit_code_raises(self) -> None:
        for kw in ({}, {"on_stdout": lambda s: None}):  # REST, and streamed over the WebSocket
            with self.subTest(**{k: True for k in kw}):
                with self.assertRaises(CommandExitException) as cm:
                    self.sbx.commands.run("echo out; echo err >&2; exit 3", **kw)
                e = cm.exception
                self.assertEqual((e.exit_code, e.stdout, e.stderr), (3, "out\n", "err\n"))
                self.assertIsInstance(e, CommandResult)
                self.assertEqual(e.result.exit_code, 3)
                self.assertIn("exit", e.error or "")
                self.assertIn("code 3", str(e))

    def test_streams_as_it_runs(self) -> None:
        if self.sbx.files.exists("go"):
            self.sbx.files.remove("go")
        out: List[str] = []
        err: List[str] = []

        def on_stdout(chunk: str) -> None:
            out.append(chunk)
            if "".join(out) == "waiting\n":
                # Only output streamed while the command runs can get here before it gives up.
                self.sbx.files.write("go", "1")

        r = self.sbx.commands.run("echo waiting; echo to-stderr >&2; " + WAIT_FOR_GO, on_stdout=on_stdout,
                                  on_stderr=err.append)
        self.assertEqual("".join(out), "waiting\ncame\n")
        self.assertEqual("".join(err), "to-stderr\n")
        self.assertEqual(r.stdout, "waiting\ncame\n")

    def test_background_stdin_and_wait(self) -> None:
        h = self.sbx.commands.run("echo ready; read line; echo \"got $line\"; cat; echo end >&2", background=True)
        self.assertIsInstance(h, CommandHandle)
        seen: List[str] = []

        def on_stdout(chunk: str) -> None:
            seen.append(chunk)
            if "".join(seen) == "ready\n":  # the command waits for stdin: its first line must have streamed
                h.send_stdin("one\n")
                self.sbx.commands.send_stdin(h.pid, b"two\n")
                h.close_stdin()

        r = h.wait(on_stdout=on_stdout)
        self.assertEqual("".join(seen), "ready\ngot one\ntwo\n")
        self.assertEqual((r.stdout, r.stderr, r.exit_code), ("ready\ngot one\ntwo\n", "end\n", 0))
        self.assertEqual((h.exit_code, h.stdout), (0, r.stdout))

    def test_foreground_stdin(self) -> None:
        self.assertEqual(self.sbx.commands.run("cat; echo .", stdin="fed\n").stdout, "fed\n.\n")
        self.assertEqual(self.sbx.commands.run("cat; echo .").stdout, ".\n")  # stdin closed: cat does not wait
        self.assertEqual(self.sbx.commands.run("wc -c", stdin="abc", on_stdout=lambda s: None).stdout.strip(), "3")

    def test_kill_and_list(self) -> None:
        h = self.sbx.commands.run("echo started; sleep 300", background=True, timeout=0)
        for out, err, _ in h:  # E2B's iteration over a handle: up to the first output
            self.assertEqual((out, err), ("started\n", None))
            break
        self.assertEqual(h.stdout, "started\n")
        running = {p.pid: p for p in self.sbx.commands.list()}
        self.assertIn(h.pid, running)
        p = running[h.pid]
        self.assertIsInstance(p, ProcessInfo)
        self.assertEqual((p.cmd, p.running, p.exit_code), ("echo started; sleep 300", True, None))
        self.assertIsNotNone(p.started_at)
        self.assertTrue(h.kill())
        with self.assertRaises(CommandExitException) as cm:
            h.wait()
        self.assertNotEqual(cm.exception.exit_code, 0)
        self.assertEqual(cm.exception.stdout, "started\n")
        self.assertNotIn(h.pid, {p.pid for p in self.sbx.commands.list()})
        done = {p.pid: p for p in self.sbx.commands.list(include_finished=True)}
        self.assertFalse(done[h.pid].running)
        self.assertEqual(done[h.pid].exit_code, cm.exception.exit_code)
        self.assertFalse(self.sbx.commands.kill(h.pid))  # ended already
        self.assertFalse(self.sbx.commands.kill(987654))

    def test_kill_by_pid_stops_a_stream(self) -> None:
        started = threading.Event()
        results: List[BaseException] = []

        def run() -> None:
            try:
                self.sbx.commands.run("echo up; sleep 300", timeout=0, on_stdout=lambda s: started.set())
            except BaseException as e:  # noqa: B902 (handed to the test's thread)
                results.append(e)
        t = threading.Thread(target=run)
        t.start()
        self.assertTrue(started.wait(60))
        pids = [p.pid for p in self.sbx.commands.list() if p.cmd == "echo up; sleep 300"]
        self.assertEqual(len(pids), 1)
        self.assertTrue(self.sbx.commands.kill(pids[0]))
        t.join(60)
        self.assertFalse(t.is_alive())
        self.assertIsInstance(results[0], CommandExitException)

    def test_connect(self) -> None:
        h = self.sbx.commands.run("read x; echo \"x=$x\"", background=True)
        other = self.sbx.commands.connect(h.pid)
        self.assertEqual(other.pid, h.pid)
        other.send_stdin("7\n")
        self.assertEqual(other.wait().stdout, "x=7\n")
        self.assertEqual(h.wait().stdout, "x=7\n")
        with self.assertRaises(NotFoundException):
            self.sbx.commands.connect(987654)
        with self.assertRaises(NotFoundException):
            self.sbx.commands.send_stdin(987654, "x")

    def test_envs_and_cwd(self) -> None:
        self.sbx.files.make_dir("sub/dir")
        r = self.sbx.commands.run('echo "$FOO:$GREETING:$(pwd)"', envs={"FOO": "bar baz"}, cwd="sub/dir")
        self.assertEqual(r.stdout, "bar baz:hej:/home/user/sub/dir\n")
        self.assertEqual(self.sbx.commands.run("pwd", cwd="/home/user/sub").stdout, "/home/user/sub\n")
        self.assertEqual(self.sbx.commands.run('echo "[$FOO]"').stdout, "[]\n")  # this command's only
        h = self.sbx.commands.run('echo "$FOO"; pwd', background=True, envs={"FOO": "bg"}, cwd="sub")
        self.assertEqual(h.wait().stdout, "bg\n/home/user/sub\n")
        with self.assertRaises(InvalidArgumentException):
            self.sbx.commands.run("pwd", cwd="../../etc")
        with self.assertRaises(InvalidArgumentException):
            self.sbx.commands.run("true", envs={"BAD-NAME": "x"})
        with self.assertRaises(InvalidArgumentException):
            self.sbx.commands.run("true", user="root")

    def test_timeout(self) -> None:
        for kw in ({}, {"on_stdout": lambda s: None}):
            with self.subTest(**{k: True for k in kw}):
                with self.assertRaises(TimeoutException) as cm:
                    self.sbx.commands.run("echo before; sleep 300", timeout=1, **kw)
                r = cm.exception.result
                assert r is not None
                self.assertEqual((r.stdout, r.exit_code, r.timed_out), ("before\n", -1, True))
        h = self.sbx.commands.run("sleep 300", background=True, timeout=1)
        with self.assertRaises(TimeoutException):
            h.wait()
        # No limit, and one past the gateway's foreground maximum (10 min), as E2B allows.
        self.assertEqual(self.sbx.commands.run("echo unlimited", timeout=0).stdout, "unlimited\n")
        self.assertEqual(self.sbx.commands.run("echo long", timeout=3600).stdout, "long\n")
        self.assertEqual(self.sbx.run_code("kept").text, "state")


class NoWebSocketTest(unittest.TestCase):
    def test_streams_by_polling_when_the_websocket_is_refused(self) -> None:
        import websocket
        with Sandbox(timeout=120) as sbx:
            url = sbx._conn.ws_url + f"/v1/sessions/{sbx.sandbox_id}/ws"
            held = []
            try:
                for _ in range(64):  # take every client slot of the session (429 past them)
                    try:
                        held.append(websocket.create_connection(url, header=["Authorization: Bearer " + sbx._conn.api_key],
                                                                suppress_origin=True, timeout=30))
                    except websocket.WebSocketBadStatusException as e:
                        self.assertEqual(e.status_code, 429)
                        break
                else:
                    self.fail("the gateway never refused a WebSocket")
                out: List[str] = []

                def on_stdout(chunk: str) -> None:
                    out.append(chunk)
                    if "".join(out) == "waiting\n":
                        sbx.files.write("go", "1")

                r = sbx.commands.run("echo waiting; " + WAIT_FOR_GO, on_stdout=on_stdout)
                self.assertEqual(("".join(out), r.stdout), ("waiting\ncame\n", "waiting\ncame\n"))
                h = sbx.commands.run("read x; echo \"x=$x\"; exit 5", background=True)
                h.send_stdin("1\n")
                with self.assertRaises(CommandExitException) as cm:
                    h.wait()
                self.assertEqual((cm.exception.stdout, cm.exception.exit_code), ("x=1\n", 5))
            finally:
                for ws in held:
                    ws.close()


class AsyncCommandsTest(unittest.TestCase):
    def test_async_commands(self) -> None:
        async def main() -> None:
            async with await AsyncSandbox.create(timeout=120) as sbx:
                r = await sbx.commands.run("echo hi")
                self.assertEqual(r.stdout, "hi\n")
                with self.assertRaises(CommandExitException):
                    await sbx.commands.run("exit 4")
                seen: List[str] = []
                ready = asyncio.Event()

                async def on_stdout(chunk: str) -> None:
                    await asyncio.sleep(0)
                    seen.append(chunk)
                    if "".join(seen) == "ready\n":
                        ready.set()

                h = await sbx.commands.run("echo ready; read x; echo \"x=$x\"", background=True, on_stdout=on_stdout)
                await ready.wait()  # streamed while the command waits for stdin
                self.assertIn(h.pid, [p.pid for p in await sbx.commands.list()])
                await h.send_stdin("5\n")
                r = await h.wait()
                self.assertEqual((r.stdout, "".join(seen)), ("ready\nx=5\n", "ready\nx=5\n"))
                k = await sbx.commands.run("sleep 300", background=True, timeout=0)
                self.assertTrue(await sbx.commands.kill(k.pid))
                with self.assertRaises(CommandExitException):
                    await k.wait()
                with self.assertRaises(TimeoutException):
                    await sbx.commands.run("sleep 300", timeout=1, on_stderr=lambda s: None)
        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
