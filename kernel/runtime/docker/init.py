# glassroom's init in a kernel container: its PID 1, run as
# `python3 -I -S -B -c <this file> <deadline file> -- <kernel argv>`.
#
# It does what tini did: starts the kernel (the argv after "--"), passes
# on the signals the container is sent (SIGTERM, SIGINT, SIGHUP, SIGQUIT,
# SIGUSR1, SIGUSR2), reaps every orphan, and exits as the kernel does:
# with its exit status, or 128+n when signal n killed it.
#
# And it ends the sandbox at its deadline. The deadline file holds a time
# (unix seconds, one decimal integer) that only the gateway writes: its
# directory is the gateway's, bound read-only. A gateway that holds the
# sandbox keeps the time ahead; one that lets it go, or dies, leaves it
# where the sandbox must end. This init reads the file again at least
# every POLL seconds, and again when the time it read comes; once that
# time has passed, or the file is gone (the gateway's state directory was
# removed) or holds no time, it kills every process of the container and
# exits with EXPIRED: the container stops. A deadline already passed when
# the container starts starts no kernel.
#
# The kernel runs as the same uid and cannot keep the sandbox past its
# deadline: it cannot write the file; the kernel never delivers SIGKILL or
# SIGSTOP sent from inside the container to its PID 1, and this process
# only passes the other signals on (a signal can end the sandbox sooner,
# never later); and it makes itself not dumpable, so no process of its
# uid can ptrace it or write its memory through /proc.
import ctypes
import errno
import os
import signal
import sys
import time

POLL = 5.0
EXPIRED = 124
# Read errors other than a missing file (EIO from a loaded host) are
# retried this many times, a POLL apart, before the sandbox ends.
READ_TRIES = 3
PR_SET_DUMPABLE = 4
FORWARD = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2)
WAITED = set(FORWARD) | {signal.SIGCHLD}


def say(msg):
    try:
        os.write(2, ("glassroom init: " + msg + "\n").encode())
    except OSError:
        pass


def read_deadline(path):
    # (deadline, why): the file's time, or None and why there is none;
    # (None, "") for an error worth reading again.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, "its deadline file is gone (the gateway's state directory was removed)"
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None, "its deadline file is a symbolic link"
        return None, ""
    try:
        data = os.read(fd, 64)
    except OSError:
        return None, ""
    finally:
        os.close(fd)
    try:
        v = int(data.split()[0])
    except (ValueError, IndexError):
        return None, "its deadline file holds no time"
    if v < 0 or v >= 1 << 53:
        return None, "its deadline file holds no time"
    return v, ""


def end(pid, why):
    say(why + "; ending the sandbox")
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # every process of the container but this one
        except OSError:
            pass
    else:  # not an init (a test): its kernel only
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(EXPIRED)


def reap(pid):
    # Reaps every exited child: the kernel's exit status once it has
    # exited, else None.
    status = None
    while True:
        try:
            p, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if p == 0:
            return status
        if p == pid:
            code = os.waitstatus_to_exitcode(st)
            status = code if code >= 0 else 128 - code


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        say("usage: init DEADLINE_FILE -- ARGV...")
        os._exit(2)
    path, argv = sys.argv[1], sys.argv[3:]
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            say("prctl(PR_SET_DUMPABLE) failed: errno %d" % ctypes.get_errno())
    except (OSError, AttributeError) as e:
        say("prctl(PR_SET_DUMPABLE) failed: %s" % e)
    signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)
    deadline, why = read_deadline(path)
    if deadline is None and why:
        say(why + "; not starting the kernel")
        os._exit(EXPIRED)
    if deadline is not None and time.time() >= deadline:
        say("its deadline passed; not starting the kernel")
        os._exit(EXPIRED)
    pid = os.fork()
    if pid == 0:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            for s in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; the kernel starts as under tini
                signal.signal(s, signal.SIG_DFL)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    failures = 0
    check = time.monotonic()  # when to read the file again
    while True:
        if time.monotonic() >= check:
            deadline, why = read_deadline(path)
            if deadline is None:
                failures += 1
                if why or failures >= READ_TRIES:
                    end(pid, why or "its deadline file cannot be read")
                check = time.monotonic() + POLL
            else:
                failures = 0
                left = deadline - time.time()
                if left <= 0:
                    end(pid, "its deadline passed (no gateway holds it)")
                check = time.monotonic() + min(POLL, left)
        info = signal.sigtimedwait(WAITED, max(check - time.monotonic(), 0.01))
        if info is None:
            continue
        if info.si_signo == signal.SIGCHLD:
            status = reap(pid)
            if status is not None:
                os._exit(status)
        else:
            try:
                os.kill(pid, info.si_signo)
            except OSError:
                pass


main()
