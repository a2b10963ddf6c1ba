"""The escape corpus (SPEC §13): each attempt tries to reach something a sandboxed tool must
never reach, and reports whether it got there. Run as `python3 escape.py NAME` (a command
tool, a session), from a script tool's stdin ({"name": NAME}), or inside an MCP server's tool
(`attempt(NAME)`). The places come from paths.json beside this file, written by the test.

An attempt "escapes" only when it did the forbidden thing (read the bytes, wrote the file,
delivered the signal, connected); any refusal is reported with its error."""
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def places():
    with open(os.path.join(HERE, "paths.json")) as f:
        return json.load(f)


def read(path, want=None):
    with open(path, "rb") as f:
        data = f.read(4096)
    return want is None or want.encode() in data


def connect(port, host="127.0.0.1"):
    s = socket.create_connection((host, port), timeout=3)
    s.close()
    return True


def libc():
    return ctypes.CDLL(None, use_errno=True)


def errno_check(ret):
    if ret < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return ret


def attempts(p):
    gw = p["gateway_pid"]
    return {
        "read_registry": lambda: read(p["registry"]),
        "read_registry_wal": lambda: read(p["registry"] + "-wal") or True,
        "read_key": lambda: read(p["key"]),
        "read_tokens": lambda: read(p["tokens"], p["token_secret"]),
        "read_transcript": lambda: read(p["transcript"]),
        "list_data": lambda: len(os.listdir(p["data"])) >= 0,
        "write_data": lambda: open(os.path.join(p["data"], "planted"), "w").write("x") >= 0,
        "read_ledger": lambda: len(os.listdir(p["ledger"])) >= 0,
        "other_call_folder": lambda: any(
            read(os.path.join(root, d, "secret.txt"), "HOLDER")
            for root in [os.path.join(p["tmp"], r) for r in os.listdir(p["tmp"]) if r.startswith("toolsmith-calls-")]
            for d in os.listdir(root)
            if os.path.exists(os.path.join(root, d, "secret.txt"))
        ),
        "proc_environ": lambda: read(f"/proc/{gw}/environ", p["gateway_marker"]),
        "proc_fd": lambda: proc_fds(gw),
        "proc_mem": lambda: open(f"/proc/{gw}/mem", "rb").close() is None,
        "proc_root": lambda: read(f"/proc/{gw}/root" + p["registry"]),
        "proc_self_root": lambda: read("/proc/self/root" + p["registry"]),
        "write_bashrc": lambda: open(os.path.join(p["home"], ".bashrc"), "a").write("# escaped\n") >= 0,
        "write_tmp": lambda: open(p["tmp_probe"], "w").write("x") >= 0,
        "symlink_in_workspace": lambda: read(os.path.join(p["workspace"], "link-to-registry")),
        "make_hardlink": lambda: os.link(p["key"], os.path.join(p["workspace"], "hl-" + str(os.getpid()))) is None,
        "dotdot_after_cd": lambda: (os.chdir(p["workspace"]), read(os.path.relpath(p["registry"], p["workspace"])))[1],
        "setuid_binary": lambda: setuid(p),
        "signal_gateway": lambda: os.kill(gw, signal.SIGCONT) is None,
        "signal_other_call": lambda: os.kill(int(open(os.path.join(p["workspace"], "holder.pid")).read()), signal.SIGCONT) is None,
        "ptrace_gateway": lambda: ptrace(gw),
        "io_uring": lambda: io_uring(),
        "abstract_socket": lambda: abstract(p["abstract"]),
        "net_connect_loopback": lambda: connect(p["port"]),
        "net_udp": lambda: udp(),
        "net_resolve": lambda: len(socket.getaddrinfo("example.com", 80)) > 0,
        "net_other_port": lambda: connect(p["other_port"]),
        "net_allowed_port": lambda: connect(p["port"]),
        "write_workspace": lambda: open(os.path.join(p["workspace"], "written-" + str(os.getpid())), "w").write("x") >= 0,
        "unix_path_socket": lambda: unix_path(p["unix_socket"]),
        "keyring": lambda: keyring(),
        "user_namespace": lambda: errno_check(libc().unshare(0x10000000)) == 0,  # CLONE_NEWUSER
        "clone_namespace": lambda: clone_newuser(),
        "clone3_namespace": lambda: clone3_newuser(),
        "gateway_cmdline_token": lambda: p["cli_token"] in open(f"/proc/{gw}/cmdline", "rb").read().decode(errors="replace"),
        "gateway_api_admin": lambda: gateway_admin(p, gw),
        "read_local_token": lambda: read(os.path.join(p["data"], "local-admin.token")),
    }


