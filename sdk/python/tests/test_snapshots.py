"""Snapshots, forks and hibernation, with the native SDK and the E2B
drop-in, against a real gateway (GLASSROOM_URL, GLASSROOM_API_KEY)."""

import time
import unittest

import glassroom
from glassroom import AsyncSandbox as GAsyncSandbox
from glassroom import Sandbox as GSandbox
from glassroom import Snapshot
from glassroom.e2b import (AsyncSandbox, AsyncSnapshotPaginator, ConflictException, InvalidArgumentException,
                           NotFoundException, Sandbox, SnapshotInfo, SnapshotPaginator)
from glassroom.e2b.sandbox import _lifecycle

SETUP = "x = 41\nopen('/home/user/note.txt', 'w').write('kept')"


class E2BSnapshotTest(unittest.TestCase):
    """E2B's create_snapshot, Sandbox.create(snapshot_id), list_snapshots,
    delete_snapshot and fork."""

    def test_snapshot_restore_fork_delete(self) -> None:
        sbx = Sandbox.create(timeout=120)
        self.addCleanup(Sandbox.kill, sbx.sandbox_id)
        sbx.run_code(SETUP)
        snap = sbx.create_snapshot()
        self.addCleanup(Sandbox.delete_snapshot, snap.snapshot_id)
        self.assertIsInstance(snap, SnapshotInfo)
        self.assertRegex(snap.snapshot_id, r"^snap-[0-9a-f]{24}$")
        self.assertEqual(snap.names, [])
        with self.assertRaises(InvalidArgumentException):
            sbx.create_snapshot(name="not/a/name")
        labelled = sbx.create_snapshot(name="labelled")
        self.addCleanup(Sandbox.delete_snapshot, labelled.snapshot_id)
        self.assertEqual(labelled.names, ["labelled"])
        self.assertEqual(Sandbox.list_snapshots(name="labelled").next_items(), [labelled])
        self.assertEqual(Sandbox.list_snapshots(name="labelled-not").next_items(), [])
        Sandbox.delete_snapshot(labelled.snapshot_id)
        sbx.run_code("x = 0")  # the snapshot keeps what was

        # E2B passes a snapshot as the template.
        restored = Sandbox.create(snap.snapshot_id, timeout=60)
        self.addCleanup(Sandbox.kill, restored.sandbox_id)
        self.assertEqual(restored.run_code("x + 1").text, "42")
        self.assertEqual(restored.files.read("/home/user/note.txt"), "kept")

        # Listed: this sandbox's on the instance; the key's, or one
        # sandbox's, on the class; a page at a time.
        second = Sandbox.create_snapshot(sbx.sandbox_id)  # the static form
        self.addCleanup(Sandbox.delete_snapshot, second.snapshot_id)
        pages = sbx.list_snapshots(limit=1)
        self.assertIsInstance(pages, SnapshotPaginator)
        seen = []
        while pages.has_next:
            seen.append([s.snapshot_id for s in pages.next_items()])
        self.assertEqual(seen, [[second.snapshot_id], [snap.snapshot_id]])  # newest first
        mine = Sandbox.list_snapshots(sandbox_id=sbx.sandbox_id).next_items()
        self.assertEqual([s.snapshot_id for s in mine], [second.snapshot_id, snap.snapshot_id])
        every = [s.snapshot_id for s in Sandbox.list_snapshots().next_items()]
        self.assertLessEqual({snap.snapshot_id, second.snapshot_id}, set(every))
        self.assertEqual(restored.list_snapshots().next_items(), [])
        named = Sandbox.list_snapshots(name=snap.snapshot_id).next_items()
        self.assertEqual(named, [SnapshotInfo(snapshot_id=snap.snapshot_id, names=[])])

        # Forks start from now's state and go their own ways.
        forks = sbx.fork(count=2, timeout=60)
        for f in forks:
            if isinstance(f, Sandbox):
                self.addCleanup(Sandbox.kill, f.sandbox_id)
        self.assertEqual(len(forks), 2)
        a, b = forks
        self.assertIsInstance(a, Sandbox)
        self.assertIsInstance(b, Sandbox)
        self.assertNotEqual(a.sandbox_id, b.sandbox_id)
        a.run_code("x = 'a'")
        b.run_code("x = 'b'")
        self.assertEqual((a.run_code("x").text, b.run_code("x").text, sbx.run_code("x").text), ("a", "b", "0"))
        self.assertEqual(a.files.read("/home/user/note.txt"), "kept")
        self.assertLessEqual(a.get_info().end_at.timestamp(), time.time() + 61)  # the fork's timeout
        with self.assertRaises(InvalidArgumentException):
            sbx.fork(count=0)

        self.assertTrue(Sandbox.delete_snapshot(snap.snapshot_id))
        self.assertFalse(Sandbox.delete_snapshot(snap.snapshot_id))
        with self.assertRaises(NotFoundException):
            Sandbox.create(snap.snapshot_id, timeout=60)

    def test_pause_without_memory_hibernates(self) -> None:
        sbx = Sandbox.create(timeout=120)
        self.addCleanup(Sandbox.kill, sbx.sandbox_id)
        sbx.run_code(SETUP)
        self.assertTrue(sbx.pause(keep_memory=False))
        self.assertFalse(sbx.is_running())
        self.assertEqual(str(sbx.get_info().state), "paused")
        self.assertFalse(Sandbox.pause(sbx.sandbox_id, keep_memory=False))  # hibernated already
        for kw in ({}, {"on_stdout": lambda m: None}):  # REST and the WebSocket
            with self.assertRaises(ConflictException) as cm:
                sbx.run_code("x", **kw)
            self.assertEqual(cm.exception.code, "session_hibernated")
        again = Sandbox.connect(sbx.sandbox_id)  # connect wakes it
        self.assertTrue(again.is_running())
        self.assertEqual(again.run_code("x + 1").text, "42")
        self.assertEqual(again.files.read("/home/user/note.txt"), "kept")
        sbx.pause(keep_memory=False)
        Sandbox.resume(sbx.sandbox_id)  # and so does resume
        self.assertEqual(sbx.run_code("x").text, "41")

    def test_hibernate_at_timeout(self) -> None:
        sbx = Sandbox.create(timeout=120, lifecycle={"on_timeout": {"action": "pause", "keep_memory": False}})
        self.addCleanup(Sandbox.kill, sbx.sandbox_id)
        sbx.run_code("y = 7")
        sbx.set_timeout(0)  # the timeout is now: it hibernates
        deadline = time.monotonic() + 60
        while sbx.is_running():
            self.assertLess(time.monotonic(), deadline, "not hibernated at its timeout")
            time.sleep(0.1)
        with self.assertRaises(ConflictException):
            sbx.run_code("y")
        sbx.connect()
        self.assertEqual(sbx.run_code("y * 6").text, "42")

    def test_lifecycle_keep_memory(self) -> None:
        self.assertEqual(_lifecycle({"on_timeout": {"action": "pause", "keep_memory": False}}),
                         {"on_timeout": "pause", "auto_resume": False, "keep_memory": False})
        self.assertEqual(_lifecycle({"on_timeout": "pause", "auto_resume": True}), {"on_timeout": "pause", "auto_resume": True})
        with self.assertRaisesRegex(InvalidArgumentException, "keep_memory: False"):  # E2B's rule
            Sandbox.create(lifecycle={"on_timeout": {"action": "pause", "keep_memory": False}, "auto_resume": True})


