# glassroom's kernel supervisor in a pod, run by tini as
# `python3 -I -B -c <this file> <settings JSON>`.
#
# It starts one kernel generation at a time, as the agent asks through the
# control file (a directory the kernel container mounts read-only), and
# reports each generation's state in the status file:
#   starting -> ready (its ports accept) -> stopped (the gateway asked) or
#   exited (it died: exit code, signal, OOMKilled).
# Generations only go up, and each starts once. Before the agent's first
# command, generation 1 starts at once. Stopping a generation kills every
# process of the sandbox but tini and this one (kill(-1)), so nothing the
# code started survives a restart; and each generation starts with the
# scratch directories (/tmp, /dev/shm: emptyDirs that outlive it) emptied,
# so nothing the code left there (IPython startup files and config under
# IPYTHONDIR, matplotlib's and the XDG caches) steers the next kernel. A
# generation whose scratch directories cannot be emptied is not started.
import errno
import json
import os
import resource
import signal
import socket
import sys
import time

S = json.loads(sys.argv[1])


def read_json(path, limit=4096):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    try:
        v = json.loads(data)
    except ValueError:
        return None
    return v if isinstance(v, dict) else None


def as_int(v):
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 53 else 0


def write_status(gen, state, reason=""):
    tmp = S["status"] + ".tmp"
    try:
        os.unlink(tmp)
    except OSError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        json.dump({"gen": gen, "state": state, "reason": reason}, f)
    os.rename(tmp, S["status"])


def oom_kills():
    try:
        with open("/sys/fs/cgroup/memory.events") as f:
            for line in f:
                k, _, v = line.partition(" ")
                if k == "oom_kill":
                    return int(v)
    except (OSError, ValueError):
        pass
    return 0


def others():
    me, out = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            out.append(int(name))
    return out


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_all(pid):
    # In the pod (scope "all", under tini): every process of the sandbox.
    # Elsewhere (a simulation): the kernel's own session only.
    if S["kill_scope"] == "all" and os.getppid() == 1:
        for _ in range(500):
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            reap()
            if not others():
                return
            time.sleep(0.01)
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def clear(path):
    # Empties the directory path (not path itself) without following a
    # symlink, however deep the tree: each pass deletes what it can at the
    # top and moves the children of each directory left up to the top, so
    # no recursion and no more than two open directories. Nothing of the
    # sandbox runs (kill_all came first), so the tree holds still; a
    # directory the code made unreadable is made readable again (it is
    # the session's uid's, like this process). Returns what was left, as
    # an error message, or "".
    try:
        top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        return "%s: %s" % (path, e.strerror)
    moved = 0
    try:
        for _ in range(1 << 20):
            names = os.listdir(top)
            if not names:
                return ""
            for name in names:
                try:
                    os.unlink(name, dir_fd=top)
                    continue
                except IsADirectoryError:
                    pass
                except FileNotFoundError:
                    continue
                except PermissionError:
                    pass  # EPERM: a directory (Linux); anything else fails below
                try:
                    os.rmdir(name, dir_fd=top)
                    continue
                except OSError:
                    pass
                st = os.stat(name, dir_fd=top, follow_symlinks=False)
                if (st.st_mode & 0o170000) != 0o040000:
                    return "%s: cannot remove %r" % (path, name)
                os.chmod(name, 0o700, dir_fd=top)
                sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
                try:
                    for child in os.listdir(sub):
                        for _ in range(1000):  # a name the code left at the top may be in the way
                            moved += 1
                            try:
                                os.rename(child, ".glassroom-clear-%d" % moved, src_dir_fd=sub, dst_dir_fd=top)
                                break
                            except (IsADirectoryError, NotADirectoryError, FileExistsError):
                                pass
                            except OSError as e:
                                if e.errno != errno.ENOTEMPTY:
                                    raise
                finally:
                    os.close(sub)
        return "%s: too many entries" % path
    except OSError as e:
        return "%s: %s" % (path, e)
    finally:
        os.close(top)


def start():
    for d in S["scratch"]:
        left = clear(d)
        if left:
            raise RuntimeError("cannot empty the scratch directory " + left)
    with open(S["secret"], "rb") as f:
        conn = f.read(65536)
    try:
        os.unlink(S["conn"])
    except OSError:
        pass
    fd = os.open(S["conn"], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(conn)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")  # the kernel, not the agent or this, is the OOM killer's choice
            for name, v in S["rlimits"].items():
                resource.setrlimit(getattr(resource, name), (v, v))
            os.chdir(S["workdir"])
            # The kubelet gives every container the kubernetes Service's
            # address (enableServiceLinks does not cover it): not the kernel.
            for name in [n for n in os.environ if n.startswith("KUBERNETES_")]:
                del os.environ[name]
            os.execv(S["argv"][0], S["argv"])
        finally:
            os._exit(127)
    return pid


def ports_open():
    try:
        ip = (read_json(S["conn"], 65536) or {}).get("ip", "")
    except OSError:
        ip = ""
    host = "127.0.0.1" if ip in ("0.0.0.0", "") else ip
    for port in S["ports"]:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(0.2)
        try:
            s.connect((host, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def describe(status, ooms):
    if ooms:
        return "OOMKilled"
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    return "exit code %d" % os.waitstatus_to_exitcode(status)


def main():
    st = read_json(S["status"]) or {}
    started = as_int(st.get("gen"))
    if st.get("state") in ("starting", "ready"):
        write_status(started, "exited", "the kernel container restarted")
    kernel = None  # [gen, pid, ready, oom kills before]
    while True:
        ctl = read_json(S["control"])
        want_gen, want_run = (1, True) if ctl is None else (as_int(ctl.get("gen")), ctl.get("run") is True)
        if kernel and (not want_run or want_gen != kernel[0]):
            kill_all(kernel[1])
            write_status(kernel[0], "stopped", "stopped by the gateway")
            kernel = None
            CURRENT[:] = []
        if kernel is None and want_run and want_gen > started:
            started = want_gen
            write_status(started, "starting")
            try:
                pid = start()
            except (OSError, RuntimeError) as e:
                write_status(started, "exited", str(e)[:200])
                continue
            kernel = [started, pid, False, oom_kills()]
            CURRENT[:] = [kernel[1]]
        if kernel:
            pid, status = os.waitpid(kernel[1], os.WNOHANG)
            if pid:
                reason = describe(status, oom_kills() - kernel[3])
                kill_all(kernel[1])
                write_status(kernel[0], "exited", reason)
                kernel = None
                CURRENT[:] = []
            elif not kernel[2] and ports_open():
                kernel[2] = True
                write_status(kernel[0], "ready")
        time.sleep(0.02 if kernel and not kernel[2] else 0.05)


def terminate(*_):
    # The pod is being deleted: take the kernel down first.
    if CURRENT:
        kill_all(CURRENT[0])
    sys.exit(0)


CURRENT = []  # the running kernel's pid
signal.signal(signal.SIGTERM, terminate)
main()
