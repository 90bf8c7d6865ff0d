"""Confinement backends for the shell tool: detection, the bwrap command line, and the Landlock shim.

This module imports only the standard library on purpose: the Landlock backend runs it as a script
(`python -I -S _isolation.py SPEC`), a tiny launcher that applies rlimits, a PID namespace (or a
subreaper), Landlock and seccomp to itself and then execs the command. Doing that in a fresh interpreter
rather than in `preexec_fn` keeps it safe in a threaded host (CPython warns `preexec_fn` can deadlock).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import resource
import signal
import stat
import struct
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # typing costs the launcher milliseconds at start
    from typing import Any

__all__ = ["describe_isolation", "detect", "bwrap_argv", "landlock_argv", "seccomp_bpf", "SYSTEM_RO"]

# Read-only system roots every backend exposes; the workspace is the only writable host path.
SYSTEM_RO = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# Files under /etc that hold secrets even though /etc as a whole is needed (resolver, passwd, ssl).
ETC_SECRETS = ("shadow", "gshadow", "shadow-", "gshadow-", "sudoers", "sudoers.d", "ssh", "ssl/private")
DEV_RW = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
RLIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "address_space": resource.RLIMIT_AS,
    "file_size": resource.RLIMIT_FSIZE,
    "open_files": resource.RLIMIT_NOFILE,
    "processes": resource.RLIMIT_NPROC,
    "core": resource.RLIMIT_CORE,
}
_PRLIMIT_FLAGS = {"cpu": "--cpu", "address_space": "--as", "file_size": "--fsize", "open_files": "--nofile",
                  "processes": "--nproc", "core": "--core"}

# --- seccomp through libseccomp (ctypes; libseccomp2 ships with every Debian/Ubuntu) -----------------------

_SCMP_ACT_ALLOW = 0x7FFF0000
_EPERM, _ENOSYS = 1, 38
_DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "unshare", "setns", "swapon",
    "swapoff", "reboot", "acct", "quotactl", "open_by_handle_at", "name_to_handle_at", "syslog",
)
_CLONE_NS_FLAGS = (0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x02000000)
_AF_UNIX, _AF_INET, _AF_NETLINK, _AF_INET6, _AF_MAX = 1, 2, 16, 10, 46


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


@functools.cache
def _libseccomp() -> Any:
    # The soname first: find_library() spawns ldconfig/gcc, which costs the launcher tens of ms.
    for name in ("libseccomp.so.2", None):
        if name is None:
            import ctypes.util as ctypes_util

            name = ctypes_util.find_library("seccomp")
            if name is None:
                return None
        try:
            lib = ctypes.CDLL(name, use_errno=True)
            break
        except OSError:
            continue
    else:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    for fn in (lib.seccomp_load, lib.seccomp_release):
        fn.argtypes = [ctypes.c_void_p]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def _seccomp_filter(network: bool) -> int:
    """Build the filter context: deny escape-prone syscalls and sockets outside the allowed families."""
    lib = _libseccomp()
    if lib is None:
        raise OSError("libseccomp is not available (install the libseccomp2 package)")
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)

    def add(name: str, errno_: int, cmps: Sequence[tuple[int, int, int, int]] = ()) -> None:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:  # not on this architecture
            return
        arr = (_ArgCmp * max(1, len(cmps)))(*[_ArgCmp(*c) for c in cmps])
        rc = lib.seccomp_rule_add_array(ctx, 0x00050000 | errno_, nr, len(cmps), arr)
        if rc < 0:
            raise OSError(-rc, f"seccomp rule for {name} failed")

    for name in _DENIED_SYSCALLS:
        add(name, _EPERM)
    add("clone3", _ENOSYS)  # its flags live in memory seccomp cannot read; libc falls back to clone
    for flag in _CLONE_NS_FLAGS:
        add("clone", _EPERM, [(0, 7, flag, flag)])  # SCMP_CMP_MASKED_EQ: no new namespaces
    allowed = {_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK} if network else {_AF_UNIX}
    for family in range(_AF_MAX):
        if family not in allowed:
            add("socket", _EPERM, [(0, 4, family, 0)])  # SCMP_CMP_EQ
    return int(ctx)


def seccomp_bpf(network: bool) -> bytes:
    """The compiled filter as raw BPF, for `bwrap --seccomp FD`."""
    return _seccomp_bpf_cached(network)


@functools.cache
def _seccomp_bpf_cached(network: bool) -> bytes:
    lib = _libseccomp()
    ctx = _seccomp_filter(network)
    r, w = os.pipe()
    try:
        rc = lib.seccomp_export_bpf(ctx, w)
        os.close(w)
        if rc < 0:
            raise OSError(-rc, "seccomp_export_bpf failed")
        chunks = []
        while chunk := os.read(r, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(r)
        lib.seccomp_release(ctx)


def _seccomp_load(network: bool) -> None:
    lib = _libseccomp()
    ctx = _seccomp_filter(network)
    rc = lib.seccomp_load(ctx)
    lib.seccomp_release(ctx)
    if rc < 0:
        raise OSError(-rc, "seccomp_load failed")


# --- Landlock (raw syscalls; numbers are shared by every architecture) ------------------------------------

_LL_CREATE, _LL_ADD, _LL_RESTRICT = 444, 445, 446
_FS_FILE = 1 | 2 | 4  # execute, write_file, read_file
_FS_READ = 1 | 4 | 8  # execute, read_file, read_dir


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(_LL_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(abi), 0)


def _fs_all(abi: int) -> int:
    bits = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        bits |= 1 << 13  # refer
    if abi >= 3:
        bits |= 1 << 14  # truncate
    if abi >= 5:
        bits |= 1 << 15  # ioctl_dev
    return bits


def _landlock_restrict(ro: Sequence[str], rw: Sequence[str], list_only: Sequence[str], network: bool) -> None:
    """Confine this process (and its children): read `ro`, read/write `rw`, list `list_only`, no TCP."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available on this kernel")
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    fs_all = _fs_all(abi)
    net = 0 if network or abi < 4 else 3  # bind_tcp | connect_tcp, with no port allowed
    scoped = 3 if abi >= 6 else 0  # abstract unix sockets and signals stay inside the sandbox
    attr = struct.pack("QQQ", fs_all, net, scoped)[: 8 if abi < 4 else 16 if abi < 6 else 24]
    fd = libc.syscall(ctypes.c_long(_LL_CREATE), attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in ro:
            _landlock_add(libc, fd, path, _FS_READ, fs_all)
        for path in list_only:
            _landlock_add(libc, fd, path, 8, fs_all)  # read_dir
        for path in rw:
            _landlock_add(libc, fd, path, fs_all, fs_all, follow=False)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, required by restrict_self
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        if libc.syscall(ctypes.c_long(_LL_RESTRICT), ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(fd)


def _landlock_add(libc: Any, ruleset: int, path: str, access: int, fs_all: int, *, follow: bool = True) -> None:
    try:
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    except OSError:
        return  # a missing optional root (e.g. /lib32) simply is not granted
    try:
        mode = os.fstat(pfd).st_mode
        if stat.S_ISLNK(mode):
            return  # a writable grant never follows a link: it could point anywhere on the host
        if not stat.S_ISDIR(mode):
            access &= _FS_FILE | (1 << 14) | (1 << 15)  # only file rights are valid on a file
        rule = struct.pack("=Qi", access & fs_all, pfd)
        if libc.syscall(ctypes.c_long(_LL_ADD), ctypes.c_int(ruleset), ctypes.c_int(1), rule,
                        ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(pfd)


def _etc_entries() -> list[str]:
    """Every entry of /etc except the secrets: Landlock is an allow-list, so grant children one by one."""
    secret_tops = {s.split("/")[0] for s in ETC_SECRETS if "/" not in s}
    out = []
    for name in sorted(os.listdir("/etc")):
        if name in secret_tops:
            continue
        if name == "ssl":
            out += [f"/etc/ssl/{n}" for n in os.listdir("/etc/ssl") if n != "private"]
        else:
            out.append(f"/etc/{name}")
    return out


# --- detection --------------------------------------------------------------------------------------------


@functools.cache
def detect() -> dict[str, Any]:
    """Probe what actually works here (by running it, not by reading versions); cached per process."""
    import shutil  # not at module level: the launcher imports this file and must start fast
    import subprocess
    bwrap = shutil.which("bwrap")
    bwrap_ok, bwrap_why = False, "bwrap not found (install the bubblewrap package)"
    if bwrap:
        probe = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                 "--ro-bind", "/", "/", "--", "/bin/true"]
        try:
            run = subprocess.run(probe, capture_output=True, timeout=10, check=False)
            bwrap_ok = run.returncode == 0
            bwrap_why = "ok" if bwrap_ok else run.stderr.decode(errors="replace").strip()[:300]
        except (OSError, subprocess.TimeoutExpired) as exc:
            bwrap_why = str(exc)
    abi = landlock_abi()
    seccomp_ok = _libseccomp() is not None
    try:
        seccomp_bpf(False) if seccomp_ok else None
    except OSError:
        seccomp_ok = False
    return {
        "bwrap": {"available": bwrap_ok, "path": bwrap, "detail": bwrap_why},
        "landlock": {"available": abi >= 1, "abi": abi, "network_rules": abi >= 4, "signal_scope": abi >= 6},
        "seccomp": {"available": seccomp_ok},
        "pid_namespace": os.geteuid() == 0 or bwrap_ok,
        "prlimit": shutil.which("prlimit"),
        "processes_limit_enforced": os.geteuid() != 0,  # RLIMIT_NPROC is ignored for root
    }


def best_backend() -> str:
    """The strongest backend available: bwrap (with seccomp) > Landlock + seccomp > none."""
    caps = detect()
    if caps["bwrap"]["available"] and caps["seccomp"]["available"]:
        return "bwrap"
    if caps["landlock"]["available"] and caps["seccomp"]["available"]:
        return "landlock"
    return "none"


def describe_isolation() -> dict[str, Any]:
    """What confinement the shell tool gets on this machine, for `toolhall doctor` and CI logs.

    Returns:
        A JSON-safe dict: the backend `isolation="auto"` picks, and each primitive's probe result.

    Example:
        ```python
        describe_isolation()["backend"]  # "bwrap", "landlock" or "none"
        ```
    """
    caps = detect()
    backend = best_backend()
    kill = {"bwrap": "pid-namespace", "landlock": "pid-namespace" if caps["pid_namespace"] else "subreaper",
            "none": "process-group"}[backend]
    return {"backend": backend, "tree_kill": kill, **json.loads(json.dumps(caps))}


# --- command lines --------------------------------------------------------------------------------------


def _system_binds() -> Iterator[str]:
    for path in SYSTEM_RO:
        if os.path.islink(path):  # merged /usr: recreate the symlink rather than bind a second copy
            yield from ("--symlink", os.readlink(path), path)
        elif os.path.isdir(path):
            yield from ("--ro-bind", path, path)
    for secret in ETC_SECRETS:
        target = f"/etc/{secret}"
        if os.path.isdir(target) and not os.path.islink(target):
            yield from ("--tmpfs", target, "--remount-ro", target)
        elif os.path.exists(target):
            yield from ("--ro-bind", "/dev/null", target)


# Files in the workspace that configure the host or the agent: a command may read them, never rewrite
# them (a planted .git/hooks/pre-commit would run on the host at the next commit). Only existing ones can
# be covered by a bind mount; creating missing ones is left to the file tools' deny rules.
PROTECTED = (".toolhall", ".git/hooks", ".git/config")


def _protected_binds(workspace: str) -> Iterator[str]:
    for rel in PROTECTED:
        path = os.path.join(workspace, rel)
        if os.path.exists(path) and not os.path.islink(path):
            yield from ("--ro-bind", path, path)


def bwrap_argv(argv: Sequence[str], *, workspace: str, cwd: str, network: bool, seccomp_fd: int) -> list[str]:
    """The bubblewrap command: system dirs read-only, the workspace writable, private /tmp, PID ns."""
    bwrap = detect()["bwrap"]["path"]
    out = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
           "--disable-userns", "--cap-drop", "ALL"]
    if network:
        out += ["--share-net", "--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"]
    # The sandbox's /tmp is a fresh tmpfs inside its own mount namespace, not the host /tmp.
    out += [*_system_binds(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",  # noqa: S108
            "--bind", workspace, workspace, *_protected_binds(workspace),
            "--chdir", cwd, "--seccomp", str(seccomp_fd), "--", *argv]
    return out


def prlimit_argv(limits: Mapping[str, int]) -> list[str]:
    """`prlimit` as an argv prefix: thread-safe, unlike `preexec_fn`, and the limits survive exec."""
    if not limits:
        return []
    tool = detect()["prlimit"] or "prlimit"  # cached probe result
    return [tool, *(f"{_PRLIMIT_FLAGS[k]}={v}" for k, v in sorted(limits.items())), "--"]


def landlock_argv(argv: Sequence[str], *, workspace: str, tmp: str, network: bool, limits: Mapping[str, int],
                  pidns: bool = True, workspace_grants: tuple[Sequence[str], Sequence[str]] | None = None) -> list[str]:
    """The Landlock launcher command line (a fresh interpreter running this file as a script).

    `workspace_grants` is `(read_only, writable)` paths standing in for the whole workspace being
    writable (see `_protect.landlock_grants`); writable grants never follow a symlink.
    """
    ws_ro, ws_rw = workspace_grants if workspace_grants is not None else ((), (workspace,))
    spec = {"argv": list(argv), "ro": [p for p in SYSTEM_RO if p != "/etc"] + _etc_entries() + ["/proc", *ws_ro],
            "rw": [*ws_rw, tmp, *DEV_RW], "network": network, "limits": dict(limits), "pidns": pidns}
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), json.dumps(spec)]


