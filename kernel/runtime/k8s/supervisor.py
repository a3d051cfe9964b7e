# glassroom's kernel supervisor in a pod, run by tini as
# `python3 -I -B -c <this file> <settings JSON> <the first kernel's argv>`.
#
# It starts one kernel generation at a time, as the agent asks through the
# control file (a directory the kernel container mounts read-only), and
# reports each generation's state in the status file:
#   starting -> ready (its sockets accept) -> stopped (the gateway asked) or
#   exited (it died: exit code, signal, OOMKilled).
# Generations only go up, and each starts once. Before the agent's first
# command, generation 1 starts at once. Stopping a generation kills every
# process of the sandbox but tini and this one (kill(-1)), so nothing the
# code started survives a restart; and each generation starts with the
# scratch directories (/tmp, /dev/shm, the ipc and contexts directories:
# emptyDirs that outlive it) emptied, so nothing the code left there
# (IPython startup files and config under IPYTHONDIR, matplotlib's and the
# XDG caches) steers the next kernel. A generation whose scratch
# directories cannot be emptied is not started.
#
# The kernel listens on unix sockets in the ipc directory (an ipc
# connection file, as in every runtime), which the agent's container
# mounts too: it relays the gateway's channel tunnels to them.
#
# Beside the generations it runs what the agent passes on from the
# gateway, on a unix socket in the status directory (S["spawn"]): each
# connection is one request, a JSON line, answered with a JSON line
# ({"ok": true} or {"error": ...}), then the connection is the process's:
#  - {"kind": "context", "name", "argv", "cwd"}: one more kernel (a
#    context) with its own ipc directory under S["contexts"]/<name> (made
#    afresh, its connection file the first kernel's with its own socket
#    paths; "{conn}" in argv is that file). Its stdout and stderr are the
#    connection; the end of the connection (the gateway closing or gone)
#    kills its process group; when it ends, a last line tells how
#    (TRAILER, then JSON).
#  - {"kind": "command", "argv", "cwd", "env"}: the launcher's command
#    mode, its stdin and stdout the connection (the launcher's frames),
#    its stderr this container's log.
#  - {"kind": "kill", "pgid"}: SIGKILL to that process group (a command's,
#    when its launcher is stuck).
#  - {"kind": "freeze"} and {"kind": "thaw"}: SIGSTOP, then SIGCONT, to
#    every process of the sandbox but tini and this one (a pod has no
#    cgroup freezer it may write); a freeze is answered once every one is
#    stopped.
#  - {"kind": "usage"}: the container's cgroup (CPU time, memory in use
#    less the page cache that can be dropped, its limit) and how many of
#    its threads are runnable, in the answer.
# Every process runs in a session of its own, in cwd (the workspace or a
# directory under it), with the container's environment (less the
# kubelet's KUBERNETES_* variables), the sandbox's rlimits and
# oom_score_adj 500 for a kernel (or the container's own, when higher:
# an unprivileged process cannot lower it), 1000 for a command (the
# launcher sets it), so the OOM killer takes a command first, then a
# kernel, never this supervisor first. Anything in the sandbox can reach
# this socket too, and may ask for what it can already do itself; what
# it says back to the agent is hostile there.
import errno
import json
import os
import resource
import select
import signal
import socket
import sys
import threading
import time

TRAILER = b"\n\x00glassroom-exit "
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")

