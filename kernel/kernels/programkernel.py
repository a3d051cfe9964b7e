# What glassroom's program kernels share (bashkernel.py, javakernel.py):
# the launcher runs each as one program, this file first (kernels.Program
# joins them), so these definitions are the program's own. Plain
# functions only: a kernel decides itself when it imports ipykernel (the
# Java kernel starts its JVM first).
import base64
import json
import os
import signal
import threading

# The most a display may carry, and the types sent as base64.
DISPLAY_MAX = 10 * 1024 * 1024
BINARY_TYPES = ("image/png", "image/jpeg", "image/gif")


def group_cpu(pgid):
    # The CPU time (user and system, in seconds) of the live processes of
    # process group pgid, as this pid namespace's /proc shows them: what
    # tells an interrupted cell that makes progress from one that is stuck.
    total = 0
    tick = os.sysconf("SC_CLK_TCK")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        # fields[0] is the state (field 3); pgrp is field 5, utime 14, stime 15.
        if len(fields) > 12 and int(fields[2]) == pgid:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def bundle(mime, data):
    # The display_data bundle of data (bytes, at most DISPLAY_MAX) of type
    # mime: binary types in base64 with a text/plain note, JSON parsed
    # (ValueError when it is not JSON), text as text.
    n = len(data)
    if mime in BINARY_TYPES:
        return {mime: base64.b64encode(data).decode("ascii"), "text/plain": "<%s, %d bytes>" % (mime, n)}
    text = data.decode("utf-8", "replace")
    if mime == "application/json":
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise ValueError("not valid JSON: %s" % e)
        return {mime: value, "text/plain": text}
    if mime in ("text/html", "image/svg+xml"):
        return {mime: text, "text/plain": "<%s, %d bytes>" % (mime, n)}
    if mime == "text/plain":
        return {mime: text}
    return {mime: text, "text/plain": text}


class Publisher:
    # Mixed into a program kernel's class before ipykernel's Kernel (whose
    # attributes it uses): bounded publishing from any thread, SIGINT
    # routed to the kernel's on_sigint while a request is handled, notes
    # on stderr.

    def publish(self, msg_type, content):
        # Sends one iopub message (from any thread) and waits until the
        # I/O thread has sent it, so messages never pile up in the kernel.
        if self.quiet and msg_type == "stream":
            return
        self.session.send(self.iopub_socket, msg_type, content, parent=self.out_parent, ident=self._topic(msg_type))
        done = threading.Event()
        self.iopub_thread.schedule(done.set)
        done.wait(10)

    def pre_handler_hook(self):
        self.saved_sigint_handler = signal.signal(signal.SIGINT, self.on_sigint)

    def post_handler_hook(self):
        signal.signal(signal.SIGINT, self.saved_sigint_handler)

    def note(self, text):
        self.publish("stream", {"name": "stderr", "text": "[glassroom] " + text + "\n"})


def run_kernel(kernel_class):
    # Serves the connection file of the command line (-f) with kernel_class
    # until shutdown.
    import sys
    from ipykernel.kernelapp import IPKernelApp
    app = IPKernelApp.instance(kernel_class=kernel_class)
    app.initialize(sys.argv[1:] + ["--IPKernelApp.ignore_cwd=True"])
    app.start()
