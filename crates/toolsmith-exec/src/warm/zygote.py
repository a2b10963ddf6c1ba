# toolsmith's warm Python runtime: a resident interpreter that forks one child per call.
#
# Started by the gateway as `python -I zygote.py IDLE FILTER BASE` with fd 0 a SOCK_SEQPACKET
# socket, IDLE the seconds it waits for a call before it exits (its memory goes back) and
# FILTER and BASE what it applies to itself for its children (below). One call
# at a time: the gateway sends a JSON header naming only the script (and the sandbox's
# rules, below) and, as SCM_RIGHTS, the call's stdin, stdout and stderr pipes and a fourth
# pipe carrying the call's setup; the
# zygote forks, answers {"pid": N}, waits for the child and answers {"status": raw wait
# status} — or answers {"cold": why} without forking when the script cannot be read or
# compiled here, and the gateway runs that call cold. The child sets itself up exactly as a
# cold `python -I script.py` would be before running any user code (process group, rlimits,
# niceness, stdio, no inherited descriptors, working folder, environment, argv, __main__)
# and exits with the script's status. The zygote stays single-threaded and never runs user
# code itself.
#
# What a call can reach of the zygote (SPEC §5, hardening round two):
# - the zygote is not dumpable, so a child (same user, and without CAP_SYS_PTRACE, which a
#   child drops when it runs as root) can neither read nor write its memory through
#   /proc/PID/mem, ptrace, process_vm_* or pidfd_getfd;
# - the call's setup (working folder, environment — secrets — and limits) is read from its
#   own pipe by the child after the fork: no call's data ever enters the zygote's memory,
#   which every later child inherits;
# - a sandboxed call's child is confined before any user code: its zygote was born under
#   the policy's seccomp filter, with no_new_privs and (as root) without capabilities — a
#   zygote serves only calls of its base, which the child checks against its setup — and
#   the Landlock ruleset is built once per confinement by the zygote from rules the header
#   carries (paths, rights and ports — nothing else of the call) and kept open, so a child
#   only restricts itself to it, after checking that it is the one its setup names;
# - before the setup is read, the child drops the zygote's globals (the cache of other
#   tools' compiled scripts, the socket): a script walking up its frames finds nothing of
#   the zygote's.
#
# A spare child: once a call's cleanup is done the gateway sends {"spare": true}, and the zygote
# (or confined runtime) forks a child ahead of the next call and answers {"spare": pid} — the
# fork, copying the zygote's page tables, is the costliest part of a warm call, and it then
# happens between calls. The spare waits on a socketpair of its own holding nothing of any
# call, having let go already of the zygote's globals and of CAP_SYS_PTRACE (what a child
# does first; still not dumpable until a call is its own); the next call's pipes (and its Landlock ruleset's descriptor) are handed to it there,
# and from then on it is exactly the child a fork at that moment would have made. The
# gateway counts a spare among its slot's residents until a call takes it.
import array
import ctypes
import gc
import json
import os
import resource
import socket
import sys
import traceback

# What code mode's programs use (toolsmith_gateway::code): imported once here, so a program's
# child has them from its fork instead of paying ~70 ms for them on each run.
import ast  # noqa: F401
import asyncio  # noqa: F401
import typing  # noqa: F401

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_DUMPABLE, PR_CAPBSET_DROP, CAP_SYS_PTRACE = 4, 24, 19
if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
    raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_ptrace():
    """Gives up CAP_SYS_PTRACE (root's way past a non-dumpable process), for good: from the
    bounding set too, so nothing the call executes gets it back."""
    header, data = CapHeader(0x20080522, 0), (CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget failed")
    bit = 1 << CAP_SYS_PTRACE
    libc.prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0)  # fails harmlessly without CAP_SETPCAP
    if (data[0].effective | data[0].permitted | data[0].inheritable) & bit:
        data[0].effective &= ~bit
        data[0].permitted &= ~bit
        data[0].inheritable &= ~bit
        if libc.capset(ctypes.byref(header), data) != 0:
            raise OSError(ctypes.get_errno(), "capset failed")

class RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