def unix_path(path):
    """A named Unix socket in a folder the sandbox cannot even list (docker.sock, PostgreSQL's
    socket and D-Bus are such sockets on a real host)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(path)
    s.close()
    return True


def keyring():
    """A key planted in the user's keyring, which every process of this user shares."""
    c = libc()
    c.syscall.restype = ctypes.c_long
    ret = c.syscall(248, b"user", b"toolsmith-escape", b"planted", 7, -4)  # add_key, KEY_SPEC_USER_KEYRING
    errno_check(ret)
    return True


def clone_newuser():
    """clone(CLONE_NEWUSER | SIGCHLD): a child in a user namespace of its own, with every
    capability there."""
    c = libc()
    c.syscall.restype = ctypes.c_long
    pid = c.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    errno_check(pid)
    os.waitpid(pid, 0)
    return True


def clone3_newuser():
    """clone3 with CLONE_NEWUSER (its flags in memory, out of a filter's sight)."""
    c = libc()
    c.syscall.restype = ctypes.c_long
    args = (ctypes.c_uint64 * 11)(0x10000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0)
    pid = c.syscall(435, ctypes.byref(args), ctypes.sizeof(args))
    if pid == 0:
        os._exit(0)
    errno_check(pid)
    os.waitpid(pid, 0)
    return True


def gateway_admin(p, gw):
    """The gateway's own REST API, as an admin: with no token, then with every secret-looking
    word of its command line. "Escaped" when it accepted a new tool with `sandbox: none`."""
    import urllib.error
    import urllib.request
    words = [None]
    try:
        words += [w.split("=")[-1] for w in open(f"/proc/{gw}/cmdline", "rb").read().decode(errors="replace").split("\0") if "=" in w]
    except OSError:
        pass
    body = json.dumps({"name": f"esc_{os.getpid()}", "description": "d", "sandbox": "none", "command": ["true"]}).encode()
    statuses = []
    for word in words:
        headers = {"content-type": "application/json"}
        if word:
            headers["authorization"] = f"Bearer {word}"
        req = urllib.request.Request(f"http://127.0.0.1:{p['port']}/v1/tools", data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                if r.status == 201:
                    return True
                statuses.append(r.status)
        except urllib.error.HTTPError as e:
            statuses.append(e.code)
    raise PermissionError(f"refused: {statuses}")


def proc_fds(gw):
    """Reaches the gateway's open files through /proc/PID/fd (its registry, its sockets):
    an fd's link read, or the file opened through it."""
    for fd in os.listdir(f"/proc/{gw}/fd"):
        for reach in (os.readlink, lambda p: open(p, "rb").close()):
            try:
                reach(f"/proc/{gw}/fd/{fd}")
                return True
            except OSError:
                pass
    return False


def setuid(p):
    """A setuid-root copy of `cat` in the workspace, on a file only root may read: without
    no_new_privs an unprivileged tool would read it. As root, capabilities must be gone."""
    if os.geteuid() == 0:
        status = open("/proc/self/status").read()
        caps = [l for l in status.splitlines() if l.startswith(("CapEff", "CapPrm", "CapBnd"))]
        nnp = [l for l in status.splitlines() if l.startswith("NoNewPrivs")]
        return any(int(l.split()[1], 16) != 0 for l in caps) or nnp != ["NoNewPrivs:\t1"]
    out = subprocess.run([os.path.join(p["workspace"], "suidcat"), p["root_only"]], capture_output=True)
    return b"ROOTONLY" in out.stdout


def ptrace(pid):
    c = libc()
    ret = c.ptrace(16, pid, 0, 0)  # PTRACE_ATTACH
    if ret == 0:
        c.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
        return True
    errno_check(-1)


def io_uring():
    params = ctypes.create_string_buffer(120)
    fd = errno_check(libc().syscall(425, 1, params))  # io_uring_setup
    os.close(fd)
    return True


def abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect("\0" + name)
    s.close()
    return True


def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"x", ("127.0.0.1", 9))
    s.close()
    return True


def attempt(name):
    p = places()
    try:
        escaped = bool(attempts(p)[name]())
        detail = "did it"
    except Exception as e:  # a refusal
        escaped, detail = False, f"{type(e).__name__}: {e}"
    return {"attempt": name, "escaped": escaped, "detail": detail}


def main_stdin():
    args = json.load(sys.stdin)
    print(json.dumps(attempt(args["name"])))


if __name__ == "__main__":
    print(json.dumps(attempt(sys.argv[1])))
