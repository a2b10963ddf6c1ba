//! The seccomp filters: what Landlock cannot say. Every sandboxed process is denied
//! `ptrace`, `process_vm_readv`/`writev`, `pidfd_getfd`, `io_uring_*`, `bpf`,
//! `perf_event_open` and `userfaultfd` (EPERM); with `network: none` every socket family but
//! `AF_UNIX`; with a port policy every socket but TCP (`SOCK_STREAM` on `AF_INET`/`AF_INET6`,
//! whose ports Landlock then filters) and `AF_UNIX`. Built with `seccompiler`, once per
//! network mode, for the architecture toolsmith was built for.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// Which socket rules a filter carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetRule {
    /// Any socket.
    Any,
    /// `AF_UNIX` only.
    UnixOnly,
    /// `AF_UNIX`, and TCP over IPv4 and IPv6.
    TcpAndUnix,
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

/// The filter for `net`, compiled to BPF.
pub(crate) fn program(net: NetRule) -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|nr| (*nr, Vec::new())).collect();
    let unix = libc::AF_UNIX as u64;
    match net {
        NetRule::Any => {}
        NetRule::UnixOnly => {
            rules.insert(
                libc::SYS_socket,
                vec![rule(vec![cond(0, SeccompCmpOp::Ne, unix)?])?],
            );
        }
        NetRule::TcpAndUnix => {
            let (inet, inet6) = (libc::AF_INET as u64, libc::AF_INET6 as u64);
            // Any family but these three.
            let mut socket = vec![rule(vec![
                cond(0, SeccompCmpOp::Ne, unix)?,
                cond(0, SeccompCmpOp::Ne, inet)?,
                cond(0, SeccompCmpOp::Ne, inet6)?,
            ])?];
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
            rules.insert(libc::SYS_socket, socket);
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    BpfProgram::try_from(filter).map_err(|e| format!("seccomp: {e}"))
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
