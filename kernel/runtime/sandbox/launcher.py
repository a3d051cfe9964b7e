# glassroom's kernel launcher, run as `python3 -I -B -c <this file> -f <connection file>`.
#
# It starts ipykernel like ipykernel_launcher does, with three changes:
#  - stdout/stderr are sent in messages of at most CHUNK characters: a
#    writer that gets ahead of the kernel's I/O thread waits for it, so a
#    print loop never builds one giant message;
#  - the working directory (the workspace) joins sys.path only after the
#    kernel has loaded, so files there cannot replace the kernel's modules;
#  - IPython's history is kept in memory: no SQLite file, and no saving
#    thread woken after every cell (40 busy sessions on 2 cores: 488
#    instead of 440 exec/s); %history and Jupyter's history_request still
#    answer.
#
# When glassroom sets GLASSROOM_EGRESS_SOCKET (the session has a network
# allowlist), it first starts the egress forwarder: a forked process that
# listens on 127.0.0.1:PROXY_PORT in the sandbox's own network namespace
# and splices each connection to the gateway's proxy through that unix
# socket; HTTP_PROXY and friends point the kernel (and pip, and
# subprocesses) at it. It runs in its own session, ignores SIGINT (an
# interrupt signals the kernel's process group), and exits when the kernel
# does; a kernel restart starts a fresh one. Code that kills it loses its
# own network until the next restart, nothing more.
import sys

CHUNK = 64 * 1024
PROXY_PORT = 3128
PROXY_BUSY = b"HTTP/1.1 502 glassroom egress: proxy unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def bound_stream_messages(OutStream):
    write = OutStream.write

    def bounded_write(self, string):
        if not isinstance(string, str):
            return write(self, string)  # raises TypeError, as before
        for i in range(0, max(len(string), 1), CHUNK):
            write(self, string[i:i + CHUNK])
            if self._buffer.tell() >= CHUNK:
                self.flush()
        return len(string)

    OutStream.write = bounded_write


class End:
    # One side of a relayed connection: what waits to be written to it,
    # whether it has no more to read (eof), whether writing to it is shut.

    def __init__(self, sock):
        self.sock = sock
        self.peer = None
        self.out = b""
        self.eof = False
        self.shut = False
        self.mask = 0
        self.closed = False


def relay_egress(listener, path, parent):
    import os
    import selectors
    import socket

    sel = selectors.DefaultSelector()
    R, W = selectors.EVENT_READ, selectors.EVENT_WRITE
    listener.setblocking(False)
    sel.register(listener, R, None)

    def update(e):
        # Read only while the peer has nothing pending: one read at most
        # is buffered per direction.
        mask = (R if not e.eof and not e.peer.out else 0) | (W if e.out else 0)
        if mask != e.mask:
            if e.mask and mask:
                sel.modify(e.sock, mask, e)
            elif mask:
                sel.register(e.sock, mask, e)
            else:
                sel.unregister(e.sock)
            e.mask = mask

    def close(e):
        for x in (e, e.peer):
            if x.mask:
                sel.unregister(x.sock)
                x.mask = 0
            x.sock.close()
            x.closed = True

    def flush(x):
        try:
            x.out = x.out[x.sock.send(x.out):]
        except (BlockingIOError, InterruptedError):
            pass

    def settle(e):
        for x in (e, e.peer):
            if x.peer.eof and not x.out and not x.shut:
                x.shut = True
                try:
                    x.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        if e.eof and e.peer.eof and not e.out and not e.peer.out:
            close(e)
            return
        update(e)
        update(e.peer)

    def accept():
        try:
            c, _ = listener.accept()
        except OSError:
            return
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.setblocking(False)
        try:
            u.connect(path)
        except OSError:
            u.close()
            try:
                c.sendall(PROXY_BUSY)
            except OSError:
                pass
            c.close()
            return
        c.setblocking(False)
        a, b = End(c), End(u)
        a.peer, b.peer = b, a
        update(a)
        update(b)

    while True:
        for key, mask in sel.select(1.0):
            e = key.data
            if e is None:
                accept()
                continue
            if e.closed:
                continue
            try:
                if mask & W:
                    flush(e)
                if mask & R:
                    data = e.sock.recv(65536)
                    if data:
                        e.peer.out += data
                        flush(e.peer)
                    else:
                        e.eof = True
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                close(e)
                continue
            settle(e)
        if os.getppid() != parent:
            return


def start_egress():
    import os
    import signal
    import socket

    path = os.environ.get("GLASSROOM_EGRESS_SOCKET")
    if not path:
        return
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", PROXY_PORT))
    listener.listen(128)
    parent = os.getpid()
    if os.fork() == 0:
        code = 0
        try:
            os.setsid()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            relay_egress(listener, path, parent)
        except BaseException:
            code = 1
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    listener.close()
    url = "http://127.0.0.1:%d" % PROXY_PORT
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ[name] = url
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "localhost,127.0.0.1,::1"


def main():
    args = sys.argv[1:]
    kernel = "python3"
    if args[:1] == ["--kernel"]:
        kernel, args = args[1], args[2:]
    if kernel != "python3":
        sys.exit("glassroom launcher: kernel %r is not installed" % kernel)
    start_egress()
    from ipykernel import iostream, kernelapp

    bound_stream_messages(iostream.OutStream)
    app = kernelapp.IPKernelApp.instance()
    app.initialize(args + ["--IPKernelApp.ignore_cwd=True", "--HistoryManager.hist_file=:memory:"])
    at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
    sys.path.insert(at, "")
    app.start()


main()
