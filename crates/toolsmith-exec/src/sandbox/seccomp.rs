//! The seccomp filters: what Landlock cannot say. Every sandboxed process is denied (EPERM)
//! `ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd`, `io_uring_*`, `bpf`,
//! `perf_event_open`, `userfaultfd`, the kernel keyrings (`add_key`, `keyctl`,
//! `request_key`: under one user every call would share that user's keyring) and new
//! namespaces (`unshare`, `setns`, `clone` with a `CLONE_NEW*` flag: a user namespace gives
//! back a full set of capabilities inside it); `clone3` answers ENOSYS, as Docker's default
//! profile does, since its flags sit in memory a filter cannot read — the C library then
//! falls back to `clone`, whose flags it can. Sockets: `AF_UNIX` ones only where the policy
//! names Unix sockets (`socketpair` always works); with `network: none` no other family,
//! with a port policy only TCP (`SOCK_STREAM` on `AF_INET`/`AF_INET6`, whose ports Landlock
//! then filters). Built with `seccompiler`, once per kind, for the architecture toolsmith
//! was built for.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, sock_filter,
};

/// Which sockets a filter allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NetRule {
    pub family: Family,
    /// `socket(AF_UNIX, …)`: connecting to (or listening on) a named Unix socket.
    pub unix: bool,
}

/// The socket families besides `AF_UNIX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// Any.
    Any,
    /// None.
    None,
    /// TCP over IPv4 and IPv6.
    Tcp,
}

impl NetRule {
    /// Every rule, in the order of [`NetRule::index`].
    pub const ALL: [NetRule; 6] = [
        NetRule::new(Family::Any, true),
        NetRule::new(Family::Any, false),
        NetRule::new(Family::None, true),
        NetRule::new(Family::None, false),
        NetRule::new(Family::Tcp, true),
        NetRule::new(Family::Tcp, false),
    ];

    pub const fn new(family: Family, unix: bool) -> Self {
        Self { family, unix }
    }

    /// Its place in [`NetRule::ALL`].
    pub fn index(self) -> usize {
        let family = match self.family {
            Family::Any => 0,
            Family::None => 2,
            Family::Tcp => 4,
        };
        family + usize::from(!self.unix)
    }
}

const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_add_key,
    libc::SYS_keyctl,
    libc::SYS_request_key,
    libc::SYS_unshare,
    libc::SYS_setns,
];

/// The `clone` flags that make a new namespace.
const NAMESPACE_FLAGS: &[i32] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

fn arch() -> Result<seccompiler::TargetArch, String> {
    seccompiler::TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("seccomp: {e}"))
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// The filter for `net`, compiled to BPF: everything denied, and `net`'s socket rules.
pub(crate) fn program(net: NetRule) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|nr| (*nr, Vec::new())).collect();
    // `clone`'s flags are its first argument on x86_64 and aarch64.
    rules.insert(
        libc::SYS_clone,
        NAMESPACE_FLAGS
            .iter()
            .map(|f| rule(vec![cond(0, SeccompCmpOp::MaskedEq(*f as u64), *f as u64)?]))
            .collect::<Result<_, _>>()?,
    );
    if let Some(socket) = socket_rules(net)? {
        rules.insert(libc::SYS_socket, socket);
    }
    Ok(with_clone3_unimplemented(compile(rules)?))
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp: {e}"))
}

/// The rules `socket` is denied by under `net` (`None`: none).
fn socket_rules(net: NetRule) -> Result<Option<Vec<SeccompRule>>, String> {
    let (unix, inet, inet6) = (
        libc::AF_UNIX as u64,
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
    );
    let mut socket = Vec::new();
    if !net.unix {
        socket.push(rule(vec![cond(0, SeccompCmpOp::Eq, unix)?])?);
    }
    match net.family {
        Family::Any => {}
        Family::None => {
            socket.push(rule(vec![cond(0, SeccompCmpOp::Ne, unix)?])?);
        }
        Family::Tcp => {
            // Any family but these three.
            socket.push(rule(vec![
                cond(0, SeccompCmpOp::Ne, unix)?,
                cond(0, SeccompCmpOp::Ne, inet)?,
                cond(0, SeccompCmpOp::Ne, inet6)?,
            ])?);
            // IPv4 and IPv6 sockets of any type but a stream (UDP, raw, SCTP's packets).
            for family in [inet, inet6] {
                for kind in [
                    libc::SOCK_DGRAM,
                    libc::SOCK_RAW,
                    libc::SOCK_RDM,
                    libc::SOCK_SEQPACKET,
                    10, // SOCK_PACKET (obsolete, still a way to raw frames)
                ] {
                    socket.push(rule(vec![
                        cond(0, SeccompCmpOp::Eq, family)?,
                        cond(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?,
                    ])?);
                }
            }
        }
    }
    Ok((!socket.is_empty()).then_some(socket))
}

/// `program` with `clone3` answered ENOSYS before anything else: a filter holds one action
/// for what it matches (EPERM here), and `clone3` needs another — EPERM would stop the C
/// library's threads and `posix_spawn`, ENOSYS makes it use `clone`.
fn with_clone3_unimplemented(program: BpfProgram) -> BpfProgram {
    // BPF_LD | BPF_W | BPF_ABS, BPF_JMP | BPF_JEQ | BPF_K, BPF_RET | BPF_K.
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let ins = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    let mut out = vec![
        // seccomp_data.nr is at offset 0; the architecture is checked by what follows, and
        // ENOSYS is a safe answer on any of them.
        ins(LD_W_ABS, 0, 0, 0),
        ins(JEQ_K, 0, 1, libc::SYS_clone3 as u32),
        ins(RET_K, 0, 0, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ];
    out.extend(program);
    out
}

/// The program as the bytes of `struct sock_filter[]`, for the warm runtime's child to load.
pub(crate) fn bytes(program: &BpfProgram) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for ins in program {
        out.extend_from_slice(&ins.code.to_ne_bytes());
        out.push(ins.jt);
        out.push(ins.jf);
        out.extend_from_slice(&ins.k.to_ne_bytes());
    }
    out
}

/// Whether this kernel filters system calls (`PR_GET_SECCOMP` answers).
pub(crate) fn available() -> bool {
    rustix::thread::secure_computing_mode().is_ok()
}