class NetPort(ctypes.Structure):
    _fields_ = [("allowed", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


RULESETS = {}  # the gateway's number for a confinement → its Landlock ruleset's descriptor
SYSCALL = libc.syscall  # looked up once, not in every child


def build_ruleset(rules):
    """A Landlock ruleset made of the gateway's rules (paths and rights, ports), kept open by
    the zygote and handed to every child confined alike; raises when the kernel refuses."""
    attr = RulesetAttr(rules["handled_fs"], rules.get("handled_net", 0), rules.get("scoped", 0))
    size = 24 if attr.scoped else (16 if attr.net else 8)
    rfd = SYSCALL(444, ctypes.byref(attr), size, 0)
    if rfd < 0:
        raise OSError(ctypes.get_errno(), "sandbox: landlock_create_ruleset")
    try:
        rule = PathBeneath(0, -1)
        for path, mask in rules.get("paths", ()):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # gone since the rules were made: it allows nothing
            rule.allowed, rule.fd = mask, fd
            ret = SYSCALL(445, rfd, 1, ctypes.byref(rule), 0)
            os.close(fd)
            if ret < 0:
                raise OSError(ctypes.get_errno(), f"sandbox: Landlock rule for {path}")
        for port, mask in rules.get("ports", ()):
            if SYSCALL(445, rfd, 2, ctypes.byref(NetPort(mask, port)), 0) < 0:
                raise OSError(ctypes.get_errno(), f"sandbox: Landlock rule for port {port}")
    except BaseException:
        os.close(rfd)
        raise
    return rfd


def ruleset_for(req):
    """(number, descriptor) of the ruleset this call's child restricts itself to, built
    the first time; None when its confinement has no Landlock rules."""
    number = req.get("ruleset")
    if number is None:
        return None
    if req.get("reset") or len(RULESETS) >= 128:
        for fd in RULESETS.values():
            os.close(fd)
        RULESETS.clear()
    if number not in RULESETS:
        if not req.get("rules"):
            raise ValueError(f"ruleset {number} is not held here")
        RULESETS[number] = build_ruleset(req["rules"])
    return (number, RULESETS[number])


def confine(box, ruleset, base, libc=libc, syscall=SYSCALL, ctypes=ctypes, os=os):
    """Applies the gateway's sandbox to this child, as the gateway's spawning thread does
    for a cold process (toolsmith-exec's `sandbox`). The zygote was born under the child's
    seccomp filter, with no new privileges, and without capabilities where the child must
    have none (its base, which must be the one the call's setup names); what is left is the
    Landlock ruleset the zygote built. Every failure raises: nothing runs unconfined. Takes
    what it needs as arguments: the zygote's globals are gone by then."""
    if box.get("base") != base[0]:
        raise OSError(0, f"sandbox: this runtime is {base[0]}, the call needs {box.get('base')}")
    if not base[1] and libc.prctl(38, 1, 0, 0, 0) < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"sandbox: no_new_privs: {os.strerror(err)}")
    wanted = box.get("ruleset")
    if wanted is not None:
        # The zygote's ruleset must be the one the call's own setup names.
        if ruleset is None or ruleset[0] != wanted:
            raise OSError(0, f"sandbox: ruleset {wanted} was not handed over")
        # None: born inside it (a confined runtime's child); else restricted here.
        if ruleset[1] is not None and syscall(446, ruleset[1], 0) < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"sandbox: landlock_restrict_self: {os.strerror(err)}")


MAX_FDS = 4
CACHE = 256

# The bounding set goes once, here: nothing a child executes can gain a capability back
# (where the zygote may drop it; it never executes anything itself).
for _cap in range(64):
    if libc.prctl(PR_CAPBSET_DROP, _cap, 0, 0, 0) != 0:
        break

