"""glassroom.e2b (E2B's code-interpreter SDK names and behaviour) against a
real gateway (GLASSROOM_URL; the key from GLASSROOM_API_KEY, or E2B_API_KEY)."""

import asyncio
import http.client
import json
import os
import threading
import time
import unittest
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from unittest import mock

from glassroom.e2b import (AsyncSandbox, BarChart, ChartType, ConflictException, Context, EntryInfo, FileNotFoundException,
                           FileType, FilesystemEventType, InvalidArgumentException, LineChart, NotFoundException, PtySize, Result, Sandbox,
                           SandboxNotFoundException, SandboxQuery, TimeoutException)

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

    def test_payloads_leave_e2b_results_alone(self) -> None:
        # E2B's run_code has no pager: help and %load are not results or
        # errors (glassroom's extra Execution fields hold them).
        self.sbx.files.write("/home/user/l.py", "a = 1\n")
        for kw in ({}, {"on_result": lambda r: self.fail(f"a result: {r}")}):
            x = self.sbx.run_code("len?", **kw)
            self.assertEqual((x.results, x.error, x.text), ([], None, None))
            self.assertIn("Return the number of items", x.pages[0].text or "")
            x = self.sbx.run_code("%load l.py", **kw)
            self.assertEqual((x.results, x.error), ([], None))
            self.assertEqual(x.next_input.text if x.next_input else None, "# %load l.py\na = 1\n")
        self.assertEqual(self.sbx.run_code("6 * 7").text, "42")

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
        with self.assertRaises(NotFoundException):  # a missing file is no error; a missing sandbox is
            self.sbx.files.remove("gone.txt")
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
        self.sbx.commands.run("chmod 640 /home/user/d/x.txt")
        info = f.get_info("/home/user/d/x.txt")  # the file's own bits, from the gateway
        self.assertEqual((info.mode, info.permissions), (0o640, "-rw-r-----"))
        self.sbx.commands.run("ln -s x.txt /home/user/d/link")
        link = f.get_info("/home/user/d/link")  # E2B's: the type of what it points to, and where
        self.assertEqual((link.type, link.symlink_target), (FileType.FILE, "/home/user/d/x.txt"))
        self.assertTrue(f.make_dir("/home/user/m"))
        self.assertFalse(f.make_dir("/home/user/m"))
        self.assertTrue(f.exists("/home/user/m"))
        f.remove("/home/user/m")
        self.assertFalse(f.exists("/home/user/m"))
        f.remove("/home/user/m")  # E2B's: removing a missing path is no error
        with self.assertRaises(FileNotFoundException):
            f.get_info("/home/user/m")
        with self.assertRaisesRegex(InvalidArgumentException, "depth should be at least 1"):
            f.list("/home/user/d", depth=0)
        with self.assertRaises(FileNotFoundException):
            f.read("/home/user/nope.txt")
        # The sandbox's own files, read-only, as its user sees them.
        boot = self.sbx.commands.run("cat /proc/sys/kernel/random/boot_id || true").stdout.strip()
        if boot:  # gVisor has none
            self.assertEqual(f.read("/proc/sys/kernel/random/boot_id").strip(), boot)
        uid = self.sbx.commands.run("id -u").stdout.strip()
        self.assertIn(f"\nUid:\t{uid}\t", f.read("/proc/self/status"))
        self.assertTrue(f.exists("/etc/passwd"))
        self.assertTrue(f.exists("/etc"))
        self.assertFalse(f.exists("/no/such/file"))
        etc = f.get_info("/etc/../etc")
        self.assertEqual((etc.path, etc.type, etc.name), ("/etc", FileType.DIR, "etc"))
        with self.assertRaises(FileNotFoundException):
            f.read("/no/such/file")
        with self.assertRaises(FileNotFoundException):
            f.get_info("/no/such/file")
        with self.assertRaisesRegex(InvalidArgumentException, "read-only"):
            f.write("/etc/passwd", "x")

    def test_pty(self) -> None:
        pty = self.sbx.pty
        t = pty.create(PtySize(rows=24, cols=80), envs={"ABC": "123"}, cwd="/home/user")
        pty.send_stdin(t.pid, b"echo $ABC; tput cols\n")
        seen: list = []
        again = pty.connect(t.pid)  # a second handle on the same PTY, by pid
        t.disconnect()
        pty.resize(t.pid, PtySize(rows=24, cols=100))
        pty.send_stdin(t.pid, "tput cols; exit\n")
        r = again.wait(on_pty=seen.append)
        out = b"".join(seen).decode()
        self.assertEqual(r.exit_code, 0)
        self.assertTrue(all(isinstance(b, bytes) for b in seen))
        self.assertIn("100", out)
        k = pty.create(PtySize(24, 80))
        self.assertTrue(pty.kill(k.pid))
        self.assertFalse(pty.kill(999999))

    def test_file_metadata(self) -> None:
        f = self.sbx.files
        w = f.write("meta/a.txt", "a", metadata={"author": "mish"})
        self.assertEqual(w.metadata, {"author": "mish"})
        self.assertEqual(f.get_info("meta/a.txt").metadata, {"author": "mish"})
        self.assertEqual([e.metadata for e in f.list("meta")], [{"author": "mish"}])
        self.assertEqual(f.rename("meta/a.txt", "meta/b.txt").metadata, {"author": "mish"})
        self.assertIsNone(f.write("meta/b.txt", "again").metadata)
        self.assertIsNone(f.get_info("meta/b.txt").metadata)
        with self.assertRaises(InvalidArgumentException):
            f.write("meta/bad.txt", "x", metadata={"bad key": "v"})
        self.assertFalse(f.exists("meta/bad.txt"))

    def test_network_selectors(self) -> None:
        # E2B's selectors may be callables of a context; the gateway judges what they give.
        with self.assertRaisesRegex(InvalidArgumentException, "example.invalid"):
            Sandbox.create(timeout=60, network={"allow_out": lambda ctx: ["example.invalid"]})
        closed = Sandbox.create(timeout=60, network={"deny_out": lambda ctx: [ctx.all_traffic]})
        try:
            self.assertFalse(closed.get_info().allow_internet_access)
        finally:
            closed.kill()

    def test_update_network(self) -> None:
        # This sandbox was created without a network: it has none to change (the gateway's 409).
        with self.assertRaisesRegex(ConflictException, "created without a network"):
            self.sbx.update_network({"allow_out": ["pypi.org"], "deny_out": ["203.0.113.0/24"]})

    def test_signed_urls(self) -> None:
        self.sbx.files.write("/home/user/signed/r.txt", "report")
        url = self.sbx.download_url("/home/user/signed/r.txt")
        with urllib.request.urlopen(url) as resp:  # no API key
            self.assertEqual(resp.read(), b"report")
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(self.sbx.download_url("signed/r.txt", use_signature_expiration=-120))
        self.assertEqual(cm.exception.code, 401)
        self.assertEqual(json.loads(cm.exception.read()), {"code": 401, "message": "signature is already expired"})
        up = self.sbx.upload_url("signed/up.txt")
        req = urllib.request.Request(up, data=b"put through a URL", method="PUT")
        with urllib.request.urlopen(req) as resp:
            self.assertEqual(resp.status, 201)
        self.assertEqual(self.sbx.files.read("signed/up.txt"), "put through a URL")
        with self.assertRaises(InvalidArgumentException):
            self.sbx.upload_url()

    def test_access_token(self) -> None:
        # secure=True (the default): the sandbox's own credential, the same
        # on a connect; it grants what runs inside it, not the sandbox.
        tok = self.sbx._envd_access_token
        self.assertTrue(tok)
        self.assertEqual(Sandbox.connect(self.sbx.sandbox_id)._envd_access_token, tok)
        base = os.environ["GLASSROOM_URL"].rstrip("/") + "/v1/sessions/" + self.sbx.sandbox_id
        req = urllib.request.Request(base + "/execute", data=json.dumps({"code": "6 * 7"}).encode(), method="POST",
                                     headers={"X-Access-Token": tok, "Content-Type": "application/json"})
        with urllib.request.urlopen(req) as resp:  # no API key
            self.assertIn("42", resp.read().decode())
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(urllib.request.Request(base, method="DELETE", headers={"X-Access-Token": tok}))
        self.assertEqual(cm.exception.code, 401)
        self.assertTrue(self.sbx.is_running())
        plain = Sandbox.create(timeout=60, secure=False)
        try:
            self.assertIsNone(plain._envd_access_token)
        finally:
            plain.kill()

    def test_private_previews(self) -> None:
        # allow_public_traffic=False: get_host is no grant by itself; the
        # traffic access token, in E2B's header, is (a connect knows it too).
        self.assertIsNone(self.sbx.traffic_access_token)
        addr = os.environ.get("GLASSROOM_PREVIEW_ADDR")
        if not addr:
            self.skipTest("the gateway serves no previews (GLASSROOM_PREVIEW_ADDR)")
        sbx = Sandbox.create(timeout=60, network={"allow_public_traffic": False})
        try:
            tok = sbx.traffic_access_token
            self.assertTrue(tok)
            self.assertEqual(Sandbox.connect(sbx.sandbox_id).traffic_access_token, tok)
            sbx.commands.run("mkdir -p site && echo private > site/index.html && exec python3 -m http.server -d site 8125",
                             background=True)

            def get(headers: dict) -> tuple:
                conn = http.client.HTTPConnection(addr, timeout=30)
                conn.request("GET", "/index.html", headers={"Host": sbx.get_host(8125), **headers})
                r = conn.getresponse()
                return r.status, r.read()
            for _ in range(300):
                if get({"e2b-traffic-access-token": tok})[0] == 200:
                    break
                time.sleep(0.1)
            self.assertEqual(get({"e2b-traffic-access-token": tok}), (200, b"private\n"))
            self.assertEqual(get({})[0], 401)
            with self.assertRaises(InvalidArgumentException):
                sbx.update_network({"allow_public_traffic": True})
        finally:
            sbx.kill()

    def test_commands(self) -> None:
        r = self.sbx.commands.run("echo $FOO", envs={"FOO": "bar"})
        self.assertEqual(r.stdout, "bar\n")

    def test_default_contexts(self) -> None:
        # As E2B's: a fresh sandbox lists a Python and a JavaScript context;
        # the JavaScript one starts on its first use.
        ctxs = self.sbx.list_code_contexts()
        self.assertEqual([c.language for c in ctxs], ["python", "javascript"])
        js = ctxs[1]
        self.sbx.restart_code_context(js)  # not started: nothing to do
        self.assertEqual(self.sbx.run_code("Deno.cwd()", context=js).text, "/home/user")
        self.assertEqual(self.sbx.run_code("var n = 6 * 7; n", context=js.id).text, "42")
        self.assertEqual(self.sbx.run_code("n", language="js").text, "42")  # the same default context
        after = self.sbx.list_code_contexts()
        self.assertEqual([c.language for c in after], ["python", "javascript"])
        self.assertNotEqual(after[1].id, "javascript")  # started: its own id
        self.sbx.restart_code_context(js)  # the started one, by the pending id
        self.assertIsNotNone(self.sbx.run_code("n", context=js).error)
        # A created context is listed last, as E2B's test_contexts expects.
        c = self.sbx.create_code_context(language="python", cwd="/home/user")
        self.assertEqual(self.sbx.list_code_contexts()[-1].id, c.id)
        self.sbx.remove_code_context(c)

    def test_paths_outside_the_workspace_say_what_to_use(self) -> None:
        with self.assertRaises(InvalidArgumentException) as cm:
            self.sbx.create_code_context(language="python", cwd="/root")
        self.assertIn("no root user and no /root: its home and workspace is /home/user", str(cm.exception))
        with self.assertRaises(InvalidArgumentException) as cm:
            self.sbx.files.write("/tmp/x.txt", "x")
        self.assertIn("/tmp is the sandbox's private scratch space", str(cm.exception))
        with self.assertRaises(InvalidArgumentException) as cm:
            self.sbx.commands.run("whoami", user="root")
        self.assertIn("never root", str(cm.exception))
        self.assertEqual(self.sbx.commands.run("whoami", user="user").exit_code, 0)

    def test_java(self) -> None:
        # E2B's Java behaviours: envs as system properties, user.dir the
        # workspace, a String result shown as itself.
        x = self.sbx.run_code('System.getProperty("FOO")', envs={"FOO": "bar"}, language="java")
        self.assertEqual(x.results[0].text.strip(), "bar")
        self.assertEqual(self.sbx.run_code('System.getProperty("FOO", "default")', language="java").results[0].text, "default")
        self.assertEqual(self.sbx.run_code('System.getProperty("user.dir")', language="java").results[0].text, "/home/user")
        x = self.sbx.run_code('System.out.println("Hello, World!")', language="java")
        self.assertEqual("".join(x.logs.stdout), "Hello, World!\n")
        with Sandbox.create(envs={"TEST_ENV_VAR": "supertest"}) as s:
            self.assertEqual(s.run_code('System.getProperty("TEST_ENV_VAR")', language="java").results[0].text, "supertest")
            x = s.run_code('System.getProperty("TEST_ENV_VAR")', language="java", envs={"TEST_ENV_VAR": "overwrite"})
            self.assertEqual(x.results[0].text, "overwrite")
            self.assertEqual(s.run_code('System.getProperty("TEST_ENV_VAR")', language="java").results[0].text, "supertest")

    def test_constructor_with_an_id_wraps_that_sandbox(self) -> None:
        # E2B's deprecated Sandbox(sandbox_id=...) wraps the sandbox; it
        # started a new one here once, which nobody then killed.
        before = {i.sandbox_id for i in Sandbox.list().next_items()}
        s = Sandbox(sandbox_id=self.sbx.sandbox_id)
        self.assertEqual(s.sandbox_id, self.sbx.sandbox_id)
        self.assertEqual({i.sandbox_id for i in Sandbox.list().next_items()}, before)
        self.sbx.run_code("wrapped = 42")
        self.assertEqual(s.run_code("wrapped").text, "42")

    def test_info_and_class_methods(self) -> None:
        info = Sandbox.get_info(self.sbx.sandbox_id)
        self.assertEqual(info.sandbox_id, self.sbx.sandbox_id)
        self.assertEqual(str(info.state), "running")
        self.assertTrue(self.sbx.is_running())
        self.assertIs(self.sbx.connect(), self.sbx)