# --- the launcher (runs as `__main__` in the child) ------------------------------------------------------


def _apply_limits(limits: Mapping[str, int]) -> None:
    for key, value in limits.items():
        resource.setrlimit(RLIMITS[key], (value, value))


def _unshare_pid() -> bool:
    libc = _libc()
    if libc.unshare(0x20000000) == 0:  # CLONE_NEWPID: root (CAP_SYS_ADMIN) only
        return True
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(0x20000000 | 0x10000000) != 0:  # with a user namespace, where unprivileged ns work
        return False
    with contextlib.suppress(OSError):
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
    return True


def _exec_confined(spec: Mapping[str, Any]) -> None:
    """In the command's own process: confine, then exec. Never returns."""
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these, and SIG_IGN survives exec
        signal.signal(sig, signal.SIG_DFL)
    try:
        _landlock_restrict(spec["ro"], spec["rw"], ["/etc"], spec["network"])
        _seccomp_load(spec["network"])
        os.execvp(spec["argv"][0], spec["argv"])  # noqa: S606 - argv exec, never a shell
    except OSError as exc:
        os.write(2, f"toolhall: cannot run {spec['argv'][0]!r}: {exc}\n".encode())
        os._exit(126)


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _supervise(spec: Mapping[str, Any], *, reap_all: bool) -> int:
    """Fork the command, reap everything that lands on us, return the command's wait status."""
    pid = os.fork()
    if pid == 0:
        _exec_confined(spec)
    status = 0
    try:
        while True:
            got, st = os.waitpid(-1, 0)
            if got == pid:
                status = st
                break
    except _Stop:
        status = signal.SIGKILL
    if reap_all:  # no PID namespace: kill what is left ourselves (orphans were reparented to us)
        for _ in range(100):
            left = _descendants(os.getpid())
            if not left:
                break
            for p in left:
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
    return status