class NativeSnapshotTest(unittest.TestCase):
    """glassroom.Sandbox's snapshots, forks, pause and resume."""

    def test_snapshots(self) -> None:
        sbx = GSandbox(timeout=120)
        self.addCleanup(GSandbox.kill, sbx.sandbox_id)
        sbx.run_code(SETUP)
        snap = sbx.create_snapshot()
        self.addCleanup(GSandbox.delete_snapshot, snap.id)
        self.assertIsInstance(snap, Snapshot)
        self.assertEqual(snap.sandbox_id, sbx.sandbox_id)
        self.assertGreater(snap.size_bytes, 0)
        self.assertIn("x", snap.contexts[0].captured)
        self.assertEqual(GSandbox.get_snapshot(snap.id), snap)
        self.assertEqual([s.id for s in sbx.list_snapshots()], [snap.id])
        self.assertIn(snap.id, [s.id for s in GSandbox.list_snapshots()])
        self.assertEqual([s.id for s in GSandbox.list_snapshots(sbx.sandbox_id)], [snap.id])

        with GSandbox.create(snapshot=snap.id, timeout=60) as restored:
            self.assertIsInstance(restored.restore, glassroom.RestoreReport)
            self.assertEqual(restored.restore.snapshot_id, snap.id)
            self.assertIn("x", restored.restore.contexts[0].restored)
            self.assertEqual(restored.run_code("x + 1").text, "42")
            self.assertEqual(restored.files.read("note.txt"), "kept")
        self.assertIsNone(sbx.restore)

        forks = sbx.fork(2)
        for f in forks:
            if isinstance(f, GSandbox):
                self.addCleanup(GSandbox.kill, f.sandbox_id)
        a, b = forks
        self.assertIsInstance(a, GSandbox)
        self.assertIsInstance(b, GSandbox)
        self.assertIn("x", a.restore.contexts[0].restored)
        a.run_code("x += 1")
        self.assertEqual((a.run_code("x").text, b.run_code("x").text), ("42", "41"))
        with self.assertRaises(InvalidArgumentException):
            sbx.fork(0)
        with self.assertRaises(InvalidArgumentException):
            sbx.fork(9)  # the gateway's most is 8

        self.assertTrue(GSandbox.delete_snapshot(snap.id))
        self.assertFalse(GSandbox.delete_snapshot(snap.id))
        with self.assertRaises(NotFoundException):
            GSandbox.get_snapshot(snap.id)

    def test_pause_and_resume(self) -> None:
        sbx = GSandbox(timeout=120)
        self.addCleanup(GSandbox.kill, sbx.sandbox_id)
        sbx.run_code(SETUP)
        sbx.pause(keep_memory=False)
        info = sbx.get_info()
        self.assertEqual((info.state, info.hibernated, info.paused), ("hibernated", True, True))
        self.assertFalse(sbx.is_running())
        with self.assertRaises(ConflictException) as cm:
            sbx.run_code("x")
        self.assertEqual(cm.exception.code, "session_hibernated")
        sbx.resume()
        self.assertTrue(sbx.is_running())
        self.assertEqual(sbx.run_code("x + 1").text, "42")
        self.assertEqual(sbx.files.read("note.txt"), "kept")
        sbx.pause()  # frozen, its memory kept
        self.assertTrue(sbx.get_info().paused)
        self.assertFalse(sbx.get_info().hibernated)
        sbx.resume()
        self.assertEqual(sbx.run_code("x").text, "41")