class E2BSessionModelTest(unittest.TestCase):
    """Templates, metadata and listing, lifetime, metrics, pause and
    resume, rename and watch: E2B's session model on the gateway's."""

    def test_template_metadata_and_list(self) -> None:
        tag = "t" + os.urandom(6).hex()
        boxes = [Sandbox.create("code-interpreter-v1", timeout=120, metadata={"suite": tag, "n": str(i)}) for i in range(3)]
        try:
            info = boxes[0].get_info()
            self.assertEqual((info.template_id, info.metadata), ("code-interpreter-v1", {"suite": tag, "n": "0"}))
            pages, seen = Sandbox.list(query=SandboxQuery(metadata={"suite": tag}), limit=2), []
            while pages.has_next:
                seen.append([s.sandbox_id for s in pages.next_items()])
            # Newest first, as E2B's; the gateway pages in that order.
            self.assertEqual(seen, [[boxes[2].sandbox_id, boxes[1].sandbox_id], [boxes[0].sandbox_id]])
            oldest = Sandbox.list(query=SandboxQuery(metadata={"suite": tag}), order="asc").next_items()
            self.assertEqual([s.sandbox_id for s in oldest], [b.sandbox_id for b in boxes])
            later = Sandbox.list(query=SandboxQuery(metadata={"suite": tag}, started_after=boxes[1].get_info().started_at)).next_items()
            self.assertEqual([s.sandbox_id for s in later], [boxes[2].sandbox_id, boxes[1].sandbox_id])
            one = Sandbox.list(query=SandboxQuery(metadata={"suite": tag, "n": "1"})).next_items()
            self.assertEqual([s.sandbox_id for s in one], [boxes[1].sandbox_id])
            with self.assertRaises(InvalidArgumentException):
                Sandbox.create("no-such-template", timeout=60)
            with self.assertRaisesRegex(InvalidArgumentException, "^Failed to start MCP gateway"):
                Sandbox.create(timeout=60, metadata={"suite": tag}, mcp={"server": {}})
            self.assertEqual(len(Sandbox.list(query=SandboxQuery(metadata={"suite": tag})).next_items()), 3)
        finally:
            for b in boxes:
                b.kill()

    def test_timeout_is_the_lifetime(self) -> None:
        sbx = Sandbox.create(timeout=120)
        try:
            end = sbx.get_info().end_at
            sbx.set_timeout(2)
            self.assertLess(sbx.get_info().end_at, end)
            deadline = time.monotonic() + 60
            while sbx.is_running() and time.monotonic() < deadline:
                time.sleep(0.5)
            self.assertFalse(sbx.is_running(), "the sandbox outlived its timeout")
        finally:
            Sandbox.kill(sbx.sandbox_id)

    def test_metrics_pause_resume(self) -> None:
        sbx = Sandbox.create(timeout=120)
        try:
            sbx.run_code("big = b'x' * (200 << 20)")
            m = sbx.get_metrics()[-1]
            self.assertGreater(m.mem_used, 200 << 20)
            self.assertGreater(m.mem_total, m.mem_used)
            # A range before the sandbox existed has no sample; one around now
            # has the samples so far, oldest first, ending with now's.
            now = datetime.now(timezone.utc)
            self.assertEqual(sbx.get_metrics(start=now - timedelta(hours=1), end=now - timedelta(minutes=30)), [])
            recent = sbx.get_metrics(start=now - timedelta(minutes=1), end=datetime.now(timezone.utc))
            self.assertGreaterEqual(len(recent), 1)
            self.assertEqual(recent, sorted(recent, key=lambda x: x.timestamp))
            self.assertTrue(sbx.is_running())
            sbx.pause()
            self.assertEqual(str(Sandbox.get_info(sbx.sandbox_id).state), "paused")
            self.assertFalse(sbx.is_running())  # E2B's: a paused sandbox does not run
            with self.assertRaises(Exception):
                sbx.run_code("1")
            again = Sandbox.connect(sbx.sandbox_id)  # connect resumes, as in E2B
            self.assertTrue(again.is_running())
            self.assertEqual(again.run_code("len(big) >> 20").text, "200")
        finally:
            Sandbox.kill(sbx.sandbox_id)

    def test_lifecycle_pause_at_timeout(self) -> None:
        def paused_at_timeout(sbx: Sandbox) -> None:
            sbx.set_timeout(0)  # E2B's: the timeout is now
            deadline = time.monotonic() + 60
            while sbx.is_running():  # the gateway's reaper pauses it at once
                self.assertLess(time.monotonic(), deadline, "not paused at its timeout")
                time.sleep(0.05)
            self.assertEqual(str(sbx.get_info().state), "paused")

        manual = Sandbox.create(timeout=120, lifecycle={"on_timeout": "pause", "auto_resume": False})
        try:
            manual.run_code("x = 41")
            paused_at_timeout(manual)
            with self.assertRaises(Exception):
                manual.run_code("x")
            manual.connect()  # connect resumes it, its variables kept
            self.assertTrue(manual.is_running())
            self.assertEqual(manual.run_code("x + 1").text, "42")
        finally:
            Sandbox.kill(manual.sandbox_id)
        auto = Sandbox.create(timeout=120, lifecycle={"on_timeout": {"action": "pause", "keep_memory": None}, "auto_resume": True})
        try:
            auto.run_code("y = 1")
            paused_at_timeout(auto)
            self.assertEqual(auto.run_code("y + 1").text, "2")  # its use resumes it
            self.assertTrue(auto.is_running())
        finally:
            Sandbox.kill(auto.sandbox_id)
        for bad in ({"on_timeout": {"action": "pause", "keep_memory": False}, "auto_resume": True},
                    {"on_timeout": {"action": "kill", "keep_memory": True}}, {"on_timeout": "sleep"}):
            with self.assertRaises(InvalidArgumentException):
                Sandbox.create(lifecycle=bad)

    def test_rename_and_watch(self) -> None:
        sbx = Sandbox.create(timeout=120)
        try:
            sbx.files.make_dir("/home/user/w")
            h = sbx.files.watch_dir("/home/user/w")
            try:
                sbx.run_code("open('/home/user/w/a.txt', 'w').write('a')")
                # get_new_events syncs with the gateway: what was written
                # before it is there, with no polling.
                events = h.get_new_events()
                self.assertTrue(any(e.name == "a.txt" for e in events), events)
            finally:
                h.stop()
            # A files-API write: create, chmod and write, each with its entry.
            h = sbx.files.watch_dir("/home/user/w", include_entry=True)
            try:
                sbx.files.write("/home/user/w/put.txt", "put")
                put = [e for e in h.get_new_events() if e.name == "put.txt"]
                self.assertEqual([e.type for e in put], [FilesystemEventType.CREATE, FilesystemEventType.CHMOD, FilesystemEventType.WRITE])
                self.assertEqual({(e.entry.path, e.entry.size) for e in put if e.entry}, {("/home/user/w/put.txt", 3)})
            finally:
                h.stop()
            with self.assertRaises(FileNotFoundException):
                sbx.files.watch_dir("/home/user/no-such-dir")
            info = sbx.files.rename("/home/user/w/a.txt", "/home/user/b.txt")
            self.assertEqual(info.path, "/home/user/b.txt")
            self.assertFalse(sbx.files.exists("/home/user/w/a.txt"))
            self.assertEqual(sbx.files.read("/home/user/b.txt"), "a")
        finally:
            Sandbox.kill(sbx.sandbox_id)


