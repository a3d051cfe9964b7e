# glassroom's kernel launcher, run as `python3 -I -B -c <this file> -f <connection file>`.
#
# It starts ipykernel like ipykernel_launcher does, with two changes:
#  - stdout/stderr are sent in messages of at most CHUNK characters: a
#    writer that gets ahead of the kernel's I/O thread waits for it, so a
#    print loop never builds one giant message;
#  - the working directory (the workspace) joins sys.path only after the
#    kernel has loaded, so files there cannot replace the kernel's modules.
import sys

CHUNK = 64 * 1024


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


def main():
    from ipykernel import iostream, kernelapp

    bound_stream_messages(iostream.OutStream)
    app = kernelapp.IPKernelApp.instance()
    app.initialize(sys.argv[1:] + ["--IPKernelApp.ignore_cwd=True"])
    at = next((i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))), len(sys.path))
    sys.path.insert(at, "")
    app.start()


main()