class _Stop(Exception):
    pass


def _on_term(signum: int, frame: object) -> None:
    raise _Stop


def _launcher(spec: Mapping[str, Any]) -> None:
    _apply_limits(spec["limits"])
    signal.signal(signal.SIGTERM, _on_term)
    if spec["pidns"] and _unshare_pid():
        r, w = os.pipe()
        init = os.fork()
        if init == 0:  # PID 1 of the new namespace: when it exits, the kernel kills every process in it
            os.close(r)
            libc = _libc()
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the launcher
            status = _supervise(spec, reap_all=False)
            os.write(w, struct.pack("i", status))
            os._exit(0)
        os.close(w)
        try:
            os.waitpid(init, 0)
            raw = os.read(r, 4)
            status = struct.unpack("i", raw)[0] if len(raw) == 4 else signal.SIGKILL
        except _Stop:
            os.kill(init, signal.SIGKILL)
            status = signal.SIGKILL
    else:
        _libc().prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: setsid orphans come back to us, not to init
        status = _supervise(spec, reap_all=True)
    if os.WIFSIGNALED(status):
        with contextlib.suppress(OSError, ValueError):  # SIGKILL/SIGSTOP cannot be reset (nor caught)
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 125)


if __name__ == "__main__":
    _launcher(json.loads(sys.argv[1]))