class E2BAsyncTest(unittest.IsolatedAsyncioTestCase):
    async def test_async(self) -> None:
        tag = "a" + os.urandom(6).hex()
        sbx = await AsyncSandbox.create(timeout=120, metadata={"suite": tag})
        try:
            got = []

            async def on_result(r: Result) -> None:
                got.append(r)
            x = await sbx.run_code(CHART_CODE, on_result=on_result)
            self.assertIsInstance(got[0].chart, LineChart)
            self.assertIs(x.results[0], got[0])
            x = await sbx.run_code("import os; os.getenv('A')", envs={"A": "b"})
            self.assertEqual(x.text, "b")
            await sbx.files.write("/home/user/q.txt", "q", metadata={"owner": "async"})
            self.assertEqual(await sbx.files.read("/home/user/q.txt"), "q")
            self.assertEqual((await sbx.files.get_info("/home/user/q.txt")).metadata, {"owner": "async"})
            async with await sbx.files.read("/home/user/q.txt", format="stream") as stream:
                self.assertEqual(b"".join([c async for c in stream]), b"q")
            pages = AsyncSandbox.list(query=SandboxQuery(metadata={"suite": tag}))  # not a coroutine, as E2B's
            self.assertEqual([s.sandbox_id for s in await pages.next_items()], [sbx.sandbox_id])
            with urllib.request.urlopen(sbx.download_url("/home/user/q.txt")) as r:  # no API key
                self.assertEqual(r.read(), b"q")
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