S = json.loads(sys.argv[1])
S["argv"] = sys.argv[2:]


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
    # The container's OOM kills so far: cgroup v2, else v1.
    for path, key in (("/sys/fs/cgroup/memory.events", "oom_kill"), ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill")):
        try:
            with open(path) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == key:
                        return int(v)
        except (OSError, ValueError):
            continue
    return 0


def states():
    # {pid: state} of every process of the sandbox but tini and this one.
    me, out = os.getpid(), {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                out[int(name)] = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            pass
    return out


def others():
    # The sandbox's live processes but tini and this one.
    return [pid for pid, st in states().items() if st not in ("Z", "X")]


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
    # Elsewhere (a simulation): the kernel's own session and those of
    # what the spawn socket started.
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
    with SPAWNED_LOCK:
        groups = list(SPAWNED)
    for g in groups + ([pid] if pid > 1 else []):
        try:
            os.killpg(g, signal.SIGKILL)
        except OSError:
            pass
    if pid > 1:
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


def set_oom(value):
    # Raises oom_score_adj to value; an unprivileged process cannot lower
    # it below the container's, which then stays.
    try:
        with open("/proc/self/oom_score_adj") as f:
            now = int(f.read().strip() or 0)
        if value > now:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write(str(value))
    except (OSError, ValueError):
        pass


def exec_child(argv, cwd, env=None, oom=None):
    # In a forked child: a session of its own, the sandbox's rlimits and
    # environment, then argv. Never returns.
    try:
        os.setsid()
        if oom is not None:
            set_oom(oom)
        for name, v in S["rlimits"].items():
            resource.setrlimit(getattr(resource, name), (v, v))
        os.chdir(cwd)
        # The kubelet gives every container the kubernetes Service's
        # address (enableServiceLinks does not cover it): not the kernel.
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        child_env.update(env or {})
        os.execve(argv[0], argv, child_env)
    finally:
        os._exit(127)


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
    ensure_spawn()
    pid = os.fork()
    if pid == 0:
        exec_child(S["argv"], S["workdir"], oom=500)
    return pid


def signal_all(freeze):
    # SIGSTOP (freeze) or SIGCONT to the sandbox's processes: in the pod
    # every one (kill(-1): all but tini and this one), elsewhere (a
    # simulation) the kernels' and spawned groups. In the pod a freeze is
    # repeated until none runs (a process forked as the signal went out).
    sig = signal.SIGSTOP if freeze else signal.SIGCONT
    if not (S["kill_scope"] == "all" and os.getppid() == 1):
        with SPAWNED_LOCK:
            groups = list(SPAWNED)
        for g in groups + CURRENT:
            try:
                os.killpg(g, sig)
            except OSError:
                pass
        return
    for _ in range(200):
        try:
            os.kill(-1, sig)
        except OSError:
            pass
        if not freeze or all(st in ("T", "t", "Z", "X") for st in states().values()):
            return
        time.sleep(0.005)
    raise RuntimeError("processes of the sandbox kept running")


def read_number_file(path):
    try:
        with open(path) as f:
            v = f.read().strip()
    except OSError:
        return None
    if v == "max":
        return 0
    try:
        return int(v)
    except ValueError:
        return None


def read_stat_file(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(" ")
                try:
                    out[k] = int(v)
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def usage():
    # The container's cgroup as the container sees it (its own at the
    # root of /sys/fs/cgroup): v2, else v1.
    root = "/sys/fs/cgroup"
    cur = read_number_file(root + "/memory.current")
    if cur is not None:
        mem = cur - read_stat_file(root + "/memory.stat").get("inactive_file", 0)
        limit = read_number_file(root + "/memory.max") or 0
        cpu = read_stat_file(root + "/cpu.stat").get("usage_usec", 0) * 1000
    else:
        mem = (read_number_file(root + "/memory/memory.usage_in_bytes") or 0) - \
            read_stat_file(root + "/memory/memory.stat").get("total_inactive_file", 0)
        limit = read_number_file(root + "/memory/memory.limit_in_bytes") or 0
        if limit >= 1 << 60:
            limit = 0
        cpu = read_number_file(root + "/cpuacct/cpuacct.usage") or read_number_file(root + "/cpu,cpuacct/cpuacct.usage") or 0
    runnable = 0
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            for tid in os.listdir("/proc/%s/task" % name):
                with open("/proc/%s/task/%s/stat" % (name, tid)) as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "R":
                        runnable += 1
        except (OSError, IndexError):
            pass
    return {"cpu_nanos": max(cpu, 0), "mem_used": max(mem, 0), "mem_limit": max(limit, 0), "runnable": runnable}


def sockets_open(conn_file):
    # Whether the five sockets of the ipc connection file accept.
    info = read_json(conn_file, 65536) or {}
    ip = info.get("ip")
    if info.get("transport") != "ipc" or not isinstance(ip, str):
        return False
    for ch in ("shell", "iopub", "stdin", "control", "hb"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(0.2)
        try:
            s.connect("%s-%d" % (ip, as_int(info.get(ch + "_port"))))
        except OSError:
            return False
        finally:
            s.close()
    return True


# The spawn socket (see the top of this file): its listener, and the
# inode it was bound as (code in the sandbox may unlink or replace it:
# each generation's start binds it again then).
SPAWN = {"sock": None, "ino": None}


def ensure_spawn():
    path = S.get("spawn")
    if not path:
        return
    try:
        ino = os.lstat(path).st_ino
    except OSError:
        ino = None
    if SPAWN["sock"] is not None and ino == SPAWN["ino"]:
        return
    if SPAWN["sock"] is not None:
        SPAWN["sock"].close()  # its accept thread ends
        SPAWN["sock"] = None
    try:
        os.unlink(path)
    except OSError:
        pass
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        ls.bind(path)
        ls.listen(64)
    except OSError as e:
        ls.close()
        sys.stderr.write("glassroom supervisor: cannot listen on %s: %s\n" % (path, e))
        return
    SPAWN["sock"], SPAWN["ino"] = ls, os.lstat(path).st_ino
    threading.Thread(target=accept_spawns, args=(ls,), daemon=True).start()


def accept_spawns(ls):
    while True:
        try:
            conn, _ = ls.accept()
        except OSError:
            return
        threading.Thread(target=serve_spawn, args=(conn,), daemon=True).start()


def read_request(conn, limit=1 << 20):
    # The request line, read without taking a byte of what follows it.
    buf = b""
    while True:
        chunk = conn.recv(65536, socket.MSG_PEEK)
        if not chunk:
            raise ValueError("no request")
        i = chunk.find(b"\n")
        if i >= 0:
            buf += conn.recv(i + 1)
            break
        buf += conn.recv(len(chunk))
        if len(buf) > limit:
            raise ValueError("request too long")
    req = json.loads(buf)
    if not isinstance(req, dict):
        raise ValueError("request is not an object")
    return req


def string_list(v):
    if not isinstance(v, list) or not v or not all(isinstance(a, str) and "\0" not in a for a in v):
        raise ValueError("argv")
    return v


def sandbox_dir(rel):
    # The workspace, or a directory under it (rel is relative to it).
    if not isinstance(rel, str) or "\0" in rel or rel.startswith("/") or ".." in rel.split("/"):
        raise ValueError("cwd")
    path = os.path.join(S["workdir"], rel) if rel else S["workdir"]
    if not os.path.isdir(path):
        raise ValueError("cwd %s is not a directory" % rel)
    return path


def answer(conn, obj):
    conn.sendall(json.dumps(obj).encode() + b"\n")


def serve_spawn(conn):
    try:
        conn.settimeout(10)
        try:
            req = read_request(conn)
            kind = req.get("kind")
            if kind in ("freeze", "thaw"):
                signal_all(kind == "freeze")
                answer(conn, {"ok": True})
                return
            if kind == "usage":
                answer(conn, {"ok": True, "usage": usage()})
                return
            if kind == "kill":
                pgid = as_int(req.get("pgid"))
                if pgid > 1 and pgid not in (os.getpgrp(), os.getpid()):
                    try:
                        os.killpg(pgid, signal.SIGKILL)
                    except OSError:
                        pass
                answer(conn, {"ok": True})
                return
            argv = string_list(req.get("argv"))
            cwd = sandbox_dir(req.get("cwd", ""))
            conn.settimeout(None)
            if kind == "context":
                run_context(conn, req, argv, cwd)
            elif kind == "command":
                env = req.get("env") or {}
                if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
                    raise ValueError("env")
                answer(conn, {"ok": True})
                pid = os.fork()
                if pid == 0:
                    os.dup2(conn.fileno(), 0)
                    os.dup2(conn.fileno(), 1)
                    exec_child(argv, cwd, env)
                spawned(pid)
                conn.close()  # the launcher has it; the end of its stdin ends the command
                wait_child(pid)
            else:
                raise ValueError("kind %r" % kind)
        except (OSError, ValueError, RuntimeError) as e:
            try:
                answer(conn, {"error": str(e)[:300]})
            except OSError:
                pass
    finally:
        conn.close()


# The processes the spawn socket started (each its own process group).
SPAWNED = set()
SPAWNED_LOCK = threading.Lock()


def spawned(pid):
    with SPAWNED_LOCK:
        SPAWNED.add(pid)


def wait_child(pid):
    # Its status, or None when kill_all reaped it first.
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None
    finally:
        with SPAWNED_LOCK:
            SPAWNED.discard(pid)


def run_context(conn, req, argv, cwd):
    name = req.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= 32 or not set(name) <= NAME_CHARS or name[0] == "-":
        raise ValueError("context name")
    d = os.path.join(S["contexts"], name)
    if os.path.lexists(d):
        left = clear(d)
        if left:
            raise RuntimeError("cannot empty the context's directory " + left)
        os.rmdir(d)
    os.mkdir(d, 0o700)
    with open(S["secret"], "rb") as f:
        info = json.loads(f.read(65536))
    info["ip"] = os.path.join(d, "k")
    conn_file = os.path.join(d, "kernel.json")
    fd = os.open(conn_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(info, f)
    argv = [a.replace("{conn}", conn_file) for a in argv]
    answer(conn, {"ok": True})
    ooms = oom_kills()
    pid = os.fork()
    if pid == 0:
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(conn.fileno(), 1)
        os.dup2(conn.fileno(), 2)
        exec_child(argv, cwd, oom=500)
    spawned(pid)
    # The gateway's end: when it closes, the kernel's group dies.
    status, gone = None, False
    while status is None:
        try:
            done, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            gone = True
            break
        if done:
            status = st
            with SPAWNED_LOCK:
                SPAWNED.discard(pid)
            break
        r, _, _ = select.select([conn], [], [], 0.2)
        if r:
            try:
                data = conn.recv(4096)
            except OSError:
                data = b""
            if not data:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
    if status is None and not gone:
        status = wait_child(pid)
    reason = "killed with every process of the sandbox" if status is None else describe(status, oom_kills() - ooms)
    try:
        conn.sendall(TRAILER + json.dumps({"reason": reason}).encode() + b"\n")
    except OSError:
        pass


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
            elif not kernel[2] and sockets_open(S["conn"]):
                kernel[2] = True
                write_status(kernel[0], "ready")
        time.sleep(0.02 if kernel and not kernel[2] else 0.05)


def terminate(*_):
    # The pod is being deleted: take the kernels down first.
    kill_all(CURRENT[0] if CURRENT else 0)
    sys.exit(0)


CURRENT = []  # the running kernel's pid
signal.signal(signal.SIGTERM, terminate)
main()