class AsyncSnapshotTest(unittest.IsolatedAsyncioTestCase):
    async def test_e2b_async(self) -> None:
        sbx = await AsyncSandbox.create(timeout=120)
        try:
            await sbx.run_code(SETUP)
            snap = await sbx.create_snapshot()
            self.assertIsInstance(snap, SnapshotInfo)
            pages = sbx.list_snapshots()  # not a coroutine, as E2B's
            self.assertIsInstance(pages, AsyncSnapshotPaginator)
            self.assertEqual([s.snapshot_id for s in await pages.next_items()], [snap.snapshot_id])
            self.assertIn(snap.snapshot_id, [s.snapshot_id for s in await AsyncSandbox.list_snapshots().next_items()])
            restored = await AsyncSandbox.create(snap.snapshot_id, timeout=60)
            try:
                self.assertEqual((await restored.run_code("x + 1")).text, "42")
            finally:
                await restored.kill()
            (fork,) = await sbx.fork()
            try:
                self.assertIsInstance(fork, AsyncSandbox)
                self.assertEqual((await fork.run_code("x")).text, "41")
            finally:
                await fork.kill()
            await sbx.pause(keep_memory=False)
            self.assertFalse(await sbx.is_running())
            await sbx.connect()
            self.assertEqual((await sbx.run_code("x")).text, "41")
            self.assertTrue(await AsyncSandbox.delete_snapshot(snap.snapshot_id))
            self.assertFalse(await AsyncSandbox.delete_snapshot(snap.snapshot_id))
        finally:
            await AsyncSandbox.kill(sbx.sandbox_id)

    async def test_native_async(self) -> None:
        sbx = await GAsyncSandbox.create(timeout=120)
        try:
            await sbx.run_code("x = 41")
            snap = await sbx.create_snapshot()
            self.assertEqual([s.id for s in await sbx.list_snapshots()], [snap.id])
            self.assertIn(snap.id, [s.id for s in await GAsyncSandbox.list_snapshots()])
            restored = await GAsyncSandbox.create(snapshot=snap.id, timeout=60)
            try:
                self.assertEqual(restored.restore.snapshot_id, snap.id)
                self.assertEqual((await restored.run_code("x + 1")).text, "42")
            finally:
                await restored.kill()
            (fork,) = await sbx.fork()
            try:
                self.assertIsInstance(fork, GAsyncSandbox)
                self.assertEqual((await fork.run_code("x")).text, "41")
            finally:
                await fork.kill()
            await sbx.pause(keep_memory=False)
            self.assertFalse(await sbx.is_running())
            await sbx.resume()
            self.assertEqual((await sbx.run_code("x")).text, "41")
            self.assertTrue(await GAsyncSandbox.delete_snapshot(snap.id))
            self.assertFalse(await GAsyncSandbox.delete_snapshot(snap.id))
        finally:
            await sbx.kill()


if __name__ == "__main__":
    unittest.main()