sock = socket.socket(fileno=os.dup(0))
IDLE = (float(sys.argv[1]) or None) if len(sys.argv) > 1 else None  # 0: never
# Its base (the gateway's `Base`): the sandbox's seccomp filter for its children (hex),
# loaded here once so that every child is born under it (with no_new_privs, which loading
# one needs), and its name, which says whether it drops its capabilities for good too (a
# runtime for confined children, as root). Children then only restrict themselves to their
# Landlock ruleset.
BASE = sys.argv[3] if len(sys.argv) > 3 else "open"
NO_NEW_PRIVS = False
if len(sys.argv) > 2 and sys.argv[2]:
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    NO_NEW_PRIVS = True
    _prog = bytes.fromhex(sys.argv[2])
    _buf = ctypes.create_string_buffer(_prog, len(_prog))
    if libc.prctl(22, 2, ctypes.byref(SockFprog(len(_prog) // 8, ctypes.cast(_buf, ctypes.c_void_p))), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "loading the seccomp filter failed")
    del _prog, _buf
if BASE.endswith("-nocaps"):
    # SECBIT_NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, each locked; KEEP_CAPS locked
    # off; no ambient capabilities; none at all. (The bounding set went above.)
    if libc.prctl(28, 0xEF, 0, 0, 0) < 0 or libc.prctl(47, 4, 0, 0, 0) < 0:
        raise OSError(ctypes.get_errno(), "dropping capabilities failed")
    if libc.capset(ctypes.byref(CapHeader(0x20080522, 0)), (CapData * 2)()) < 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    if not NO_NEW_PRIVS:
        if libc.prctl(38, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        NO_NEW_PRIVS = True
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.close(null)

# Modules worth having warm: the standard ones scripts use, and the runtime's HTTP clients.
for name in ("json", "re", "datetime", "pathlib", "urllib.parse", "requests", "httpx"):
    try:
        __import__(name)
    except Exception:
        pass

def threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1

compiled = {}

def code_of(path):
    """The script's code object; raises when it cannot be read or compiled (the call then
    runs cold, where the interpreter reports it exactly as it always does)."""
    code = compiled.get(path)
    if code is None:
        with open(path, "rb") as f:
            source = f.read()
        try:
            code = compile(source, path, "exec")
        except BaseException:
            code = False
        if len(compiled) >= CACHE:
            compiled.clear()
        compiled[path] = code
    if code is False:
        raise SyntaxError("the script does not compile")
    return code

RLIMITS = {"as": resource.RLIMIT_AS, "fsize": resource.RLIMIT_FSIZE, "cpu": resource.RLIMIT_CPU}

def detach():
    """In a forked child, before anything of a call reaches it: gives up CAP_SYS_PTRACE for
    good and drops the zygote's globals (its socket, its rulesets, the cache of other tools'
    compiled scripts), so that a script walking up its frames finds nothing of the zygote's.
    Returns what a child needs of them, as locals: (file, builtins, rlimits, confine, base,
    libc, cache) — the cache of compiled scripts for a spare, which learns its script later;
    emptied once it has. A spare does this as soon as it is forked, ahead of its call."""
    import os, traceback
    try:
        drop_ptrace()
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    kit = (__file__, __builtins__, RLIMITS, confine, (BASE, NO_NEW_PRIVS), libc, compiled)
    zygote = globals()
    zygote.clear()
    # Imports from C (the traceback printer's, among others) look for this one.
    zygote["__builtins__"] = kit[1]
    return kit


def child(fds, code, ruleset, kit=None):
    """Runs in the forked child (`kit`: what [`detach`] kept, when a spare did it ahead);
    never returns."""
    # What this function needs, as locals: the zygote's globals go before the call's setup
    # is read, and with them every reference to its cache and socket.
    import atexit, gc, json, os, resource, sys, time, traceback
    status = 1
    me, builtins, rlimit_of, confine_self, base, libc, cache = kit or detach()
    cache.clear()
    del kit, cache
    try:
        # Dumpable again, as a cold process is (its own /proc files readable by its user):
        # PR_SET_DUMPABLE, only now that a call is its own.
        libc.prctl(4, 1, 0, 0, 0)
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    try:
        chunks = []
        while True:
            chunk = os.read(fds[3], 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(fds[3])
        req = json.loads(b"".join(chunks))
        del chunks
        os.setpgid(0, 0)
        for key, value in req.get("rlimits", {}).items():
            resource.setrlimit(rlimit_of[key], (value, value))
        nice = req.get("nice", 0)
        if nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        # Confined while the zygote's ruleset is still open; it goes with every other
        # inherited descriptor right after.
        if req.get("sandbox"):
            confine_self(req["sandbox"], ruleset, base)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        # What a cold start does to a C locale (PEP 538): coerce it to UTF-8, and say so.
        env = req["env"]
        ctype = env.get("LC_CTYPE") or env.get("LANG") or "C"
        if "LC_ALL" not in env and ctype in ("C", "POSIX"):
            os.environ["LC_CTYPE"] = "C.UTF-8"
        if "TZ" in req["env"]:
            time.tzset()

        gc.enable()
        atexit._clear()
        # Fresh stdio objects on the call's pipes, buffered as a cold start would be.
        sys.stdin = sys.__stdin__ = open(0, "r", closefd=False, encoding="utf-8", errors="strict")
        sys.stdout = sys.__stdout__ = open(1, "w", closefd=False, encoding="utf-8", errors="strict")
        sys.stderr = sys.__stderr__ = open(2, "w", closefd=False, encoding="utf-8", errors="backslashreplace", buffering=1)
        script = req["script"]
        sys.argv = [script]
        main = type(sys)("__main__")
        main.__file__ = script
        main.__builtins__ = builtins
        sys.modules["__main__"] = main
        try:
            exec(code, main.__dict__)
            status = 0
        except SystemExit as e:
            if e.code is None:
                status = 0
            elif isinstance(e.code, int):
                status = e.code & 0xFF
            else:
                print(e.code, file=sys.stderr)
                status = 1
        except BaseException as e:
            # As a cold interpreter reports an uncaught exception: through sys.excepthook
            # (the script may have set its own), from the script's frame on — this file's
            # frame would tell the script it runs warm.
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == me:
                tb = tb.tb_next
            try:
                sys.excepthook(type(e), e.with_traceback(tb), tb)
            except BaseException:
                pass
            status = 1
        try:
            threading = sys.modules.get("threading")
            if threading is not None:
                threading._shutdown()
            atexit._run_exitfuncs()
        except BaseException:
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
    except BaseException:
        try:
            traceback.print_exc()
        except BaseException:
            pass
        status = 1
    os._exit(status)

def send(msg):
    sock.send(json.dumps(msg).encode())


def reap():
    """Waits for confined runtimes that ended (their socket closed, or idle too long)."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except (ChildProcessError, InterruptedError):
            return


def start_confined(req, fds):
    """Forks a confined runtime for one confinement: a copy of this zygote that restricts
    itself to the confinement's Landlock ruleset once and then serves that confinement's
    calls on the socket the gateway handed over — so that their children are born inside the
    domain instead of each making one (what a sandboxed warm call cost). It never runs user
    code either, and holds nothing of any call."""
    global sock, SUB, SPARE
    ruleset = ruleset_for(req)
    if ruleset is None or len(fds) != 1:
        raise ValueError("a confined runtime needs a ruleset and one socket")
    pid = os.fork()
    if pid == 0:
        try:
            sock.close()
            if SPARE is not None:
                # The zygote's spare is not this runtime's: never handed a call from here.
                SPARE[1].close()
                SPARE = None
            if SYSCALL(446, ruleset[1], 0) < 0:
                os._exit(1)
            for fd in RULESETS.values():
                os.close(fd)
            RULESETS.clear()
            SUB = ruleset[0]
            sock = socket.socket(fileno=fds[0])
            sock.settimeout(IDLE)
            send({"ready": True})
            serve()
        finally:
            os._exit(0)
    os.close(fds[0])
    return pid


SUB = None  # the confinement this process serves, when it is a confined runtime
SPARE = None  # (pid, socket) of the child forked ahead of the next call


def descriptors(ancdata):
    fds = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(array.array("i", payload[: len(payload) - len(payload) % 4]))
    return fds


def fork_spare():
    """A child forked ahead of the next call (see the top of this file); its pid, or None
    when none could be forked. An earlier spare still alive is kept."""
    global SPARE
    if SPARE is not None:
        try:
            if os.waitpid(SPARE[0], os.WNOHANG)[0] == 0:
                return SPARE[0]
        except ChildProcessError:
            pass
        SPARE[1].close()
        SPARE = None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        return None
    if pid == 0:
        try:
            sock.close()
            ours.close()
            spare_wait(theirs)
        finally:
            os._exit(1)
    theirs.close()
    SPARE = (pid, ours)
    return pid


def spare_wait(conn):
    """In the spare: lets go of the zygote's globals at once ([`detach`]), then waits for its
    call — the script's name, whether it has a ruleset, and the four pipes then the ruleset's
    descriptor — and becomes that call's child. Exits when the runtime goes away first."""
    import array, json, os, socket
    sub, most, become = SUB, MAX_FDS + 1, child
    kit = detach()
    try:
        data, ancdata, _flags, _addr = conn.recvmsg(1 << 16, socket.CMSG_SPACE(most * 4))
    except BaseException:
        os._exit(1)
    if not data:
        os._exit(0)
    conn.close()
    fds = []
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(array.array("i", payload[: len(payload) - len(payload) % 4]))
    req = json.loads(data)
    number = req.get("ruleset")
    if number is None:
        ruleset = None
    elif sub is not None:
        ruleset = (sub, None)  # born inside the domain, as its runtime was
    else:
        ruleset = (number, fds[4])
    script = req["script"]
    # Compiled by the runtime before it was forked, unless the script is new since.
    code = kit[6].get(script)
    if not code:
        with open(script, "rb") as f:
            code = compile(f.read(), script, "exec")
    become(fds[:4], code, ruleset, kit)


def hand_to_spare(script, fds, ruleset):
    """Gives the call to the spare: its pid, or None when there is none (or it is gone), and
    the call is forked for as before."""
    global SPARE
    if SPARE is None:
        return None
    pid, conn = SPARE
    SPARE = None
    extra = [ruleset[1]] if ruleset is not None and ruleset[1] is not None else []
    header = json.dumps({"script": script, "ruleset": None if ruleset is None else ruleset[0]})
    try:
        conn.sendmsg(
            [header.encode()],
            [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", list(fds) + extra))],
        )
    except OSError:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return None
    finally:
        conn.close()
    return pid


def serve():
    """Answers calls until the gateway closes the socket or none comes for IDLE seconds."""
    while True:
        try:
            data, ancdata, _flags, _addr = sock.recvmsg(1 << 20, socket.CMSG_SPACE(MAX_FDS * 4))
        except InterruptedError:
            continue
        except ConnectionResetError:
            # The gateway went away with an answer of ours unread (a spare's, say): the
            # same end as a closed socket.
            return
        except socket.timeout:
            # Idle too long. A call sent from now on finds the socket closed and is retried
            # by the gateway with another zygote; nothing of it ran here.
            return
        if not data:
            return
        fds = descriptors(ancdata)
        try:
            req = json.loads(data)
            if req.get("ping"):
                continue  # the gateway's sign of life while its confined runtimes serve
            if req.get("spare"):
                for fd in fds:
                    os.close(fd)
                send({"spare": fork_spare()})
                continue
            if req.get("confine") is not None:
                if SUB is not None:
                    raise ValueError("a confined runtime starts no other")
                send({"confined": start_confined(req, fds)})
                reap()
                continue
            code = code_of(req["script"])
            if SUB is None:
                ruleset = ruleset_for(req)
            elif req.get("ruleset") == SUB:
                ruleset = (SUB, None)  # its children are born inside the domain
            else:
                raise ValueError(f"this runtime serves ruleset {SUB}, not {req.get('ruleset')}")
            if len(fds) != 4:
                raise ValueError(f"expected 4 descriptors, got {len(fds)}")
        except BaseException as e:
            # Nothing ran: the gateway runs this call cold instead.
            for fd in fds:
                os.close(fd)
            send({"cold": "".join(traceback.format_exception_only(type(e), e)).strip()})
            continue
        if threads() != 1:
            for fd in fds:
                os.close(fd)
            send({"cold": "the warm runtime has more than one thread; it must restart"})
            return
        sys.stdout.flush()
        sys.stderr.flush()
        pid = hand_to_spare(req["script"], fds, ruleset)
        if pid is None:
            try:
                pid = os.fork()
            except OSError as e:
                # (Over the call's process limit, say.) Nothing ran: the call runs cold,
                # where the same limit reports itself as it always does.
                for fd in fds:
                    os.close(fd)
                send({"cold": f"fork: {e}"})
                continue
            if pid == 0:
                sock.close()
                child(fds, code, ruleset)
        for fd in fds:
            os.close(fd)
        send({"pid": pid})
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                status = -1
                break
        send({"status": status})
        if SUB is None:
            reap()


gc.collect()
gc.disable()
gc.freeze()
# The folders imports come from: the gateway replaces this zygote when one of them changes.
paths = [p for p in sys.path if p and os.path.isdir(p)]
send({"ready": True, "threads": threads(), "pid": os.getpid(), "paths": paths})
sock.settimeout(IDLE)
serve()
